"""The peak DRAM bandwidth of the device this process uses, what a join's achieved bandwidth
is a fraction of (:mod:`dtri.kernels.traffic` models the join's bytes)."""

from __future__ import annotations

from typing import Any

import numpy as np

MEMORY_CLOCK_RATE = 36
"""``cudaDevAttrMemoryClockRate``: the peak memory clock, in kHz (CUDA 13 dropped the field
from ``cudaDeviceProp``; the attribute stays)."""
GLOBAL_MEMORY_BUS_WIDTH = 37
"""``cudaDevAttrGlobalMemoryBusWidth``: the memory bus, in bits."""


def peak_bandwidth(xp: Any) -> float | None:
    """The current device's peak DRAM bandwidth in bytes per second (twice the memory clock,
    double data rate, times the bus's bytes) for CuPy; ``None`` for NumPy or where the device
    does not say."""
    if xp is np:
        return None
    runtime = xp.cuda.runtime
    try:
        device = xp.cuda.Device().id
        clock_khz = runtime.deviceGetAttribute(MEMORY_CLOCK_RATE, device)
        bus_bits = runtime.deviceGetAttribute(GLOBAL_MEMORY_BUS_WIDTH, device)
    except runtime.CUDARuntimeError:
        return None
    return 2.0 * clock_khz * 1000 * bus_bits / 8 if clock_khz > 0 and bus_bits > 0 else None

"""The CUDA driver's start, on a thread of its own, as early as a run knows it may use a GPU.

CuPy's first call starts the driver (``cuInit``) holding Python's lock: 0.3 s on a 2 x H200
host, 0.7 to 1.0 s on a 4 x H200 host. A call through ctypes lets go of it, so the process
imports what its run needs meanwhile. This module imports nothing beyond the standard library,
so that the ``dtri`` command can start the driver before it imports the rest of dtri's API
(:mod:`dtri.cli`); :class:`dtri.Session` starts it for a run of the Python API.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import threading
from contextlib import suppress

GPU_MODULES = ("cudf", "dask_cudf", "cupy")
"""What the GPU backend imports: installed, or the GPU is not usable."""
CUDA_DRIVER_LIBRARY = "libcuda.so.1"
"""The CUDA driver's library, as NVIDIA's Linux driver installs it."""


def gpu_modules_installed() -> bool:
    """True when every one of :data:`GPU_MODULES` is installed (found, not imported)."""
    return all(importlib.util.find_spec(m) for m in GPU_MODULES)


@functools.cache
def start_cuda_driver() -> threading.Thread | None:
    """Start the CUDA driver (``cuInit``) on a thread of its own, once a process, where the
    GPU backend is installed, and return the thread: ``None`` where the backend is not
    installed. A script that will use the GPU may call it first, so that the driver starts
    while the script imports the rest (0.7 to 1.0 s on a 4 x H200 host); a
    :class:`dtri.Session` whose backend is not ``cpu`` calls it. The thread is not a daemon:
    the process ends after the driver's start, never during it. A driver that is missing
    or fails to start is left for CuPy to report when the run checks the GPU."""
    if not gpu_modules_installed():
        return None

    def start() -> None:
        with suppress(OSError, AttributeError):  # no driver: CuPy says so later
            ctypes.CDLL(CUDA_DRIVER_LIBRARY).cuInit(0)

    thread = threading.Thread(target=start, name="dtri-cuda-driver")
    thread.start()
    return thread

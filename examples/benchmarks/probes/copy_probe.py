"""Host<->device copy rates as dtri's host staging sees them; one JSON line per measurement.

Why it exists: under a GPU memory cap, stage results wait in host memory, and the capped RMAT 26
run spent its time in copies. This probe separates the costs: copying into fresh (never touched)
NumPy memory pays a page fault per 4 KiB page, pageable memory goes through CUDA's bounce
buffer, and page-locked memory runs at the link's rate. It also times the two ways of getting
page-locked memory (cudaHostAlloc versus first touch in threads + cudaHostRegister), which is
what ``dtri.runtime.gpu.RegisteredHostMemory`` is built on.

Run on the GPU host: ``python examples/benchmarks/probes/copy_probe.py > copy-probe.jsonl``. Each
line in the schema of ``schema.py`` (family ``copy-probe``: the measurement in ``detail``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import cupy
import cupyx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # schema.py, one folder up
from schema import command_line, emit, to_schema

from dtri.runtime.gpu import first_touch

GiB = 1 << 30
PIECE = 1 << 25  # int64 elements: 268 MB, the size of a large staged partition column


def report(measurement: str, seconds: float, nbytes: int, **extra: object) -> None:
    rate = round(nbytes / seconds / 1e9, 2)
    emit(to_schema("copy-probe", {"measurement": measurement, "seconds": round(seconds, 4),
                                  "bytes": nbytes, "GB_per_s": rate, **extra},
                   command=command_line()), None)


def timed(work: Callable[[], object], repeats: int = 4) -> float:
    """Mean seconds of ``work`` after one warm-up call, with the device synchronised."""
    work()
    cupy.cuda.runtime.deviceSynchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        work()
    cupy.cuda.runtime.deviceSynchronize()
    return (time.perf_counter() - start) / repeats


def copy_rates() -> None:
    device = cupy.arange(PIECE, dtype=cupy.int64)
    nbytes = device.nbytes
    touched = np.ones(PIECE, np.int64)
    pinned = cupyx.empty_pinned(PIECE, np.int64)
    pieces = [cupy.arange(PIECE // 32, dtype=cupy.int64) for _ in range(32)]
    cases: list[tuple[str, Callable[[], object]]] = [
        ("D2H into fresh numpy (.get())", lambda: device.get()),
        ("D2H into touched numpy (.get(out=))", lambda: device.get(out=touched)),
        ("D2H into page-locked", lambda: device.get(out=pinned)),
        ("D2H 32 pieces into fresh numpy", lambda: [piece.get() for piece in pieces]),
        ("H2D from touched pageable (cupy.asarray)", lambda: cupy.asarray(touched)),
        ("H2D from touched pageable (empty + set)",
         lambda: cupy.empty(touched.shape, touched.dtype).set(touched)),
        ("H2D from page-locked", lambda: cupy.asarray(pinned)),
        ("np.empty + fill (first-touch page faults)", lambda: np.empty(PIECE, np.int64).fill(1)),
    ]
    for measurement, work in cases:
        report(measurement, timed(work), nbytes)


def page_locking_costs() -> None:
    for size in (GiB, 4 * GiB):
        start = time.perf_counter()
        memory = cupy.cuda.PinnedMemory(size)
        report("cudaHostAlloc", time.perf_counter() - start, size)
        del memory
    size = 4 * GiB
    device = cupy.empty(size // 8, cupy.int64)
    for threads in (1, 4, 8, 16):
        host = np.empty(size, np.uint8)
        start = time.perf_counter()
        first_touch(host, threads)
        report("first touch", time.perf_counter() - start, size, threads=threads)
        start = time.perf_counter()
        cupy.cuda.runtime.hostRegister(host.ctypes.data, size, 0)
        report("cudaHostRegister (touched)", time.perf_counter() - start, size, threads=threads)
        start = time.perf_counter()
        device.get(out=host.view(np.int64))
        cupy.cuda.runtime.deviceSynchronize()
        report("D2H into registered", time.perf_counter() - start, size, threads=threads)
        cupy.cuda.runtime.hostUnregister(host.ctypes.data)
        del host


if __name__ == "__main__":
    copy_rates()
    page_locking_costs()

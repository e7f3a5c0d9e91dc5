"""cuDF/CuPy implementations of :mod:`dtri.dispatch`; imported lazily, only where a GPU is used."""

from __future__ import annotations

from typing import Any

import cudf
import cupy
import dask_cudf.backends  # noqa: F401  (cuDF's sizeof for Dask: see below)

# Dask weighs stored results with ``dask.sizeof``, whose cuDF implementation lives in
# dask_cudf.backends. A worker that only runs dtri's tasks never imports it, so a stored cuDF
# frame weighed 48 B (its Python object) and dask-cuda's device memory limit never spilled
# anything: :mod:`dtri.dispatch` registers this module lazily for cuDF's sizeof.
from dtri.dispatch import array_module, column_to_array, frame_from_arrays, to_host


@array_module.register(cupy.ndarray)
def _cupy_module(array: cupy.ndarray) -> Any:
    return cupy


@to_host.register(cupy.ndarray)
def _cupy_to_host(array: cupy.ndarray) -> Any:
    return cupy.asnumpy(array)


@column_to_array.register(cudf.Series)
def _cudf_column(series: cudf.Series) -> cupy.ndarray:
    return series.values


@frame_from_arrays.register((cudf.DataFrame, cupy.ndarray))
def _cudf_frame(like: cudf.DataFrame | cupy.ndarray, columns: dict[str, Any]) -> cudf.DataFrame:
    return cudf.DataFrame(columns)


def device_memory_bytes() -> int:
    """Total memory of the current GPU, for the default memory budget."""
    _free, total = cupy.cuda.runtime.memGetInfo()
    return int(total)


# ---------------------------------------------------------------- peak memory (RMM statistics)

_counter_levels = 0
"""RMM statistics counter levels this process pushed (:func:`reset_device_peak`)."""
_bytes_before = 0
"""Bytes allocated through RMM when the current level was pushed."""


def _statistic(stats: Any, name: str) -> int:
    """A field of RMM's ``Statistics`` (a dataclass; a dict in older RMM)."""
    return int(stats[name] if isinstance(stats, dict) else getattr(stats, name))


def _allocations_through_rmm() -> bool:
    """True when CuPy allocates through RMM as cuDF does (dask-cuda's
    ``rmm_allocator_external_lib_list=["cupy"]``), so RMM sees all of dtri's GPU memory."""
    try:
        from rmm.allocators.cupy import rmm_cupy_allocator
    except ImportError:
        return False
    return cupy.cuda.get_allocator() is rmm_cupy_allocator


def reset_device_peak() -> str | None:
    """Start measuring this process's peak GPU memory afresh; ``"rmm"`` when
    :func:`device_peak_bytes` will be exact, ``None`` when RMM cannot see every allocation.

    RMM's ``StatisticsResourceAdaptor`` is put on top of the current resource (the pool) and a
    fresh level of counters pushed; allocations made before count in ``_bytes_before``."""
    global _counter_levels, _bytes_before
    if not _allocations_through_rmm():
        return None
    import rmm.statistics

    rmm.statistics.enable_statistics()  # idempotent: wraps the current resource once
    for _ in range(_counter_levels):
        rmm.statistics.pop_statistics()
    outer = rmm.statistics.push_statistics()
    if outer is None:
        _counter_levels = 0
        return None
    _counter_levels, _bytes_before = 1, _statistic(outer, "current_bytes")
    return "rmm"


def device_peak_bytes() -> int | None:
    """Peak bytes allocated through RMM since :func:`reset_device_peak` (``None`` if it did
    not start a count, or another resource replaced the statistics adaptor since)."""
    if not _counter_levels:
        return None
    import rmm.statistics

    stats = rmm.statistics.get_statistics()
    return None if stats is None else _bytes_before + _statistic(stats, "peak_bytes")

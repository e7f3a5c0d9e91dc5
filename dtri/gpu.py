"""cuDF/CuPy implementations of :mod:`dtri.dispatch`; imported lazily, only where a GPU is used."""

from __future__ import annotations

from typing import Any

import cudf
import cupy
import dask_cudf.backends  # noqa: F401  (cuDF's sizeof for Dask: see below)
import pandas as pd

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


def device_frame(frame: Any) -> cudf.DataFrame:
    """A pandas frame's columns as a cuDF frame (the index is not kept: dtri's tasks read
    columns only)."""
    return cudf.DataFrame({name: cupy.asarray(frame[name].to_numpy()) for name in frame.columns})


def host_copy(frame: cudf.DataFrame) -> pd.DataFrame:
    """A cuDF frame of numeric columns as a pandas frame, one device-to-host copy per column
    (cuDF's ``to_pandas`` goes through Arrow: 0.3 s for a 16 Mi-edge partition on an H200)."""
    return pd.DataFrame({name: frame[name].values.get() for name in frame.columns})


def host_ids(frame: cudf.DataFrame) -> pd.DataFrame:
    """An input partition's ``src``, ``dst`` in host memory, as int32 when every id fits
    (half the bytes to move and keep; the ids are the same numbers, and the pipeline reads
    them as int64: :func:`dtri.canonicalize.id_columns`)."""
    columns = {name: frame[name].values for name in ("src", "dst")}
    if all(c.dtype.kind in "iu" and c.dtype.itemsize > 4 for c in columns.values()) and all(
            c.shape[0] == 0 or (int(c.min()) >= 0 and int(c.max()) < 2**31)
            for c in columns.values()):
        columns = {name: c.astype(cupy.int32) for name, c in columns.items()}
    return pd.DataFrame({name: c.get() for name, c in columns.items()})


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

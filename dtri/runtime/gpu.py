"""GPU memory of the runtime: copies between host and device, page-locked host memory for host
staging, and RMM's peak-memory statistics. Imported only where a GPU is used."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import cupy
import numpy as np

from dtri.options import RMM_ALIGNMENT

if TYPE_CHECKING:  # imported where frames are made: an in-process count of arrays needs neither
    import cudf
    import pandas as pd

HostEmpty = Callable[[tuple[int, ...] | int, Any], np.ndarray]
"""An allocator of uninitialized host arrays (the worker's staging arena, or ``numpy.empty``)."""


def device_array(array: np.ndarray) -> cupy.ndarray:
    """A host array's copy on the device, by one ``cudaMemcpy`` from where it lies: at the
    bus's speed from page-locked memory (:class:`dtri.runtime.staging.HostArena`).
    (``cupy.asarray``
    first copies a pageable array into a page-locked buffer of CuPy's pool, which keeps a
    buffer of every size it met: 3.6 GB/s against 6.2 GB/s for the direct copy.)"""
    array = np.ascontiguousarray(array)
    copy = cupy.empty(array.shape, array.dtype)
    if array.size:
        copy.set(array)
    return copy


def column_array(column: Any, types: Mapping[str, np.dtype]) -> cupy.ndarray:
    """A pylibcudf column as a CuPy array over its memory (no copy), of the NumPy type that
    ``types`` gives the name of its type (``INT32``, ``BOOL8``, ..). Raises ``ValueError``
    for a type not in ``types`` and for a column with nulls."""
    kind, nulls = column.type().id().name, column.null_count()
    dtype = types.get(kind)
    if dtype is None or nulls:
        raise ValueError(f"a column of {kind} with {nulls} nulls, where one of "
                         f"{', '.join(types)} without nulls was expected")
    rows, first = column.size(), column.offset()
    if rows == 0:
        return cupy.zeros(0, dtype=dtype)
    return cupy.asarray(column.data()).view(cupy.uint8).view(dtype)[first: first + rows]


def host_array(array: cupy.ndarray, empty: HostEmpty = np.empty) -> np.ndarray:
    """A device array's copy in host memory allocated by ``empty`` (the worker's staging
    arena: :meth:`dtri.runtime.staging.StagingState.host_empty`)."""
    array = cupy.ascontiguousarray(array)
    copy = empty(array.shape, array.dtype)
    if array.size:
        array.get(out=copy)
    return copy


def device_frame(frame: Any) -> cudf.DataFrame:
    """A pandas frame's columns as a cuDF frame (the index is not kept: dtri's tasks read
    columns only)."""
    import cudf

    return cudf.DataFrame({name: device_array(frame[name].to_numpy()) for name in frame.columns})


def host_copy(frame: cudf.DataFrame, empty: HostEmpty = np.empty) -> pd.DataFrame:
    """A cuDF frame of numeric columns as a pandas frame, one device-to-host copy per column
    (cuDF's ``to_pandas`` goes through Arrow: 0.3 s for a 16 Mi-edge partition on an H200),
    the columns kept as they are (pandas copies a dict's arrays by default)."""
    import pandas as pd

    return pd.DataFrame({name: host_array(frame[name].values, empty)
                         for name in frame.columns}, copy=False)


def host_ids(frame: cudf.DataFrame, empty: HostEmpty = np.empty) -> pd.DataFrame:
    """An input partition's ``src``, ``dst`` in host memory, as int32 when every id fits
    (half the bytes to move and keep; the ids are the same numbers, and the pipeline reads
    them as int64: :func:`dtri.kernels.canonicalize.id_columns`)."""
    columns = {name: frame[name].values for name in ("src", "dst")}
    if all(c.dtype.kind in "iu" and c.dtype.itemsize > 4 for c in columns.values()) and all(
            c.shape[0] == 0 or (int(c.min()) >= 0 and int(c.max()) < 2**31)
            for c in columns.values()):
        columns = {name: c.astype(cupy.int32) for name, c in columns.items()}
    import pandas as pd

    return pd.DataFrame({name: host_array(c, empty) for name, c in columns.items()},
                        copy=False)


# ------------------------------------------------- page-locked host memory for host staging

def first_touch(memory: np.ndarray, threads: int) -> np.ndarray:
    """``memory`` zeroed by ``threads`` threads, slice by slice: the kernel maps (and zeroes)
    a fresh page on its first write, at 4.7 GB/s for one thread on an H200 host."""
    step = -(-memory.shape[0] // max(1, threads))
    with ThreadPoolExecutor(max(1, threads)) as pool:
        list(pool.map(lambda start: np.copyto(memory[start:start + step], 0),
                      range(0, memory.shape[0], step)))
    return memory


class RegisteredHostMemory:
    """Page-locked host memory, up to ``limit`` bytes, for RMM's pool to carve
    (:class:`PinnedPool`): NumPy memory first touched by several threads, then registered
    with CUDA: 4 GiB in 0.25 s with 16 threads on an H200 host, where ``cudaHostAlloc`` took
    0.54 s per GiB (``copy-probe-h200.jsonl``)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.nbytes = 0
        self._owners: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()
        self._threads = max(1, min(16, len(os.sched_getaffinity(0))))

    def allocate(self, nbytes: int, stream: Any = None) -> int:
        """The address of ``nbytes`` of page-locked memory; ``MemoryError`` beyond the limit,
        and from then on once memory could not be had or registered (a host or container
        that refuses to lock more), so that the arena falls back to pageable arrays at once
        instead of touching memory it cannot register."""
        with self._lock:
            if self.nbytes + nbytes > self.limit:
                raise MemoryError(f"page-locked staging memory is at its limit of {self.limit} B")
            self.nbytes += nbytes
        try:
            owner = first_touch(np.empty(nbytes, np.uint8), self._threads)
            cupy.cuda.runtime.hostRegister(owner.ctypes.data, nbytes, 0)
        except (MemoryError, cupy.cuda.runtime.CUDARuntimeError) as error:
            with self._lock:
                self.nbytes -= nbytes
                self.limit = self.nbytes  # no further tries
            raise MemoryError(f"cannot page-lock {nbytes} B of host memory: {error}") from None
        with self._lock:
            self._owners[owner.ctypes.data] = owner
        return owner.ctypes.data

    def deallocate(self, address: int, nbytes: int, stream: Any = None) -> None:
        cupy.cuda.runtime.hostUnregister(address)
        with self._lock:
            del self._owners[address]
            self.nbytes -= nbytes


PINNED_POOL_START = 1 << 28
"""The page-locked pool's first size; RMM's pool doubles it as it needs (within its limit)."""


class PinnedPool:
    """RMM's coalescing pool over page-locked host memory (:class:`RegisteredHostMemory`) of
    at most ``limit`` bytes: the resource of :class:`dtri.runtime.staging.HostArena` on GPU
    workers.
    RMM's pool has no maximum of its own (it would grow by half of what is left at once).
    RMM's limiting adaptor over it refuses a request beyond the limit with ``MemoryError``
    without asking the pool, which would log each refusal on stderr."""

    def __init__(self, limit: int):
        import rmm.mr

        self.host_memory = RegisteredHostMemory(limit)
        upstream = rmm.mr.CallbackMemoryResource(self.host_memory.allocate,
                                                 self.host_memory.deallocate)
        start = min(PINNED_POOL_START, limit) // RMM_ALIGNMENT * RMM_ALIGNMENT
        pool = rmm.mr.PoolMemoryResource(upstream, initial_pool_size=start)
        self._resource = rmm.mr.LimitingResourceAdaptor(pool, allocation_limit=limit)

    def allocate(self, nbytes: int) -> int:
        """The address of ``nbytes`` from the pool; ``MemoryError`` where the pool cannot
        hold them."""
        return int(self._resource.allocate(nbytes))

    def deallocate(self, address: int, nbytes: int) -> None:
        self._resource.deallocate(address, nbytes)


def device_memory_bytes() -> int:
    """Total memory of the current GPU, for the default memory budget."""
    _free, total = cupy.cuda.runtime.memGetInfo()
    return int(total)


# ---------------------------------------------------------------- peak memory (RMM statistics)

def allocations_through_rmm() -> bool:
    """True when CuPy allocates through RMM as cuDF does (dask-cuda's
    ``rmm_allocator_external_lib_list=["cupy"]``), so that RMM's statistics see all of dtri's
    GPU memory (:class:`dtri.runtime.meter.RmmProbe`). A process that has not imported RMM
    cannot have given CuPy its allocator (and an in-process run does not import it to ask)."""
    if "rmm" not in sys.modules:
        return False
    try:
        from rmm.allocators.cupy import rmm_cupy_allocator
    except ImportError:
        return False
    return cupy.cuda.get_allocator() is rmm_cupy_allocator

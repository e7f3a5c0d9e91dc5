"""Host staging: stage results live in host memory; each task moves only its own inputs to the
GPU, computes there and moves its results back.

Under a capped GPU (``--rmm-pool-size``) the graph no longer fits: RMAT 26's 1.07 G generated
edges are 17 GB as int64 pairs against an 8 GiB pool. Left on the device, every stage's
results spill through dask-cuda one stored key at a time and come back the same way, least
recently used first, which cost 10x the in-core time (``examples/results/``). Staged, the data
at rest is NumPy/pandas in the workers' host memory (spilled to disk by Dask, beyond
``--memory-limit``), and a task's GPU memory is its inputs, its working arrays and its
outputs: what ``--memory-budget`` bounds. Each byte crosses the bus once into a task and once
out of it.

Those crossings run at the speed of the host memory they land in. Into freshly allocated
(pageable) NumPy arrays a device-to-host copy ran at 2.8 GB/s on an H200 host, bound by the
kernel's page faults, and CuPy's host-to-device copy from pageable memory at 3.6 GB/s; into
and out of page-locked memory both ran at 55 GB/s (``examples/results/copy-probe-h200.jsonl``).
So on GPU workers the results land in a :class:`HostArena`: arrays carved from a pool of
page-locked memory that is reused from task to task and stage to stage.

:func:`task` wraps a task's function in :class:`OnDevice` while :func:`staged` is active
(pipeline order: the pipeline turns it on around the stages it builds), except for the
functions in :data:`HOST_FUNCTIONS`, which only look at or pick from their inputs. Arrays
that many tasks of a worker read (the vertex ids, the ranks, the out-degrees) are kept on the
device between tasks in a small cache (:class:`DeviceCache`) from the second time a task
receives the same stored object.

On the CPU backend the moves are identities, so the staged task graph runs (and is tested) on
a machine with no GPU.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from operator import getitem
from typing import Any

import numpy as np
import pandas as pd

STAGINGS = ("auto", "host", "device")
"""Where stage results live between tasks: ``device`` (GPU memory, spilled by dask-cuda when
capped), ``host`` (host memory, moved to the GPU task by task) or ``auto`` (``host`` when the
GPU workers' memory is capped by an RMM pool that cannot grow, ``device`` otherwise)."""

CACHE_SHARE_OF_BUDGET = 4
"""The device cache of a worker holds at most a quarter of a task's memory budget."""

CACHED_MIN_BYTES = 1 << 20
"""Smaller inputs are copied each time: the cache is for vertex-wide arrays."""

_backend: ContextVar[str | None] = ContextVar("dtri_staging_backend", default=None)


@contextmanager
def staged(backend: str | None) -> Iterator[None]:
    """Wrap the functions of the tasks built inside in :class:`OnDevice` (``backend`` names
    the device side: ``"gpu"``, or ``"cpu"`` where the moves are identities); ``None`` wraps
    nothing."""
    token = _backend.set(backend)
    try:
        yield
    finally:
        _backend.reset(token)


def staging_backend() -> str | None:
    """The device side of the tasks being built (:func:`staged`), ``None`` when not staged."""
    return _backend.get()


HOST_FUNCTIONS: set[Callable[..., Any]] = {getitem}
"""Task functions that run on the host as they are under staging: they pick from or measure
their inputs, so moving those to the GPU would only cost a copy each way. Modules add theirs
with :func:`runs_on_host`."""


def runs_on_host(func: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a task function as one that runs on host data as it is (see :data:`HOST_FUNCTIONS`);
    also for functions that move their own data to the device piece by piece."""
    HOST_FUNCTIONS.add(func)
    return func


def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` as a task built now runs it: in :class:`OnDevice` while staging is on."""
    backend = staging_backend()
    if backend is None or func in HOST_FUNCTIONS:
        return func
    return OnDevice(func, backend)


class OnDevice:
    """A task function that receives host data, runs on the device and returns host data.

    Arrays and DataFrames (also inside tuples, lists and dicts) go to the device before the
    call and come back after it; anything else (ints, ``None``, strings) passes as it is."""

    __slots__ = ("backend", "func")

    def __init__(self, func: Callable[..., Any], backend: str):
        self.func = func
        self.backend = backend

    def __call__(self, *args: Any) -> Any:
        if self.backend != "gpu":
            return self.func(*args)
        return to_host(self.func(*(to_device(arg) for arg in args)))

    def __reduce__(self) -> tuple:
        return OnDevice, (self.func, self.backend)

    def __dask_tokenize__(self) -> tuple:
        from dask.base import tokenize

        return ("dtri-on-device", tokenize(self.func), self.backend)

    def __repr__(self) -> str:
        return f"OnDevice({getattr(self.func, '__name__', self.func)!r})"

    @property
    def __name__(self) -> str:  # Dask labels tasks by their function's name
        return getattr(self.func, "__name__", "on_device")


def to_device(value: Any) -> Any:
    """``value`` with its NumPy arrays as CuPy arrays and its pandas frames as cuDF frames
    (device objects and other values unchanged); a repeated large array comes from the
    worker's :class:`DeviceCache`."""
    if isinstance(value, np.ndarray):
        return _device_cache().get(value)
    if isinstance(value, pd.DataFrame):
        from dtri.runtime.gpu import device_frame

        return device_frame(value)
    return _rebuilt(value, to_device)


def to_host(value: Any) -> Any:
    """``value`` with its CuPy arrays as NumPy arrays and its cuDF frames as pandas frames."""
    module = type(value).__module__.split(".")[0]
    if module == "cupy":
        from dtri.runtime.gpu import host_array

        return host_array(value)
    if module == "cudf":
        from dtri.runtime.gpu import host_copy

        return host_copy(value)
    return _rebuilt(value, to_host)


def _rebuilt(value: Any, move: Callable[[Any], Any]) -> Any:
    """A tuple (NamedTuples too), list or dict with ``move`` applied to its items; any other
    value as it is."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
        return type(value)(*(move(item) for item in value))
    if isinstance(value, tuple | list):
        return type(value)(move(item) for item in value)
    if isinstance(value, dict):
        return {key: move(item) for key, item in value.items()}
    return value


class DeviceCache:
    """Device copies of host arrays that this worker's tasks receive more than once.

    A stored result reaches every task that reads it as the same Python object, so an array
    is known by its ``id`` while it lives (a weak reference drops the copy when Dask releases
    the array). The first time an array is seen it is only remembered; from the second on, its
    copy stays on the device, least recently used first out, within ``limit`` bytes."""

    def __init__(self, limit: int):
        self.limit = limit
        self._seen: dict[int, weakref.ref] = {}
        self._copies: OrderedDict[int, Any] = OrderedDict()
        self._bytes = 0
        self._lock = threading.RLock()  # a weak reference's callback may run inside it

    def get(self, array: np.ndarray) -> Any:
        from dtri.runtime.gpu import device_array

        if array.nbytes < CACHED_MIN_BYTES or array.nbytes > self.limit:
            return device_array(array)
        key = id(array)
        with self._lock:
            ref = self._seen.get(key)
            if ref is None or ref() is not array:  # first sight (or a new object, same id)
                self._forget(key)
                self._seen[key] = weakref.ref(array, lambda _, key=key: self.drop(key))
                return device_array(array)
            if key in self._copies:
                self._copies.move_to_end(key)
                return self._copies[key]
            copy = device_array(array)
            self._copies[key] = copy
            self._bytes += copy.nbytes
            self._evict()  # never the new copy: it fits the limit alone
            return copy

    def drop(self, key: int) -> None:
        """Forget an array that Dask has released."""
        with self._lock:
            self._forget(key)

    def resize(self, limit: int) -> None:
        """A new limit, the least recently used copies dropped to fit it."""
        with self._lock:
            self.limit = max(0, int(limit))
            self._evict()

    def clear(self) -> None:
        """Free every copy and forget every array."""
        with self._lock:
            self._seen.clear()
            self._copies.clear()
            self._bytes = 0

    def _evict(self) -> None:
        while self._bytes > self.limit and self._copies:
            _, old = self._copies.popitem(last=False)
            self._bytes -= old.nbytes

    def _forget(self, key: int) -> None:
        self._seen.pop(key, None)
        copy = self._copies.pop(key, None)
        if copy is not None:
            self._bytes -= copy.nbytes

    @property
    def nbytes(self) -> int:
        return self._bytes


_cache: DeviceCache | None = None
"""This process's device cache (a worker's: tasks run in the worker process)."""

DEFAULT_CACHE_BYTES = 1 << 30
"""The cache's limit until :func:`start_staging` gives the run's."""


def _device_cache() -> DeviceCache:
    global _cache
    if _cache is None:
        _cache = DeviceCache(DEFAULT_CACHE_BYTES)
    return _cache


ARENA_MIN_BYTES = 1 << 20
"""Smaller host arrays are plain NumPy: their copies cost little either way."""


class HostArena:
    """Host arrays carved from a pool of page-locked memory, given back when the last view of
    an array is gone.

    ``resource`` hands out and takes back raw memory (``allocate(nbytes) -> address``,
    ``deallocate(address, nbytes)``; on GPU workers RMM's pool over page-locked memory:
    :class:`dtri.runtime.gpu.PinnedPool`); once it cannot (its limit, a ``MemoryError``), arrays are
    plain NumPy, which is slower to copy into but the same data. An array's memory is lent to
    a small *lease* object that exposes it through ``__array_interface__``: NumPy keeps the
    lease as the base of the array and of every view of it, and the memory goes back to the
    resource when the lease is collected, not before."""

    def __init__(self, resource: Any):
        self.resource = resource

    def empty(self, shape: tuple[int, ...] | int, dtype: Any) -> np.ndarray:
        """An uninitialized C-ordered array, from the arena where it is large enough."""
        dtype = np.dtype(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes < ARENA_MIN_BYTES:
            return np.empty(shape, dtype)
        try:
            address = int(self.resource.allocate(nbytes))
        except MemoryError:  # the pool is at its limit: pageable memory instead
            return np.empty(shape, dtype)
        lease = _Lease(address, shape, dtype)
        weakref.finalize(lease, self.resource.deallocate, address, nbytes).atexit = False
        return np.asarray(lease)


class _Lease:
    """Memory lent to one array (see :class:`HostArena`)."""

    __slots__ = ("__array_interface__", "__weakref__")

    def __init__(self, address: int, shape: tuple[int, ...], dtype: np.dtype):
        self.__array_interface__ = {"data": (address, False), "shape": shape,
                                    "typestr": dtype.str, "version": 3}


_arena: HostArena | None = None
"""This process's arena for staged results (GPU workers during a staged count), or none."""

PINNED_SHARE_OF_HOST_MEMORY = 0.4
"""The page-locked pool of a worker holds at most this share of its host memory limit. Dask
moves stored results to disk above 60 % of the limit (``target``) and 70 % of the process's
memory (``spill``); the pool's free memory counts in the process's memory but no spilling can
free it, so it stays well below both."""


def host_empty(shape: tuple[int, ...] | int, dtype: Any) -> np.ndarray:
    """An uninitialized host array for a result coming off the device: from this process's
    :class:`HostArena` while a staged count runs, plain NumPy otherwise."""
    if _arena is None:
        return np.empty(shape, dtype)
    return _arena.empty(shape, dtype)


def host_memory_limit() -> int:
    """This worker's host memory limit (Dask's), or the machine's memory outside a worker."""
    try:
        from distributed import get_worker

        limit = get_worker().memory_manager.memory_limit
    except (ImportError, ValueError, AttributeError):
        limit = None
    if not limit:
        import psutil

        limit = psutil.virtual_memory().total
    return int(limit)


def start_staging(cache_limit: int, pinned: bool) -> None:
    """Set this process up for a staged count (run on each worker, or here under a local
    scheduler): the device cache's limit (a quarter of a task's budget) and, with ``pinned``,
    an arena of page-locked host memory of up to :data:`PINNED_SHARE_OF_HOST_MEMORY` of the
    host memory limit."""
    global _arena
    _device_cache().resize(cache_limit)
    if pinned:
        from dtri.runtime.gpu import PinnedPool

        try:
            pool = PinnedPool(int(host_memory_limit() * PINNED_SHARE_OF_HOST_MEMORY))
        except MemoryError:  # no page-locked memory to be had here: results stay pageable
            pool = None
        _arena = HostArena(pool) if pool is not None else None


def end_staging() -> None:
    """Free every device copy and let go of the arena (its memory goes back to the system
    once the last array from it is gone)."""
    global _arena
    _arena = None
    if _cache is not None:
        _cache.clear()


def host_frame(frame: Any) -> Any:
    """A partition of the input in host memory (cuDF → pandas, ids as int32 where they all
    fit: :func:`dtri.runtime.gpu.host_ids`; pandas as it is)."""
    if type(frame).__module__.split(".")[0] != "cudf":
        return frame
    from dtri.runtime.gpu import host_ids

    return host_ids(frame)


def folded(backend: str, combine: Callable[[Any, Any], Any], func: Callable[..., Any],
           args: tuple, *items: Any) -> Any:
    """``combine`` over ``func(item, *args)`` for every item, on the device one item at a time
    (``backend`` ``"gpu"``; on ``"cpu"`` as it is): one task folds the partitions a worker
    holds into one vertex-wide array, instead of one such array per partition crossing the
    bus twice (RMAT 26: 64 degree arrays of 0.5 GB)."""
    device = backend == "gpu"
    args = tuple(to_device(arg) for arg in args) if device else args
    total = None
    for item in items:
        value = func(to_device(item) if device else item, *args)
        total = value if total is None else combine(total, value)
    return to_host(total) if device else total


runs_on_host(folded)

"""Host staging: stage results live in host memory; each task moves only its own inputs to the
GPU, computes there and moves its results back, so a task's GPU memory is what
``--memory-budget`` bounds under a capped GPU (``docs/cli.md``, "Host staging", tells why and
what it costs). On GPU workers the results land in a :class:`HostArena`: arrays carved from a
reused pool of page-locked memory, which copies ran to and from at 55 GB/s on an H200 host,
against 2.8-3.6 GB/s with pageable memory (``copy-probe-h200.jsonl``).

:class:`Staging` is the one strategy object for both places: the task builder
(:class:`dtri.runtime.tasks.Tasks`) wraps task functions through it (:class:`OnDevice` under
host staging), and tasks that move their own data call :meth:`Staging.to_device` and
:meth:`Staging.to_host`. Arrays that many tasks of a worker read (the ranks, say) stay on the
device in a small cache (:class:`DeviceCache`); the cache and the arena are the worker's state
(:class:`StagingState`), owned by :class:`dtri.runtime.plugin.StagingPlugin`.

On the CPU backend the moves are identities, so the staged task graph runs (and is tested) on
a machine with no GPU.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np

from dtri.kernels.wire import unpack
from dtri.options import STAGINGS, Backend

CACHED_MIN_BYTES = 1 << 20
"""Smaller inputs are copied each time: the cache is for vertex-wide arrays."""


@dataclass(frozen=True)
class Staging:
    """Where stage results wait between tasks (``where``: ``host`` or ``device``) for tasks
    that run on ``backend`` (``cpu`` or ``gpu``): a run's is made from its runtime's backend
    (:attr:`dtri.runtime.opened.Runtime.staging`). Small and picklable: tasks that move their
    own data receive it as an argument."""

    where: str = "device"
    backend: Backend = Backend.CPU

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", Backend(self.backend))

    @property
    def on_host(self) -> bool:
        """Results wait in host memory (NumPy/pandas) between tasks."""
        return self.where == "host"

    @property
    def in_gpu_memory(self) -> bool:
        """Results wait in GPU memory (device staging on GPU workers)."""
        return not self.on_host and self.backend.on_gpu

    @property
    def moves(self) -> bool:
        """Each task moves its inputs to the GPU and its results back."""
        return self.on_host and self.backend.on_gpu

    @property
    def folds_per_worker(self) -> bool:
        """Vertex-wide sums (degrees, vertex sets, credits) fold per worker, one partition at
        a time on the device: on GPU workers, rather than one vertex-wide array per partition
        crossing the bus twice (host staging) or to the tree's task on another worker."""
        return self.on_host or self.in_gpu_memory

    def wrap(self, func: Callable[..., Any], on_host: bool = False,
             moves_own_data: bool = False) -> Callable[..., Any]:
        """``func`` as a task runs it: on the device with host data in and out
        (:class:`OnDevice`) when results wait in host memory, unless ``on_host`` (a task
        that only looks at or picks from its inputs, or moves its own data). One that moves
        its own data (it takes the staging) runs as :class:`HostFallback` on GPU workers, so
        that where it runs out of device memory it goes on on the host."""
        if not self.on_host:
            return func
        if not on_host:
            return OnDevice(func, self.backend)
        return HostFallback(func) if self.moves and moves_own_data else func

    def on_cpu(self) -> Staging:
        """The same staging for tasks that compute on the host: its moves are identities."""
        return Staging(self.where, Backend.CPU)

    def to_device(self, value: Any) -> Any:
        """``value`` where the task computes: moved to the GPU under host staging on GPU
        workers (vertex-wide arrays through the worker's :class:`DeviceCache`), as it is
        otherwise."""
        return to_device(value) if self.moves else value

    def to_host(self, value: Any) -> Any:
        """A task's result where results wait: moved to host memory under host staging on
        GPU workers (into the worker's page-locked arena), as it is otherwise."""
        return to_host(value) if self.moves else value

    def input_partition(self, frame: Any) -> Any:
        """An input partition where results wait (in host memory: cuDF to pandas, ids as int32
        where they all fit)."""
        return host_frame(frame) if self.on_host else frame


def resolve_staging(requested: str, backend: Backend | str, capped: bool) -> Staging:
    """The :class:`Staging` of a run: ``auto`` stages on the host when the GPU workers'
    memory is capped by an RMM pool that cannot grow (``--rmm-pool-size``, or
    ``dask cuda worker --rmm-maximum-pool-size``), since the graph then may not fit."""
    if requested not in STAGINGS:
        raise ValueError(f"staging must be one of {STAGINGS}, got {requested!r}")
    if requested == "auto":
        requested = "host" if Backend(backend).on_gpu and capped else "device"
    return Staging(requested, Backend(backend))


class OnDevice:
    """A task function that receives host data, runs on the device and returns host data.

    Arrays and DataFrames (also inside tuples, lists and dicts) go to the device before the
    call and come back after it; anything else (ints, ``None``, strings) passes as it is. On
    the CPU backend the call is direct."""

    __slots__ = ("backend", "func")

    def __init__(self, func: Callable[..., Any], backend: Backend):
        self.func = func
        self.backend = Backend(backend)

    def __call__(self, *args: Any) -> Any:
        return device_or_host(self.func, args) if self.backend.on_gpu else self.func(*args)

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


class HostFallback:
    """A task function that moves its own data (it takes the run's :class:`Staging`): where
    it runs out of device memory, it runs again with the staging's host twin
    (:meth:`Staging.on_cpu`), every move an identity, on the CPU kernels."""

    __slots__ = ("func",)

    def __init__(self, func: Callable[..., Any]):
        self.func = func

    def __call__(self, *args: Any) -> Any:
        with suppress(MemoryError):  # the failed attempt's device arrays go with its frames
            return self.func(*args)
        worker_state().cache.clear()
        note_host_fallback()
        return self.func(*(arg.on_cpu() if isinstance(arg, Staging) else arg for arg in args))

    def __reduce__(self) -> tuple:
        return HostFallback, (self.func,)

    def __dask_tokenize__(self) -> tuple:
        from dask.base import tokenize

        return ("dtri-host-fallback", tokenize(self.func))

    def __repr__(self) -> str:
        return f"HostFallback({getattr(self.func, '__name__', self.func)!r})"

    @property
    def __name__(self) -> str:
        return getattr(self.func, "__name__", "host_fallback")


def device_or_host(func: Callable[..., Any], args: tuple) -> Any:
    """``func`` of host ``args`` on the device, its result back in host memory; where the
    device runs out of memory, once more after the worker's device cache is emptied, and
    then on the host: the same function on the host arrays (the CPU kernels), slower but
    within the host's memory. The stage meter counts each task that ran on the host."""
    state = worker_state()
    for attempt in range(2):
        try:
            return to_host(func(*(to_device(arg) for arg in args)))
        except MemoryError:
            if attempt or not state.cache.nbytes:
                break
            state.cache.clear()
    note_host_fallback()
    return func(*args)


def note_host_fallback() -> None:
    """Tell the worker's stage meter that its running task went on on the host."""
    from dtri.runtime.meter import note_fallback

    note_fallback()


def to_device(value: Any) -> Any:
    """``value`` with its NumPy arrays as CuPy arrays and its pandas frames as cuDF frames
    (device objects and other values unchanged); a repeated large array comes from the
    worker's :class:`DeviceCache`."""
    if isinstance(value, np.ndarray):
        return worker_state().cache.get(value)
    pandas = sys.modules.get("pandas")  # a pandas frame needs pandas imported already
    if pandas is not None and isinstance(value, pandas.DataFrame):
        from dtri.runtime.gpu import device_frame

        return device_frame(value)
    return _rebuilt(value, to_device)


def to_host(value: Any) -> Any:
    """``value`` with its CuPy arrays as NumPy arrays (in the worker's arena) and its cuDF
    frames as pandas frames."""
    from dtri.kernels.dispatch import is_device_object

    if not is_device_object(value):
        return _rebuilt(value, to_host)
    from dtri.runtime.gpu import host_array, host_copy

    if hasattr(value, "columns"):
        return host_copy(value, worker_state().host_empty)
    return host_array(value, worker_state().host_empty)


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


def _device_array(array: np.ndarray) -> Any:
    from dtri.runtime.gpu import device_array

    return device_array(array)


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
        if array.nbytes < CACHED_MIN_BYTES or array.nbytes > self.limit:
            return _device_array(array)
        key = id(array)
        with self._lock:
            ref = self._seen.get(key)
            if ref is None or ref() is not array:  # first sight (or a new object, same id)
                self._forget(key)
                self._seen[key] = weakref.ref(array, lambda _: self.drop(key))
                return _device_array(array)
            if key in self._copies:
                self._copies.move_to_end(key)
                return self._copies[key]
            copy = _device_array(array)
            self._copies[key] = copy
            self._bytes += copy.nbytes
            self._evict()  # never the new copy: it fits the limit alone
            return copy

    def drop(self, key: int) -> None:
        """Forget an array that Dask has released."""
        with self._lock:
            self._forget(key)

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


DEFAULT_CACHE_BYTES = 1 << 30
"""The cache's limit where no staging plugin gave one (a local scheduler)."""


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


def pinned_share() -> float:
    """``dtri.pinned-share`` of ``dask.config``: the most of a worker's host memory limit (of
    the machine's memory, without one) that its page-locked pool may hold, where no host
    plan sizes the pool (:mod:`dtri.runtime.host_plan`: under a local cluster's
    ``--memory-limit`` it holds one memory budget). The pool's free memory counts in the
    process's memory, but no spilling can free it."""
    import dask


    return float(dask.config.get("dtri.pinned-share"))


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


class StagingState:
    """One worker's staging state: its :class:`DeviceCache` and, on GPU workers, the
    :class:`HostArena` its results land in."""

    def __init__(self, cache_limit: int = DEFAULT_CACHE_BYTES, arena: HostArena | None = None):
        self.cache = DeviceCache(cache_limit)
        self.arena = arena

    def host_empty(self, shape: tuple[int, ...] | int, dtype: Any) -> np.ndarray:
        """An uninitialized host array for a result coming off the device: from the arena
        while there is one, plain NumPy otherwise."""
        return np.empty(shape, dtype) if self.arena is None else self.arena.empty(shape, dtype)

    def close(self) -> None:
        """Free every device copy and let go of the arena (its memory goes back to the system
        once the last array from it is gone)."""
        self.arena = None
        self.cache.clear()


def pinned_arena(share: float, nbytes: int | None = None) -> HostArena | None:
    """An arena of page-locked host memory of up to ``nbytes``, else ``share`` of this
    worker's host memory limit (:func:`pinned_share`); ``None`` where that is 0 or none can
    be had (results stay pageable)."""
    limit = int(host_memory_limit() * share) if nbytes is None else nbytes
    if limit <= 0:
        return None
    from dtri.runtime.gpu import PinnedPool

    try:
        return HostArena(PinnedPool(limit))
    except MemoryError:
        return None


PLUGIN_NAME = "dtri-staging"
"""The name of :class:`dtri.runtime.plugin.StagingPlugin` on the scheduler and workers."""
_local = StagingState()
"""The state of this process where tasks run without a worker (a local scheduler)."""


def worker_state() -> StagingState:
    """The staging state of the worker running this task (its staging plugin's), or
    of this process under a local scheduler."""
    try:
        from distributed import get_worker

        plugin = get_worker().plugins.get(PLUGIN_NAME)
    except ValueError:  # not in a worker
        return _local
    state = getattr(plugin, "state", None)  # None: no plugin, or one not set up yet
    return state if state is not None else _local


def start_local_staging(cache_limit: int, pinned_share: float) -> None:
    """The staging plugin's setup for this process (a local scheduler runs the tasks)."""
    global _local
    _local.close()
    _local = StagingState(cache_limit, pinned_arena(pinned_share))


def end_local_staging() -> None:
    """The staging plugin's teardown for this process."""
    _local.close()


def host_frame(frame: Any) -> Any:
    """A partition of the input in host memory, ids as int32 where they all fit (half the
    bytes to keep and move; the same numbers): cuDF through
    :func:`dtri.runtime.gpu.host_ids`, pandas here."""
    from dtri.kernels.dispatch import is_device_object

    if is_device_object(frame):
        from dtri.runtime.gpu import host_ids

        return host_ids(frame, worker_state().host_empty)
    columns = {name: frame[name].to_numpy() for name in ("src", "dst")}
    if any(c.dtype.itemsize <= 4 or c.dtype.kind not in "iu" for c in columns.values()) \
            or not all(c.shape[0] == 0 or (int(c.min()) >= 0 and int(c.max()) < 2**31)
                       for c in columns.values()):
        return frame if list(frame.columns) == ["src", "dst"] else frame[["src", "dst"]]
    import pandas as pd

    return pd.DataFrame({name: c.astype(np.int32) for name, c in columns.items()}, copy=False)


def folded(staging: Staging, combine: Callable[[Any, Any], Any], func: Callable[..., Any],
           args: tuple, *items: Any) -> Any:
    """``combine`` over ``func(item, *args)`` for every item, on the device one item at a time
    (a task that moves its own data: built with ``on_host``). Where the device runs out of
    memory (vertex-wide sums of a graph whose vertex arrays approach the budget), the sum so
    far moves to host memory and the items left are summed there (:func:`device_or_host`)."""
    total, left, on_host = None, list(items), False
    if staging.moves:
        try:
            on_device = tuple(staging.to_device(arg) for arg in args)
            while left:
                value = func(staging.to_device(left[0]), *on_device)
                total = value if total is None else combine(total, value)
                left.pop(0)
            return staging.to_host(total)
        except MemoryError:
            on_device, value = (), None  # the device copies let go
            worker_state().cache.clear()
            on_host = True  # unpacked: a packed value's header would send it to the device
            total = None if total is None else staging.to_host(unpack(total))
            note_host_fallback()
    for item in left:
        value = func(item, *args)
        value = staging.to_host(unpack(value)) if on_host else value
        total = value if total is None else combine(total, value)
    return total

"""The time this process has spent compiling its kernels, or loading them from the disk cache.

Both kinds of compiled kernels are cached on disk between processes by their own libraries:
numba's CPU kernels (``cache=True``: next to their source, or under ``NUMBA_CACHE_DIR``) and
CuPy's CUDA kernels (under ``CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``), so only the
first process on a machine compiles them; later ones load them. What either costs is counted
here, so that a run can report it apart from its stages (:class:`dtri.runtime.timer.StageTimer`):

* numba: the time its global compiler lock is held (a compile, or a load from its cache),
  through numba's event API;
* CuPy: the first use on a device of each of dtri's CUDA modules and elementwise kernels
  (:func:`compiling` around it). CuPy's own kernels (its ufuncs and reductions) are compiled
  and cached the same way but not counted.
"""

from __future__ import annotations

import functools
import importlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any


class CompileClock:
    """Seconds spent compiling (or loading compiled) kernels in this process, outermost
    spans only (a compile that nests another counts once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds = 0.0
        self._depth: dict[int, int] = {}
        self._started: dict[int, float] = {}

    def start(self) -> None:
        thread = threading.get_ident()
        with self._lock:
            depth = self._depth.get(thread, 0)
            if depth == 0:
                self._started[thread] = time.perf_counter()
            self._depth[thread] = depth + 1

    def stop(self) -> None:
        thread = threading.get_ident()
        with self._lock:
            depth = self._depth.get(thread, 0) - 1
            self._depth[thread] = max(depth, 0)
            if depth == 0:
                self._seconds += time.perf_counter() - self._started.pop(thread)

    @property
    def seconds(self) -> float:
        with self._lock:
            return self._seconds


CLOCK = CompileClock()
"""This process's clock (compiled kernels are per process, as its CUDA context is)."""


class WedgeTally:
    """Wedges that the NumPy join has joined in this process on the CPU, while numba's
    compiled kernels were not ready: the planner loads them once the NumPy join has cost
    about what loading them costs (a ski rental: never more than twice the better choice),
    where :data:`LOADER` has not loaded them by then."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wedges = 0

    def add(self, wedges: int) -> None:
        with self._lock:
            self._wedges += int(wedges)

    @property
    def wedges(self) -> int:
        with self._lock:
            return self._wedges


NUMPY_JOIN = WedgeTally()
"""This process's tally (the compiled kernels it would load are per process too)."""


KERNEL_LOAD_WAIT = "dtri.kernel-load-wait"
"""``dask.config`` key: the most seconds from the start of :data:`LOADER`'s load that a
count waits for it."""
KERNEL_COMPILE_WAIT = "dtri.kernel-compile-wait"
"""``dask.config`` key: the most seconds from the start of :data:`LOADER`'s load that a
count waits for it once it compiles (numba's disk cache has not the kernels)."""
KERNEL_LOAD_WAIT_MIN_ITEMS = "dtri.kernel-load-wait-min-items"
"""``dask.config`` key: inputs of fewer items than this never wait for :data:`LOADER`'s
load (:func:`dtri.kernels.dispatch.compiled_kernels_ready`)."""
KERNEL_LOAD_AHEAD = "dtri.kernel-load-ahead"
"""``dask.config`` key: whether a count that took NumPy's join starts :data:`LOADER`
(:meth:`KernelLoader.start_ahead`)."""
WARM_UP = ("dtri.kernels.warm", "warm_count_kernels")
"""The module and function that load the kernels a CPU count runs (:data:`LOADER`'s work)."""


class KernelLoader:
    """numba's compiled CPU kernels, loaded on a thread of their own.

    A fresh process has not imported numba: importing it and loading a count's kernels from
    numba's disk cache takes about 0.4-0.6 s on this project's 2-core machine (a compile,
    where the cache has none, about 6 s), longer than the NumPy wedges join of a small
    graph. So a process's first CPU count takes the NumPy join, and :meth:`start_ahead` then
    loads the kernels on a daemon thread (``warm``, else :data:`WARM_UP`) while the process
    goes on (a worker of a local CPU cluster starts it as it starts); a
    later count asks :meth:`ready`, which waits for the load in progress, at most until
    ``dtri.kernel-load-wait`` seconds after it started, and counts with them where they
    are ready. A load that turns out to compile (numba's ``numba:compile`` event on the
    loader's thread, :func:`watch_numba`) is waited for only until
    ``dtri.kernel-compile-wait`` seconds after it started (none by default): the counts take
    NumPy's join while it compiles, and numba caches the kernels for the next process."""

    def __init__(self, warm: Callable[[], None] | None = None) -> None:
        self._warm = warm
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self._news = threading.Condition()
        self._done = False
        self._compiling = False
        self._loaded = False
        self.seconds: float | None = None
        """How long the load took, once done."""

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called in this process."""
        return self._thread is not None

    def start(self) -> None:
        """Load the kernels on a daemon thread, if not loading or loaded already."""
        with self._lock:
            if self._thread is not None:
                return
            self._started = time.perf_counter()
            self._thread = threading.Thread(target=self._load, name="dtri-load-kernels",
                                            daemon=True)
            self._thread.start()

    def start_ahead(self) -> None:
        """:meth:`start`, where ``dtri.kernel-load-ahead`` allows (a count that took NumPy's
        join calls it for the process's next counts)."""
        import dask

        if dask.config.get(KERNEL_LOAD_AHEAD):
            self.start()

    def _load(self) -> None:
        try:
            if self._warm is None:
                module, name = WARM_UP
                getattr(importlib.import_module(module), name)()
            else:
                self._warm()
            self._loaded = True
        except Exception:  # the kernels then load where a count calls them, if it does
            self._loaded = False
        finally:
            self.seconds = time.perf_counter() - self._started
            with self._news:
                self._done = True
                self._news.notify_all()

    @property
    def compiling(self) -> bool:
        """Whether the load compiles a kernel (numba's cache had not all of them)."""
        return self._compiling

    def compile_started(self) -> None:
        """Note a compile of numba's, where it runs on the loader's thread (the load is then
        a compile, not a read of numba's cache)."""
        if self._thread is threading.current_thread() and not self._compiling:
            with self._news:
                self._compiling = True
                self._news.notify_all()

    def ready(self, wait: bool = True) -> bool:
        """Whether the kernels are loaded; ``wait``: where they are loading, wait for them
        until ``dtri.kernel-load-wait`` seconds after the load started, or, once it compiles,
        ``dtri.kernel-compile-wait`` seconds (never on the loader's own thread)."""
        thread = self._thread
        if thread is None:
            return False
        if wait and not self._done and thread is not threading.current_thread():
            import dask

            limits = {False: float(dask.config.get(KERNEL_LOAD_WAIT)),
                      True: float(dask.config.get(KERNEL_COMPILE_WAIT))}
            with self._news:
                while not self._done:
                    left = self._started + limits[self._compiling] - time.perf_counter()
                    if left <= 0:
                        break
                    self._news.wait(left)
        return self._done and self._loaded


LOADER = KernelLoader()
"""This process's loader (compiled kernels are per process)."""


def compile_seconds() -> float:
    """Seconds this process has spent compiling or loading compiled kernels so far."""
    return CLOCK.seconds


@contextmanager
def compiling() -> Iterator[None]:
    """Count the block as compiling (a CUDA module's first use on a device)."""
    CLOCK.start()
    try:
        yield
    finally:
        CLOCK.stop()


def first_use(seen: set[Any], key: Any) -> AbstractContextManager:
    """:func:`compiling` for the first use of ``key`` (a kernel on a device), a no-op after."""
    if key in seen:
        return nullcontext()
    seen.add(key)
    return compiling()


@functools.cache
def watch_numba() -> None:
    """Count numba's compiles and cache loads from now on, and tell :data:`LOADER` of a
    compile on its thread (called where numba is imported; once a process)."""
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, event: Any) -> None:
            CLOCK.start()

        def on_end(self, event: Any) -> None:
            CLOCK.stop()

    class Compiles(event.Listener):
        def on_start(self, event: Any) -> None:
            LOADER.compile_started()

        def on_end(self, event: Any) -> None:
            pass

    event.register("numba:compiler_lock", Listener())
    event.register("numba:compile", Compiles())

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
import threading
import time
from collections.abc import Iterator
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
    compiled kernels were not loaded: the planner loads them once the NumPy join has cost
    about what loading them costs (a ski rental: never more than twice the better choice)."""

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
    """Count numba's compiles and cache loads from now on (called where numba is imported;
    once a process)."""
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, event: Any) -> None:
            CLOCK.start()

        def on_end(self, event: Any) -> None:
            CLOCK.stop()

    event.register("numba:compiler_lock", Listener())

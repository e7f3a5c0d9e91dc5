"""Measured memory of each stage: the peak bytes a worker's device held while a stage's tasks ran.

A :class:`StageMeter` lives on each worker (:class:`dtri.runtime.plugin.MeterPlugin`) or,
under a local Dask scheduler, in this process (:class:`LocalMeter`). It asks a :class:`Probe`
for the bytes in use when a worker starts to run tasks and for their peak when it stops, and
files that peak under the stage of every task that ran in between
(:func:`dtri.runtime.stages.stage_of`). The host side is :mod:`dtri.runtime.host_meter`'s.

``dtri.meter`` picks the probe: ``auto`` (RMM's statistics on GPU workers, exact since cuDF
and CuPy both allocate through RMM there; nothing on CPU ones), ``rmm``, ``tracemalloc``
(NumPy's allocations on a CPU worker: slower, for tests; numba's are not seen) or ``off``.

The client reads the workers' peaks (:func:`stage_peaks_of`): per stage the largest over the
workers, ``overall`` the largest of all. ``peak_bytes`` counts everything the worker held at
the time (stored results and caches included); ``task_bytes`` only what the stage's tasks
added above what was there when they started: what ``--memory-budget`` bounds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import dask

from dtri.options import Backend
from dtri.runtime.host_meter import MeasuredHost
from dtri.runtime.stages import stage_of

METER_NAME = "dtri-meter"
"""The name of the meter plugin on the scheduler and workers."""
METERS = ("auto", "rmm", "tracemalloc", "off")


class Probe(Protocol):
    """What a meter asks of the memory it watches."""

    def start(self) -> int:
        """Begin a measurement; the bytes in use now."""

    def stop(self) -> int:
        """End the measurement begun last; the peak bytes added above the start."""


class RmmProbe:
    """RMM's statistics: a counter level pushed at the start, popped at the end (its peak is
    the bytes allocated above the start at the busiest moment)."""

    def __init__(self) -> None:
        import rmm.statistics

        rmm.statistics.enable_statistics()  # wraps the current resource (the pool) once
        self._statistics = rmm.statistics

    def start(self) -> int:
        # the level below is the base one (this meter is the only one to push), whose
        # current bytes are every byte allocated since the statistics were enabled
        below = self._statistics.push_statistics()
        return 0 if below is None else max(0, _field(below, "current_bytes"))

    def stop(self) -> int:
        popped = self._statistics.pop_statistics()
        return 0 if popped is None else max(0, _field(popped, "peak_bytes"))


class TracemallocProbe:
    """Python's tracemalloc (NumPy reports its array memory to it): the traced bytes now and
    their peak since the start."""

    def __init__(self) -> None:
        import tracemalloc

        if not tracemalloc.is_tracing():
            tracemalloc.start()
        self._tracemalloc = tracemalloc
        self._before = 0

    def start(self) -> int:
        self._before, _ = self._tracemalloc.get_traced_memory()
        self._tracemalloc.reset_peak()
        return self._before

    def stop(self) -> int:
        _, peak = self._tracemalloc.get_traced_memory()
        return max(0, peak - self._before)


def _field(stats: Any, name: str) -> int:
    """A field of RMM's ``Statistics`` (a dataclass; a dict in older RMM)."""
    return int(stats[name] if isinstance(stats, dict) else getattr(stats, name))


def meter_choice() -> str:
    """``dtri.meter`` from ``dask.config``."""
    from dtri.errors import ConfigurationError

    choice = str(dask.config.get("dtri.meter"))
    if choice not in METERS:
        raise ConfigurationError(f"dtri.meter must be one of {', '.join(METERS)}, got "
                                 f"{choice!r}")
    return choice


def make_probe(backend: Backend, choice: str) -> Probe | None:
    """The probe for a worker of ``backend``, or ``None`` where nothing is measured (``auto``
    on CPU workers; RMM where CuPy does not allocate through it, so RMM would not see
    everything)."""
    if choice == "off" or (choice == "auto" and not backend.on_gpu):
        return None
    if choice == "tracemalloc":
        return TracemallocProbe()
    try:
        from dtri.runtime.gpu import allocations_through_rmm
    except ImportError:
        return None
    return RmmProbe() if allocations_through_rmm() else None


def probe_source(probe: Probe) -> str:
    """The name a probe's measurements carry (``rmm``, ``tracemalloc``)."""
    return "rmm" if isinstance(probe, RmmProbe) else "tracemalloc"


@dataclass
class StagePeaks:
    """What a meter found: per stage, the peak bytes in use and the peak bytes its tasks
    added."""

    peak_bytes: dict[str, int] = field(default_factory=dict)
    task_bytes: dict[str, int] = field(default_factory=dict)
    host_tasks: dict[str, int] = field(default_factory=dict)
    """Tasks that ran out of device memory and went on on the host, per stage."""

    def add(self, stages: set[str], peak: int, added: int) -> None:
        for stage in stages:
            self.peak_bytes[stage] = max(self.peak_bytes.get(stage, 0), peak)
            self.task_bytes[stage] = max(self.task_bytes.get(stage, 0), added)

    def merge(self, other: StagePeaks) -> None:
        for stage, peak in other.peak_bytes.items():
            self.peak_bytes[stage] = max(self.peak_bytes.get(stage, 0), peak)
        for stage, added in other.task_bytes.items():
            self.task_bytes[stage] = max(self.task_bytes.get(stage, 0), added)
        for stage, tasks in other.host_tasks.items():
            self.host_tasks[stage] = self.host_tasks.get(stage, 0) + tasks

    def overall(self) -> int | None:
        return max(self.peak_bytes.values(), default=None)


class StageMeter:
    """A worker's measurements (see the module docstring). A measurement spans the time its
    worker runs tasks without a pause: one task on a one-thread worker, and where tasks
    overlap, every stage that ran counts the peak of the whole span.

    Several readers may read the same meter, each from its own start (:meth:`take`): the
    peaks of a run's result, and those a benchmark takes around a block of runs."""

    def __init__(self, probe: Probe, source: str):
        self.probe = probe
        self.source = source
        self._readers: dict[str, StagePeaks] = {}
        self._running: dict[Any, str | None] = {}
        self._stages: set[str] = set()
        self._before = 0
        self._lock = threading.Lock()

    def started(self, key: Any) -> None:
        with self._lock:
            if not self._running:
                self._before = self.probe.start()
                self._stages = set()
            stage = stage_of(key)
            self._running[key] = stage
            if stage is not None:
                self._stages.add(stage)

    def finished(self, key: Any) -> None:
        with self._lock:
            if key not in self._running:
                return
            del self._running[key]
            if self._running:
                return
            added = self.probe.stop()
            for peaks in self._readers.values():
                peaks.add(self._stages, self._before + added, added)

    def fell_back(self) -> None:
        """The running task (of those running, the last to start) went on on the host."""
        with self._lock:
            if self._running:
                stage = list(self._running.values())[-1] or "other"
                for peaks in self._readers.values():
                    peaks.host_tasks[stage] = peaks.host_tasks.get(stage, 0) + 1

    def take(self, reader: str = "run") -> StagePeaks:
        """What ``reader`` has not read yet (the peaks since its last :meth:`take`), starting
        it afresh."""
        with self._lock:
            peaks = self._readers.get(reader, StagePeaks())
            self._readers[reader] = StagePeaks()
            return peaks


class LocalMeter(dask.callbacks.Callback):
    """A :class:`StageMeter` for tasks that a local Dask scheduler runs in this process."""

    def __init__(self, meter: StageMeter):
        super().__init__()
        self.meter = meter

    def _pretask(self, key: Any, dask: Any, state: Any) -> None:
        self.meter.started(key)

    def _posttask(self, key: Any, result: Any, dask: Any, state: Any, worker_id: Any) -> None:
        self.meter.finished(key)


# ------------------------------------------------------------------------------ client side

@dataclass
class MeasuredMemory:
    """The peaks a run measured, over every worker (``None`` where nothing measures)."""

    source: str | None
    """``rmm``, ``tracemalloc`` or ``None``."""
    peaks: StagePeaks = field(default_factory=StagePeaks)
    host: MeasuredHost = field(default_factory=MeasuredHost)
    """The host side: each stage's peak resident memory of a worker and the bytes spilled
    to disk and read back (:mod:`dtri.runtime.host_meter`)."""

    def merge(self, other: MeasuredMemory) -> None:
        """Add ``other``'s peaks (a later read of the same meters)."""
        self.source = other.source or self.source
        self.peaks.merge(other.peaks)
        self.host.merge(other.host)

    def peak_device_bytes(self) -> dict[str, int] | None:
        """Per stage the peak bytes in use, and ``overall``; ``None`` where not measured."""
        if self.source is None:
            return None
        return {**self.peaks.peak_bytes, "overall": self.peaks.overall() or 0}

    def task_device_bytes(self) -> dict[str, int] | None:
        """Per stage the peak bytes its tasks added (what the budget bounds)."""
        return None if self.source is None else dict(self.peaks.task_bytes)

    def host_tasks(self) -> dict[str, int]:
        """Per stage the tasks that ran out of device memory and went on on the host."""
        return dict(self.peaks.host_tasks)


def worker_meter(worker: Any) -> StageMeter | None:
    """The meter of a Dask worker (its meter plugin's), ``None`` where it has none."""
    return getattr(worker.plugins.get(METER_NAME), "meter", None)


def note_fallback() -> None:
    """Count the running task of this worker as one that went on on the host (nothing
    outside a worker, or without a meter)."""
    try:
        from distributed import get_worker

        meter = worker_meter(get_worker())
    except (ImportError, ValueError):
        return
    if meter is not None:
        meter.fell_back()
    logging.getLogger("dtri.stages").warning(
        "a task ran out of device memory and goes on on the host")


def worker_peaks(reader: str, *, dask_worker: Any) -> tuple[str | None, dict, dict, dict]:
    """This worker's peaks not yet read by ``reader``, started afresh (run on the worker)."""
    meter = worker_meter(dask_worker)
    if meter is None:
        return None, {}, {}, {}
    peaks = meter.take(reader)
    return meter.source, peaks.peak_bytes, peaks.task_bytes, peaks.host_tasks


def local_stage_peaks(local: StageMeter | None, reader: str = "run") -> MeasuredMemory:
    """The peaks that the ``local`` meter of an in-process run measured since ``reader`` last
    read them (none without a meter); started afresh. The workers' peaks are read with their
    other meters (:func:`dtri.runtime.readings.read_readings`)."""
    if local is None:
        return MeasuredMemory(None)
    return MeasuredMemory(local.source, local.take(reader))


def stage_peaks_of(reports: Iterable[Any]) -> MeasuredMemory:
    """The workers' peaks from their reports (:func:`worker_peaks`, run on each)."""
    measured = MeasuredMemory(None)
    for report in reports:
        if not isinstance(report, tuple) or report[0] is None:
            continue
        source, peak_bytes, task_bytes, host_tasks = report
        measured.source = source
        measured.peaks.merge(StagePeaks(dict(peak_bytes), dict(task_bytes), dict(host_tasks)))
    return measured

"""Measured host memory of each stage: a worker's peak resident memory and the bytes it spilled
to disk and read back while a stage's tasks ran.

A :class:`HostMeter` lives on each worker of a cluster (owned by
:class:`dtri.runtime.plugin.HostMeterPlugin`, which Dask tells of every task that starts and
ends). A thread samples the worker process every ``dtri.host-sample-seconds`` (and the meter
samples again as each task ends):

* its peak resident memory since the sample before: the kernel's high-water mark
  (``VmHWM``), restarted at each sample through ``/proc/self/clear_refs`` (where it cannot
  be, the resident memory at the sample);
* the bytes its store has written to disk and read back so far (Dask's ``SpillBuffer`` and
  :class:`~dtri.runtime.tiered_store.TieredStore` meter both; on dask-cuda's
  ``DeviceHostFile``, :class:`SpillCounter`).

Each sample is filed under the stage of every task that ran since the sample before
(:func:`dtri.runtime.stages.stage_of`), or, while none ran, under the stage that ran last.
The client reads the workers' meters (:func:`read_host_peaks`): per stage the largest peak
and the bytes spilled and read back, added up, and each worker's own peak.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import dask

from dtri.runtime.stages import stage_of

HOST_METER_NAME = "dtri-host-meter"
"""The name of the host meter plugin on the scheduler and workers."""

HOST_SAMPLE_SECONDS = "dtri.host-sample-seconds"
"""``dask.config`` key: seconds between two samples of a worker's host memory. A sample
reads two small files of ``/proc`` and writes one: a few tens of µs."""


def host_sample_seconds() -> float:
    """``dtri.host-sample-seconds`` from ``dask.config``."""
    return float(dask.config.get(HOST_SAMPLE_SECONDS))


class ResidentMemory:
    """This process's resident memory, as a peak since the last reading where Linux lets the
    high-water mark restart (``exact``), else as it is at the reading."""

    def __init__(self) -> None:
        self.exact = _restart_high_water_mark()

    def peak(self) -> int:
        """The peak resident bytes since the last call (or this one's moment), restarted."""
        if not self.exact:
            return resident_bytes()
        peak = _status_bytes("VmHWM:")
        _restart_high_water_mark()
        return peak if peak is not None else resident_bytes()


def resident_bytes() -> int:
    """This process's resident memory now."""
    import psutil

    return int(psutil.Process().memory_info().rss)


def _status_bytes(field_name: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` in bytes, ``None`` where there is none."""
    with suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field_name):
                return int(line.split()[1]) * 1024
    return None


def _restart_high_water_mark() -> bool:
    """Restart the kernel's count of this process's peak resident memory (Linux 4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return _status_bytes("VmHWM:") is not None
    except OSError:
        return False


class SpillCounter:
    """A ``zict.Buffer`` callback adding up the bytes (``sizeof``) it moves, from fast to
    slow or back. dask-cuda's buffers (device to host, host to disk) keep no such count."""

    def __init__(self) -> None:
        self.bytes = 0

    def __call__(self, key: Any, value: Any) -> None:
        from distributed.sizeof import safe_sizeof

        self.bytes += safe_sizeof(value)


def buffer_counter(buffer: Any, direction: str) -> SpillCounter | None:
    """The :class:`SpillCounter` of a ``zict.Buffer``'s ``fast_to_slow`` or ``slow_to_fast``
    callbacks (``direction``), installed once; ``None`` for a mapping that never spills."""
    callbacks = getattr(buffer, f"{direction}_callbacks", None)
    if callbacks is None:
        return None
    for callback in callbacks:
        if isinstance(callback, SpillCounter):
            return callback
    callbacks.append(counter := SpillCounter())
    return counter


@dataclass(frozen=True)
class Spilled:
    """Bytes a worker's store has moved so far (``None`` where it cannot say)."""

    disk: int | None = None
    """Written to its spill directory."""
    read_back: int | None = None
    """Read back from there."""
    host: int | None = None
    """Device data moved to host memory (dask-cuda workers)."""


def spilled(data: Any) -> Spilled:
    """What a worker's store (a Dask worker's ``data``) has spilled so far: Dask's
    ``SpillBuffer`` meters the bytes it writes and reads (pickled), as does a GPU worker's
    :class:`~dtri.runtime.tiered_store.TieredStore`; dask-cuda's ``DeviceHostFile`` gets
    counters on its buffers (the values' sizes)."""
    if hasattr(data, "written_bytes"):  # dtri's TieredStore
        return Spilled(data.written_bytes, data.read_back_bytes, data.to_host_bytes)
    metrics = getattr(data, "cumulative_metrics", None)  # distributed's SpillBuffer
    if metrics is not None:
        return Spilled(int(metrics.get(("disk-write", "bytes"), 0)),
                       int(metrics.get(("disk-read", "bytes"), 0)))
    if hasattr(data, "device_buffer"):  # dask-cuda's DeviceHostFile
        to_disk = buffer_counter(data.host_buffer, "fast_to_slow")
        from_disk = buffer_counter(data.host_buffer, "slow_to_fast")
        to_host = buffer_counter(data.device_buffer, "fast_to_slow")
        return Spilled(to_disk.bytes if to_disk else None,
                       from_disk.bytes if from_disk else None,
                       to_host.bytes if to_host else None)
    return Spilled()


@dataclass
class HostPeaks:
    """What a host meter found since a reader's start: per stage the peak resident bytes and
    the bytes spilled to disk and read back; the process's own peak over them all."""

    peak_bytes: dict[str, int] = field(default_factory=dict)
    spilled_bytes: dict[str, int] = field(default_factory=dict)
    read_back_bytes: dict[str, int] = field(default_factory=dict)
    overall: int = 0

    def add(self, stages: set[str], peak: int, written: int, read: int) -> None:
        self.overall = max(self.overall, peak)
        share = len(stages)
        for n, stage in enumerate(sorted(stages)):
            self.peak_bytes[stage] = max(self.peak_bytes.get(stage, 0), peak)
            # bytes moved while several stages ran go to them in equal shares
            for total, moved in ((self.spilled_bytes, written), (self.read_back_bytes, read)):
                part = moved // share + (1 if n < moved % share else 0)
                if part or stage in total:
                    total[stage] = total.get(stage, 0) + part

    def merge(self, other: HostPeaks) -> None:
        """Another worker's peaks (or a later reading): peaks by their largest, bytes
        added up."""
        self.overall = max(self.overall, other.overall)
        for stage, peak in other.peak_bytes.items():
            self.peak_bytes[stage] = max(self.peak_bytes.get(stage, 0), peak)
        for mine, theirs in ((self.spilled_bytes, other.spilled_bytes),
                             (self.read_back_bytes, other.read_back_bytes)):
            for stage, moved in theirs.items():
                mine[stage] = mine.get(stage, 0) + moved

    def to_tuple(self) -> tuple[dict, dict, dict, int]:
        return self.peak_bytes, self.spilled_bytes, self.read_back_bytes, self.overall


class HostMeter:
    """A worker's host memory per stage (see the module docstring). ``store`` gives the
    worker's ``data`` (read at each sample: a plugin is set up before or after Dask makes
    it). Several readers may read it, each from its own start (:meth:`take`)."""

    def __init__(self, store: Callable[[], Any], interval: float | None = None):
        self.store = store
        self.interval = host_sample_seconds() if interval is None else interval
        self.resident = ResidentMemory()
        self._readers: dict[str, HostPeaks] = {}
        self._running: dict[Any, str] = {}
        self._ran: set[str] = set()
        self._last: str | None = None
        self._moved = self._spill_totals()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Sample in a thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._sample_until_stopped,
                                        name="dtri-host-meter", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def started(self, key: Any) -> None:
        stage = stage_of(key)
        if stage is None:
            return
        with self._lock:
            self._running[key] = stage
            self._ran.add(stage)
            self._last = stage

    def finished(self, key: Any) -> None:
        with self._lock:
            if self._running.pop(key, None) is not None:
                self._sample()

    def take(self, reader: str = "run") -> HostPeaks:
        """What ``reader`` has not read yet (the peaks since its last :meth:`take`, a sample
        taken now included), starting it afresh."""
        with self._lock:
            self._sample()
            peaks = self._readers.get(reader, HostPeaks())
            self._readers[reader] = HostPeaks()
            return peaks

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                self._sample()

    def _spill_totals(self) -> tuple[int, int]:
        moved = spilled(self.store())
        return moved.disk or 0, moved.read_back or 0

    def _sample(self) -> None:
        """One sample, filed under the stages that ran since the last one (under the lock)."""
        peak = self.resident.peak()
        written, read = self._spill_totals()
        (before_written, before_read), self._moved = self._moved, (written, read)
        stages = self._ran | set(self._running.values())
        if not stages and self._last is not None:
            stages = {self._last}
        self._ran = set()
        if not stages:
            return
        for peaks in self._readers.values():
            peaks.add(stages, peak, max(0, written - before_written),
                      max(0, read - before_read))


# ------------------------------------------------------------------------------ client side

@dataclass
class MeasuredHost:
    """The host memory a run measured over every worker; ``measured`` is false where nothing
    measures (no cluster)."""

    measured: bool = False
    peaks: HostPeaks = field(default_factory=HostPeaks)
    workers: dict[str, int] = field(default_factory=dict)
    """Each worker's peak resident bytes, by address."""

    def merge(self, other: MeasuredHost) -> None:
        self.measured = self.measured or other.measured
        self.peaks.merge(other.peaks)
        for address, peak in other.workers.items():
            self.workers[address] = max(self.workers.get(address, 0), peak)

    def peak_host_bytes(self) -> dict[str, int] | None:
        """Per stage the largest peak resident bytes of a worker, and ``overall``."""
        if not self.measured:
            return None
        return {**self.peaks.peak_bytes, "overall": self.peaks.overall}

    def spilled_bytes(self) -> dict[str, int] | None:
        """Per stage the bytes the workers wrote to disk, and ``total``."""
        return self._with_total(self.peaks.spilled_bytes)

    def read_back_bytes(self) -> dict[str, int] | None:
        """Per stage the bytes the workers read back from disk, and ``total``."""
        return self._with_total(self.peaks.read_back_bytes)

    def worker_host_bytes(self) -> dict[str, int] | None:
        """Each worker's peak resident bytes, by address."""
        return dict(self.workers) if self.measured else None

    def fields(self) -> dict[str, dict[str, int] | None]:
        """The four results' fields (``peak_host_bytes``, ``spilled_bytes``,
        ``read_back_bytes``, ``worker_host_bytes``), as ``--json`` gives them."""
        return {"peak_host_bytes": self.peak_host_bytes(), "spilled_bytes": self.spilled_bytes(),
                "read_back_bytes": self.read_back_bytes(),
                "worker_host_bytes": self.worker_host_bytes()}

    def _with_total(self, moved: dict[str, int]) -> dict[str, int] | None:
        if not self.measured:
            return None
        return {**{stage: n for stage, n in moved.items() if n}, "total": sum(moved.values())}


def worker_host_meter(worker: Any) -> HostMeter | None:
    """The host meter of a Dask worker (its plugin's), ``None`` where it has none."""
    return getattr(worker.plugins.get(HOST_METER_NAME), "meter", None)


def worker_host_peaks(reader: str, *, dask_worker: Any) -> tuple[dict, dict, dict, int] | None:
    """This worker's host peaks not yet read by ``reader``, started afresh (on the worker)."""
    meter = worker_host_meter(dask_worker)
    return None if meter is None else meter.take(reader).to_tuple()


def read_host_peaks(client: Any, reader: str = "run") -> MeasuredHost:
    """The host peaks measured since ``reader`` last read them, over the workers of
    ``client`` that are up (a lost worker's are lost with it); started afresh."""
    return host_peaks_of(client.run(worker_host_peaks, reader, on_error="ignore"))


def host_peaks_of(reports: dict[str, Any]) -> MeasuredHost:
    """The workers' host peaks from their reports by address (:func:`worker_host_peaks`,
    run on each)."""
    measured = MeasuredHost()
    for address, report in reports.items():
        if not isinstance(report, tuple):
            continue
        peaks = HostPeaks(*report)
        measured.measured = True
        measured.peaks.merge(peaks)
        measured.workers[address] = max(measured.workers.get(address, 0), peaks.overall)
    return measured

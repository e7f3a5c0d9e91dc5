"""Peak memory and spilled bytes of each worker over a block of work (``dtri bench``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dtri.runtime.meter import worker_meter
from dtri.runtime.session import Runtime

BENCH_READER = "bench"
"""The name under which a benchmark reads the workers' meters (apart from each run's own)."""

_MEMORY_MARKS: dict[str, dict[str, Any]] = {}
"""In each worker process: what :func:`_reset_worker_memory` saw, by worker address."""


class SpillCounter:
    """A ``zict.Buffer`` ``fast_to_slow`` callback adding up the bytes (``sizeof``) it moves.

    dask-cuda's buffers (device to host, host to disk) keep no such count themselves."""

    def __init__(self) -> None:
        self.bytes = 0

    def __call__(self, key: Any, value: Any) -> None:
        from distributed.sizeof import safe_sizeof

        self.bytes += safe_sizeof(value)


def _spill_counter(buffer: Any) -> SpillCounter | None:
    """The :class:`SpillCounter` of a ``zict.Buffer`` (installed once), ``None`` for a
    mapping that never spills."""
    callbacks = getattr(buffer, "fast_to_slow_callbacks", None)
    if callbacks is None:
        return None
    for callback in callbacks:
        if isinstance(callback, SpillCounter):
            return callback
    callbacks.append(counter := SpillCounter())
    return counter


def _spilled(data: Any) -> dict[str, int | None]:
    """Bytes a worker has moved out of memory so far: ``disk`` (to its spill directory) and
    ``host`` (device to host memory, dask-cuda workers only); ``None`` where it cannot."""
    metrics = getattr(data, "cumulative_metrics", None)  # distributed's SpillBuffer
    if metrics is not None:  # bytes written by the spill file, as Dask meters them
        return {"disk": int(metrics.get(("disk-write", "bytes"), 0)), "host": None}
    if hasattr(data, "device_buffer"):  # dask-cuda's DeviceHostFile
        to_host, to_disk = _spill_counter(data.device_buffer), _spill_counter(data.host_buffer)
        return {"disk": to_disk.bytes if to_disk else None,
                "host": to_host.bytes if to_host else None}
    return {"disk": None, "host": None}


def _high_water_mark() -> int | None:
    """This process's peak resident memory (Linux ``VmHWM``), or ``None``."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _reset_high_water_mark() -> bool:
    """Restart the kernel's count of this process's peak memory (Linux 4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def _sampled_peak(monitor: Any, quantity: str, since: float) -> int | None:
    """Largest sample of ``quantity`` that Dask's system monitor took since ``since``."""
    samples = monitor.quantities.get(quantity)
    if not samples:
        return None
    times = monitor.quantities["time"]
    recent = [value for when, value in zip(reversed(times), reversed(samples), strict=False)
              if when >= since]
    return int(max(recent)) if recent else int(samples[-1])


def _reset_worker_memory(backend: str, *, dask_worker: Any) -> None:
    """Start this worker's peak and spill counts afresh (run on the worker)."""
    marks: dict[str, Any] = {"time": time.time(), "spilled": _spilled(dask_worker.data),
                             "exact_host_peak": _reset_high_water_mark()}
    if (meter := worker_meter(dask_worker)) is not None:
        meter.take(BENCH_READER)
    _MEMORY_MARKS[dask_worker.address] = marks


def _read_worker_memory(backend: str, *, dask_worker: Any) -> dict[str, Any]:
    """This worker's peaks and spilled bytes since :func:`_reset_worker_memory` (run on the
    worker; a worker restarted since then counts from its start)."""
    marks = _MEMORY_MARKS.get(dask_worker.address) or {
        "time": 0.0, "spilled": {}, "exact_host_peak": False}
    monitor = dask_worker.monitor
    host_peak = (_high_water_mark() if marks["exact_host_peak"]
                 else _sampled_peak(monitor, "memory", marks["time"]))
    spilled, before = _spilled(dask_worker.data), marks["spilled"]
    device_peak, device_source = None, None
    if backend == "gpu":
        meter = worker_meter(dask_worker)
        if meter is not None and meter.source == "rmm":
            device_peak, device_source = meter.take(BENCH_READER).overall(), "rmm"
        elif (device_peak := _sampled_peak(monitor, "gpu_memory_used", marks["time"])):
            device_source = "nvml-sampled"
    return {
        "peak_process_bytes": host_peak,
        "peak_device_bytes": device_peak,
        "peak_device_source": device_source,
        "spilled_bytes": (None if spilled["disk"] is None
                          else spilled["disk"] - (before.get("disk") or 0)),
        "spilled_device_bytes": (None if spilled["host"] is None
                                 else spilled["host"] - (before.get("host") or 0)),
    }


@contextmanager
def measured_memory(runtime: Runtime) -> Iterator[dict[str, dict[str, Any]]]:
    """Measure each worker's memory over the block; the yielded dict is filled at its end.

    Per worker address: ``peak_process_bytes`` (the worker process's peak resident memory:
    the kernel's high-water mark, or Dask's system monitor samples where it cannot be reset),
    ``peak_device_bytes`` with ``peak_device_source`` (``rmm``: RMM statistics over the tasks
    that ran, exact, when cuDF and CuPy both allocate through RMM, as on the workers dtri
    starts: :mod:`dtri.runtime.meter`; ``nvml-sampled``: the GPU's
    used memory as Dask's system monitor samples it every 500 ms), ``spilled_bytes`` (written
    to the spill directory) and ``spilled_device_bytes`` (device data moved to host memory by
    dask-cuda). ``None`` where not measured; empty without a distributed client.
    """
    report: dict[str, dict[str, Any]] = {}
    client = runtime.client
    if client is None:
        yield report
        return
    client.run(_reset_worker_memory, runtime.backend, workers=_live_workers(runtime))
    yield report
    report.update(sorted(client.run(_read_worker_memory, runtime.backend,
                                    workers=_live_workers(runtime)).items()))


def _live_workers(runtime: Runtime) -> list[str]:
    """The session's workers that are still up (a lost one is not waited for)."""
    known = runtime.client.scheduler_info(n_workers=-1)["workers"]
    return [address for address in runtime.addresses if address in known]

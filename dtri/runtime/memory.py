"""Peak memory and spilled bytes of each worker over a block of work (``dtri bench``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dtri.options import Backend
from dtri.runtime.connect import cluster_workers
from dtri.runtime.host_meter import Spilled, spilled, worker_host_meter
from dtri.runtime.meter import worker_meter
from dtri.runtime.opened import Runtime

BENCH_READER = "bench"
"""The name under which a benchmark reads the workers' meters (apart from each run's own)."""

_MEMORY_MARKS: dict[str, dict[str, Any]] = {}
"""In each worker process: what :func:`_reset_worker_memory` saw, by worker address."""


def _sampled_peak(monitor: Any, quantity: str, since: float) -> int | None:
    """Largest sample of ``quantity`` that Dask's system monitor took since ``since``."""
    samples = monitor.quantities.get(quantity)
    if not samples:
        return None
    times = monitor.quantities["time"]
    recent = [value for when, value in zip(reversed(times), reversed(samples), strict=False)
              if when >= since]
    return int(max(recent)) if recent else int(samples[-1])


def _reset_worker_memory(backend: Backend, *, dask_worker: Any) -> None:
    """Start this worker's peak and spill counts afresh (run on the worker)."""
    marks: dict[str, Any] = {"time": time.time(), "spilled": spilled(dask_worker.data)}
    for meter in (worker_meter(dask_worker), worker_host_meter(dask_worker)):
        if meter is not None:
            meter.take(BENCH_READER)
    _MEMORY_MARKS[dask_worker.address] = marks


def _read_worker_memory(backend: Backend, *, dask_worker: Any) -> dict[str, Any]:
    """This worker's peaks and spilled bytes since :func:`_reset_worker_memory` (run on the
    worker; a worker restarted since then counts from its start)."""
    marks = _MEMORY_MARKS.get(dask_worker.address) or {"time": 0.0, "spilled": Spilled()}
    monitor = dask_worker.monitor
    host_meter = worker_host_meter(dask_worker)
    host_peak = (host_meter.take(BENCH_READER).overall if host_meter is not None
                 else _sampled_peak(monitor, "memory", marks["time"]))
    now, before = spilled(dask_worker.data), marks["spilled"]
    device_peak, device_source = None, None
    if backend.on_gpu:
        meter = worker_meter(dask_worker)
        if meter is not None and meter.source == "rmm":
            device_peak, device_source = meter.take(BENCH_READER).overall(), "rmm"
        elif (device_peak := _sampled_peak(monitor, "gpu_memory_used", marks["time"])):
            device_source = "nvml-sampled"
    return {
        "peak_process_bytes": host_peak,
        "peak_device_bytes": device_peak,
        "peak_device_source": device_source,
        "spilled_bytes": None if now.disk is None else now.disk - (before.disk or 0),
        "spilled_device_bytes": None if now.host is None else now.host - (before.host or 0),
    }


@contextmanager
def measured_memory(runtime: Runtime) -> Iterator[dict[str, dict[str, Any]]]:
    """Measure each worker's memory over the block; the yielded dict is filled at its end.

    Per worker address: ``peak_process_bytes`` (the worker process's peak resident memory,
    from :mod:`dtri.runtime.host_meter`, else Dask's system monitor), ``peak_device_bytes``
    with ``peak_device_source`` (``rmm``: RMM statistics over the tasks that ran,
    :mod:`dtri.runtime.meter`; ``nvml-sampled``: Dask's system monitor, every 500 ms),
    ``spilled_bytes`` (to the spill directory) and ``spilled_device_bytes`` (device data moved
    to host memory by dask-cuda). ``None`` where not measured; empty without a client.
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
    known = cluster_workers(runtime.client)
    return [address for address in runtime.addresses if address in known]

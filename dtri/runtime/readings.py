"""The workers' meters read in one round trip: each stage's device peaks
(:mod:`dtri.runtime.meter`), host peaks (:mod:`dtri.runtime.host_meter`) and the bytes each
worker received from the others (:mod:`dtri.runtime.transfers`).

A run reads them where a graph's preparation begins (what ran before is not its own) and
ends, and where an analytic reports them. Each reading is a ``client.run`` on every worker,
a round trip between two stages. Read one meter at a time, they were three round trips at
each of those points; :func:`worker_readings` reads them all on each worker at once.
"""

from __future__ import annotations

from typing import Any

from dtri.runtime.host_meter import host_peaks_of, worker_host_peaks
from dtri.runtime.meter import MeasuredMemory, stage_peaks_of, worker_peaks
from dtri.runtime.transfers import MovedBytes, moved_bytes_of, worker_moves


def worker_readings(reader: str, device: bool, host: bool, moves: bool, *,
                    dask_worker: Any) -> tuple[Any, Any, Any]:
    """This worker's device peaks, host peaks and received transfers not yet read by
    ``reader``, those asked for (else ``None``), each started afresh (run on the worker)."""
    return (worker_peaks(reader, dask_worker=dask_worker) if device else None,
            worker_host_peaks(reader, dask_worker=dask_worker) if host else None,
            worker_moves(reader, dask_worker=dask_worker) if moves else None)


def read_readings(client: Any, device: bool, host: bool, moves: bool, reader: str = "run"
                  ) -> tuple[MeasuredMemory, MovedBytes]:
    """The meters of the workers of ``client`` that are up, read since ``reader`` last read
    them, in one round trip: the ``device`` and ``host`` peaks (the host's under
    :attr:`MeasuredMemory.host`) and the transfers received (``moves``); a meter not asked
    for is not measured."""
    reports = {address: report for address, report in client.run(
        worker_readings, reader, device, host, moves, on_error="ignore").items()
        if isinstance(report, tuple)}  # a lost worker's are lost with it
    measured = stage_peaks_of(report[0] for report in reports.values())
    if host:
        measured.host = host_peaks_of({address: report[1]
                                       for address, report in reports.items()})
    moved = (moved_bytes_of({address: report[2] for address, report in reports.items()})
             if moves else MovedBytes(False))
    return measured, moved

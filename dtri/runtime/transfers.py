"""Bytes moved between workers: each stage's data that a worker received from another.

A Dask worker logs every transfer it receives (``Worker.transfer_incoming_log``), in a deque
of ``distributed.admin.low-level-log-length`` entries, so a long run would lose its oldest
transfers. A :class:`TransferLedger` on each worker (:class:`dtri.runtime.plugin.
TransferPlugin`) reads the log as it grows (:meth:`TransferLedger.catch_up`, each time a key
reaches the worker's memory). It files each key's bytes under the stage that needed them
(:func:`dtri.runtime.stages.stage_of`): that of a task here that waits for the key, else that
of the task that made it, as the planner predicts them. It adds up the transfers' seconds
too.

The client reads every worker's ledger (:func:`worker_moves`): per stage, the bytes each
worker received (:class:`MovedBytes`). Data sent from the client is not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dtri.runtime.stages import OUTPUT_STAGE, stage_of

TRANSFERS_NAME = "dtri-transfers"
"""The name of the transfer plugin on the scheduler and workers."""
PROBE_STAGE = "link-probe"
"""The stage of the link probe's keys (:mod:`dtri.runtime.link`): not a stage of a run, so
the ledger does not count its transfers."""


# ------------------------------------------------------------------------------ worker side

@dataclass
class Moves:
    """A worker's received transfers: bytes per stage, and all bytes and seconds together."""

    stage_bytes: dict[str, int] = field(default_factory=dict)
    transfer_bytes: int = 0
    transfer_seconds: float = 0.0
    """The transfers' durations added up (transfers that overlap each count their own)."""

    def copy(self) -> Moves:
        return Moves(dict(self.stage_bytes), self.transfer_bytes, self.transfer_seconds)

    def since(self, earlier: Moves) -> Moves:
        """What was added after ``earlier`` (a copy of this one when it was taken)."""
        stage_bytes = {stage: value - earlier.stage_bytes.get(stage, 0)
                       for stage, value in self.stage_bytes.items()}
        return Moves({stage: value for stage, value in stage_bytes.items() if value},
                     self.transfer_bytes - earlier.transfer_bytes,
                     self.transfer_seconds - earlier.transfer_seconds)


class TransferLedger:
    """The transfers a worker received since the ledger started, by stage (see the module
    docstring). Each reader reads from its own start (:meth:`take`).

    The worker's event loop both calls :meth:`catch_up` (from the plugin's transitions) and
    runs the client's readings, so no lock is needed."""

    def __init__(self, worker: Any):
        self.worker = worker
        log = worker.transfer_incoming_log
        self._last: dict | None = log[-1] if log else None  # what came before is not ours
        self.moves = Moves()
        self._read: dict[str, Moves] = {}

    def catch_up(self) -> None:
        """File the transfers logged since the last call."""
        log = self.worker.transfer_incoming_log
        if not log or log[-1] is self._last:
            return
        new = []
        for entry in reversed(log):  # newest first, back to the last one filed
            if entry is self._last:
                break
            new.append(entry)
        self._last = log[-1]
        for entry in reversed(new):
            self._file(entry)

    def _file(self, entry: dict[str, Any]) -> None:
        moved = 0
        for key, nbytes in entry["keys"].items():
            stage = self._needed_by(key)
            if stage == PROBE_STAGE or not nbytes:
                continue
            self.moves.stage_bytes[stage] = self.moves.stage_bytes.get(stage, 0) + nbytes
            moved += nbytes
        if moved:
            self.moves.transfer_bytes += moved
            self.moves.transfer_seconds += max(0.0, entry["stop"] - entry["start"])

    def _needed_by(self, key: Any) -> str:
        """The stage of a task on this worker that waits for ``key``, else the key's own."""
        task = self.worker.state.tasks.get(key)
        for dependent in task.dependents if task is not None else ():
            if (stage := stage_of(dependent.key)) not in (None, OUTPUT_STAGE):
                return stage
        return stage_of(key) or OUTPUT_STAGE

    def take(self, reader: str = "run") -> Moves:
        """What ``reader`` has not read yet (since its last :meth:`take`, or since the ledger
        started), starting it afresh."""
        self.catch_up()
        earlier = self._read.get(reader, Moves())
        self._read[reader] = self.moves.copy()
        return self.moves.since(earlier)


def worker_ledger(worker: Any) -> TransferLedger | None:
    """The transfer ledger of a Dask worker (its transfer plugin's), ``None`` where it has
    none."""
    return getattr(worker.plugins.get(TRANSFERS_NAME), "ledger", None)


def worker_moves(reader: str, *, dask_worker: Any) -> tuple[dict[str, int], int, float] | None:
    """This worker's received transfers not yet read by ``reader`` (run on the worker):
    bytes per stage, all bytes, all seconds; ``None`` without a ledger."""
    ledger = worker_ledger(dask_worker)
    if ledger is None:
        return None
    moves = ledger.take(reader)
    return moves.stage_bytes, moves.transfer_bytes, moves.transfer_seconds


# ------------------------------------------------------------------------------ client side

@dataclass
class MovedBytes:
    """The bytes a run moved between workers, over every worker (``measured`` false where
    nothing measures: a run in this process moves nothing)."""

    measured: bool
    stage_bytes: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per stage, the bytes each worker (by address) received."""
    transfer_bytes: int = 0
    transfer_seconds: float = 0.0

    def merge(self, other: MovedBytes) -> None:
        """Add ``other`` (a later reading of the same ledgers)."""
        self.measured = self.measured or other.measured
        for stage, workers in other.stage_bytes.items():
            mine = self.stage_bytes.setdefault(stage, {})
            for address, value in workers.items():
                mine[address] = mine.get(address, 0) + value
        self.transfer_bytes += other.transfer_bytes
        self.transfer_seconds += other.transfer_seconds

    def moved_bytes(self) -> dict[str, dict[str, int]] | None:
        """Per stage, the bytes each worker received; ``None`` where not measured."""
        if not self.measured:
            return None
        return {stage: dict(workers) for stage, workers in self.stage_bytes.items()}

    def link_bandwidth(self) -> float | None:
        """Bytes per second of the transfers: their bytes over their seconds added up (the
        mean rate of one transfer); ``None`` where nothing moved."""
        if not self.transfer_bytes or self.transfer_seconds <= 0:
            return None
        return self.transfer_bytes / self.transfer_seconds


def moved_bytes_of(reports: dict[str, Any]) -> MovedBytes:
    """The transfers from the workers' reports by address (:func:`worker_moves`, run on
    each)."""
    moved = MovedBytes(False)
    for address, report in reports.items():
        if not isinstance(report, tuple):  # no ledger there
            continue
        stage_bytes, transfer_bytes, transfer_seconds = report
        moved.merge(MovedBytes(True, {stage: {address: value}
                                      for stage, value in stage_bytes.items()},
                               transfer_bytes, transfer_seconds))
    return moved

"""The worker plugins of a session: each worker's staging state, its stage meters (device
and host memory) and its transfer ledger (imported where a cluster's workers need them, not
with dtri: it imports ``distributed``)."""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from dtri.options import Backend
from dtri.runtime.host_meter import HOST_METER_NAME, HostMeter
from dtri.runtime.meter import METER_NAME, StageMeter, make_probe, probe_source
from dtri.runtime.staging import PLUGIN_NAME, StagingState, pinned_arena
from dtri.runtime.tiered_store import READ_AHEAD_NAME
from dtri.runtime.transfers import TRANSFERS_NAME, TransferLedger


class StagingPlugin(WorkerPlugin):
    """Gives each worker a :class:`StagingState` while a host-staged GPU session is open
    (registered as :data:`PLUGIN_NAME`; a worker that joins or restarts meanwhile gets one
    too), and frees it when unregistered. Its page-locked pool holds ``pinned_bytes`` where
    given (what a host plan counts), else ``pinned_share`` of the worker's memory limit."""

    name = PLUGIN_NAME

    def __init__(self, cache_limit: int, pinned_share: float, pinned_bytes: int | None = None):
        self.cache_limit = cache_limit
        self.pinned_share = pinned_share
        self.pinned_bytes = pinned_bytes
        self.state: StagingState | None = None

    def setup(self, worker: Any) -> None:
        self.state = StagingState(self.cache_limit,
                                  pinned_arena(self.pinned_share, self.pinned_bytes))

    def teardown(self, worker: Any) -> None:
        if self.state is not None:
            self.state.close()
            self.state = None


class TaskMeterPlugin(WorkerPlugin):
    """A worker plugin whose ``meter`` (while it has one) is told of every task that starts
    and ends on its worker."""

    meter: Any = None

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if self.meter is None:
            return
        if finish == "executing":
            self.meter.started(key)
        elif start == "executing":
            self.meter.finished(key)


class MeterPlugin(TaskMeterPlugin):
    """Gives each worker a :class:`~dtri.runtime.meter.StageMeter` (registered as
    :data:`~dtri.runtime.meter.METER_NAME`) and tells it of every task that starts and ends
    there, so that each stage's peak memory is measured where it runs."""

    name = METER_NAME

    def __init__(self, backend: Backend, choice: str):
        self.backend = backend
        self.choice = choice
        self.meter: StageMeter | None = None

    def setup(self, worker: Any) -> None:
        probe = make_probe(self.backend, self.choice)
        self.meter = None if probe is None else StageMeter(probe, probe_source(probe))

    def teardown(self, worker: Any) -> None:
        self.meter = None



class HostMeterPlugin(TaskMeterPlugin):
    """Gives each worker a :class:`~dtri.runtime.host_meter.HostMeter` (registered as
    :data:`~dtri.runtime.host_meter.HOST_METER_NAME`), which samples its host memory in a
    thread, and tells it of every task that starts and ends there."""

    name = HOST_METER_NAME

    def __init__(self) -> None:
        self.meter: HostMeter | None = None

    def setup(self, worker: Any) -> None:
        self.meter = HostMeter(lambda: worker.data)
        self.meter.start()

    def teardown(self, worker: Any) -> None:
        if self.meter is not None:
            self.meter.stop()
            self.meter = None



class TransferPlugin(WorkerPlugin):
    """Gives each worker a :class:`~dtri.runtime.transfers.TransferLedger` (registered as
    :data:`~dtri.runtime.transfers.TRANSFERS_NAME`) and has it file the worker's received
    transfers each time a key reaches its memory, before Dask's bounded log drops them."""

    name = TRANSFERS_NAME

    def __init__(self) -> None:
        self.ledger: TransferLedger | None = None

    def setup(self, worker: Any) -> None:
        self.ledger = TransferLedger(worker)

    def teardown(self, worker: Any) -> None:
        self.ledger = None

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish == "memory" and self.ledger is not None:
            self.ledger.catch_up()


class ReadAheadPlugin(WorkerPlugin):
    """Has a worker whose store reads ahead (:meth:`dtri.runtime.tiered_store.TieredStore.
    read_ahead`) read the inputs of the task it will run next back from disk each time a
    task starts: the first of its ready tasks, as Dask's worker will pick it (registered as
    :data:`~dtri.runtime.tiered_store.READ_AHEAD_NAME`; other stores are left alone)."""

    name = READ_AHEAD_NAME

    def __init__(self) -> None:
        self.worker: Any = None

    def setup(self, worker: Any) -> None:
        self.worker = worker if hasattr(worker.data, "read_ahead") else None

    def teardown(self, worker: Any) -> None:
        if self.worker is not None:
            self.worker.data.stop_reading_ahead()
            self.worker = None

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "executing" or self.worker is None:
            return
        state = self.worker.state
        running = state.tasks.get(key)
        following = next(state.ready.peekn(1), None)
        if running is None or following is None:
            return
        self.worker.data.read_ahead([ts.key for ts in following.dependencies],
                                    running=[ts.key for ts in running.dependencies])

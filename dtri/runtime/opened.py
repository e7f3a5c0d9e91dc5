"""The runtime a run opened (:class:`Runtime`): what the planner and the task builders need
to know of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from dask.utils import format_bytes

from dtri.options import Backend
from dtri.runtime.budget import Budget, resolve_budget
from dtri.runtime.caps import MemoryCaps
from dtri.runtime.host_meter import read_host_peaks
from dtri.runtime.host_plan import HostPlan
from dtri.runtime.meter import MeasuredMemory, StageMeter, local_stage_peaks
from dtri.runtime.readings import read_readings
from dtri.runtime.resolve import RunDecision, _synchronize_device
from dtri.runtime.scaling import WorkerChoice
from dtri.runtime.staging import Staging
from dtri.runtime.tasks import Tasks
from dtri.runtime.timer import StageTimer
from dtri.runtime.transfers import MovedBytes
from dtri.runtime.wire_format import choose_wire_format

PROGRESS_READER = "progress"
"""The name under which the progress lines read the workers' host meters (apart from each
run's own reading)."""


@dataclass(frozen=True)
class Runtime:
    """The resources of one run, as the planner sees them."""

    backend: Backend
    """The backend, decided once (:func:`choose_backend`); a name given here is checked."""
    client: Any  # distributed.Client, or None for a local Dask scheduler
    workers: int
    threads_per_worker: int
    worker_memory: int
    dashboard: str | None = None
    addresses: tuple[str, ...] = ()
    """The workers' addresses, in a fixed order: the owners of partitions ``0, 1, ...`` in
    turn (empty for a local Dask scheduler)."""
    caps: MemoryCaps = field(default_factory=MemoryCaps)
    """The workers' memory caps (the smallest over the workers); ``worker_memory`` is the
    RMM pool on GPU workers that have one, the memory limit on CPU workers."""
    staged: str = "device"
    """Where stage results wait between tasks, ``host`` or ``device``
    (:func:`dtri.runtime.staging.resolve_staging`): :attr:`staging`."""
    decision: RunDecision | None = None
    """What the run decided before it opened (:func:`dtri.runtime.session.decide_run`);
    ``None`` for a runtime made directly, as if no option was given."""
    meter: StageMeter | None = None
    """The stage meter of this process, where a local Dask scheduler runs the tasks here and
    something is measured (on a cluster each worker has its own: :mod:`dtri.runtime.meter`)."""
    metered: bool = False
    """Whether the workers measure their stages' device memory (have a meter plugin)."""
    host_metered: bool = False
    """Whether the workers measure their stages' host memory (have a host meter plugin)."""
    eager: bool = False
    """An in-process run on the synchronous scheduler: its tasks run as they are built, no
    Dask graph (:mod:`dtri.runtime.tasks`)."""
    allocator: Any = None
    """The CuPy allocator the tasks of an in-process GPU run allocate from (CuPy's memory
    pool: :func:`_device_pool`), or ``None`` for CuPy's current one."""
    reason: str = ""
    """One line on why the run goes where it goes (``--explain``)."""
    workers_choice: WorkerChoice | None = None
    """How many GPUs ``--workers auto`` kept of a local cluster started here, and why
    (:mod:`dtri.runtime.scaling`); ``None`` where nothing was chosen."""
    protocol: str | None = None
    """The comms between the workers (``tcp``, ``ucx``, ...: the scheme of the scheduler's
    address); ``None`` without a cluster."""
    protocol_note: str | None = None
    """One line on how the comms could be faster, where dtri started a cluster that could
    not use the best it knows (:func:`resolve_protocol`); ``None`` otherwise."""
    ledgers: bool = False
    """Whether the workers keep transfer ledgers (:mod:`dtri.runtime.transfers`)."""
    host_plan: HostPlan | None = None
    """How each worker's host memory limit is shared out, where dtri started the workers
    with one (:mod:`dtri.runtime.host_plan`)."""
    start_seconds: float | None = None
    """Seconds from starting the local cluster that dtri started for this run to knowing its
    workers (``--workers auto``'s choice included); ``None`` where it started none."""
    wire_format: str = ""
    """How data crosses between the workers (:mod:`dtri.kernels.wire`), decided when the
    runtime opens (:func:`~dtri.runtime.wire_format.choose_wire_format`) where not given."""
    wire_reason: str = ""
    """One line on why that wire format."""
    pinned: set[str] = field(default_factory=set, compare=False)
    """The workers that tasks of the run were pinned to (:meth:`dtri.runtime.tasks.Tasks.
    pinned` adds them; the stage timers watch them)."""
    placements: dict[str, str] = field(default_factory=dict, compare=False)
    """Where the run's placed tasks were placed, by key (:attr:`dtri.runtime.tasks.Tasks.
    placements`)."""
    shown: list[str] = field(default_factory=list, compare=False)
    """The stage of the run's last progress line, across its timers (:class:`dtri.runtime.
    timer.StageTimer`): a stage that goes on in the next analytic's timer is one line."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", Backend(self.backend))
        if not self.wire_format:
            fmt, why = choose_wire_format(self.backend, self.protocol,
                                          self.client is None or self.eager)
            object.__setattr__(self, "wire_format", fmt)
            object.__setattr__(self, "wire_reason", why)

    @cached_property
    def budget(self) -> Budget:
        """The memory one worker and one task plan for (:mod:`dtri.runtime.budget`), resolved
        here only, once the workers are known: the budget given in the :attr:`decision`, else
        a share of the workers' memory, for their threads and staging."""
        given = self.decision.given if self.decision is not None else None
        return resolve_budget(given, self.worker_memory, self.threads_per_worker, self.staging)

    @property
    def staging(self) -> Staging:
        """Where stage results wait, for tasks on this runtime's backend."""
        return Staging(self.staged, self.backend)

    def tasks(self) -> Tasks:
        """The task builder of a stage of this run."""
        return Tasks(self.staging, self.addresses, self.eager, self.meter, self.allocator,
                     self.budget.per_task if self.host_plan is not None else None,
                     self.wire_format, self.pinned, self.placements)

    def timer(self, progress: bool = False) -> StageTimer:
        """A stage timer for this run (eager runs on the GPU wait for its queued work at the
        end of each stage)."""
        return StageTimer(self.client, progress, eager=self.eager,
                          synchronize=_synchronize_device if self.eager and
                          self.backend.on_gpu else None,
                          host_note=self._host_note if self.host_metered else None,
                          pinned=self.pinned, shown=self.shown)

    def _host_note(self) -> str:
        """The workers' host memory since the last stage ended, for its progress line:
        the peak resident memory of the busiest worker and the bytes spilled to disk and
        read back (a run that spills shows it as it goes)."""
        host = read_host_peaks(self.client, PROGRESS_READER)
        if not host.peaks.overall:  # nothing measured (the first reading starts the reader)
            return ""
        spilled, read_back = host.spilled_bytes() or {}, host.read_back_bytes() or {}
        note = f", host peak {format_bytes(host.peaks.overall)}"
        if spilled.get("total") or read_back.get("total"):
            note += (f", spilled {format_bytes(spilled.get('total', 0))}, read back "
                     f"{format_bytes(read_back.get('total', 0))}")
        return note

    def readings(self) -> tuple[MeasuredMemory, MovedBytes]:
        """What the meters measured since the last call, in one round trip to the workers
        (:func:`dtri.runtime.readings.read_readings`): the peak memory of each stage, the
        device's (:mod:`dtri.runtime.meter`) and the host's (:mod:`dtri.runtime.host_meter`),
        and the bytes moved between workers per stage and receiving worker
        (:mod:`dtri.runtime.transfers`; not measured without a cluster)."""
        if self.client is None:
            return local_stage_peaks(self.meter), MovedBytes(False)
        if not (self.metered or self.host_metered or self.ledgers):
            return MeasuredMemory(None), MovedBytes(False)
        return read_readings(self.client, self.metered, self.host_metered, self.ledgers)

    @property
    def capped(self) -> bool:
        """GPU workers whose memory an RMM pool that cannot grow caps."""
        return self.backend.on_gpu and self.caps.rmm_pool_size is not None

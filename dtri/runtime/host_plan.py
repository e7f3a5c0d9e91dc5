"""How a worker's host memory limit (``--memory-limit``) is shared, and the least that works.

A worker of a local cluster that dtri starts with a memory limit holds, in its process, four
shares (``docs/cli.md``, "Memory caps and spilling", tells what each holds): ``overhead``
(``dtri.worker-overhead-cpu`` and ``-gpu``; ``examples/benchmarks/host_memory.py`` prints
the idle workers' resident memory), ``staging`` (host staging's page-locked pool on GPU
workers, whose pages spilling gives back to the pool, not to the system), ``tasks`` (the
memory budget) and ``stored``, the rest, for the stage results kept in memory: Dask's
``SpillBuffer`` (CPU) and dtri's ``TieredStore`` (GPU) are made with this many bytes
(:meth:`HostPlan.stored`).

Dask's ``spill`` and ``target`` thresholds are set from the plan, so eviction never chases
memory that spilling cannot free. ``pause`` and ``terminate`` are off: a paused worker whose
memory no spilling can lower would wait forever, and a terminated one would redo the same
work; with ``terminate`` off the scheduler also runs a task whose inputs add up to more than
the limit, since they can come back from disk. A limit whose ``stored`` share cannot hold one
task's inputs is refused before the cluster starts (:func:`host_plan`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import dask
from dask.utils import format_bytes, parse_bytes

from dtri.errors import ConfigurationError
from dtri.options import Backend

if TYPE_CHECKING:
    from dtri.runtime.budget import Budget

WORKER_OVERHEAD = {"cpu": "dtri.worker-overhead-cpu", "gpu": "dtri.worker-overhead-gpu"}
"""``dask.config`` keys: a worker process's resident memory that no spilling frees, by
backend (a size: bytes or a string such as ``"400MiB"``). Their defaults (``dtri/dtri.yaml``):
CPU, an idle worker's resident memory after a count on the 2-core machine, rounded up
(``host-memory-cpu-2core.jsonl``). GPU: 3 GiB, above an idle worker's 1.06 GB on one H100,
since a join's tasks hold more than their budget on the host (at 1.5 GiB, R-MAT 26 under a
12 GiB limit peaked at 12.74 GiB: ``host-memory-folds-h100.jsonl``)."""
MEGABYTE = 1 << 20


def worker_overhead(backend: Backend) -> int:
    """``dtri.worker-overhead-<backend>`` from ``dask.config``, in bytes."""
    value = dask.config.get(WORKER_OVERHEAD[backend])
    return value if isinstance(value, int) else parse_bytes(value)


@dataclass(frozen=True)
class HostPlan:
    """A worker's host memory limit shared out (see the module docstring), in bytes."""

    limit: int
    overhead: int
    staging: int
    tasks: int
    task_budget: int
    """One task's share of ``tasks``: the least the stored results must hold (a task's
    inputs come back from disk together)."""

    @property
    def stored(self) -> int:
        """The bytes of stored results a worker keeps in memory; beyond them, disk."""
        return self.limit - self.overhead - self.staging - self.tasks

    def dask_config(self) -> dict[str, Any]:
        """Dask's worker memory thresholds for this plan (fractions of the limit)."""
        held = self.overhead + self.staging + max(self.stored, 0)
        return {"distributed.worker.memory.pause": False,
                "distributed.worker.memory.terminate": False,
                "distributed.worker.memory.target": min(held / self.limit, 0.99),
                "distributed.worker.memory.spill": min((held + self.tasks // 2) / self.limit,
                                                       0.99)}

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "stored": self.stored}


def host_plan(limit: int, backend: Backend, host_staged: bool,
              budget_of: Callable[[int], Budget]) -> HostPlan:
    """The plan of a worker with this host memory ``limit``; refuses, in one line naming
    the least ``--memory-limit``, a limit whose stored results could not hold one task's
    inputs. ``budget_of(limit)``: the budget of a worker of that limit (resolved by
    :func:`dtri.runtime.budget.resolve_budget`: on the CPU, without ``--memory-budget``, it
    follows the limit). ``host_staged``: GPU workers under host staging, whose page-locked
    pool holds the budget (the running tasks' results)."""
    overhead = worker_overhead(backend)
    on_host = not backend.on_gpu or host_staged

    def plan(size: int) -> HostPlan:
        budget = budget_of(size)
        return HostPlan(size, overhead, budget.per_worker if host_staged else 0,
                        budget.per_worker if on_host else 0, budget.per_task)

    def fits(mebibytes: int) -> bool:  # the stored results grow with the limit
        return (sized := plan(mebibytes * MEGABYTE)).stored >= sized.task_budget

    chosen = plan(limit)
    if chosen.stored >= chosen.task_budget:
        return chosen
    low, least = 0, max(1, limit // MEGABYTE)  # the least limit: in whole MiB, bisected
    while not fits(least):
        low, least = least, 2 * least
    while least - low > 1:
        middle = (low + least) // 2
        low, least = (low, middle) if fits(middle) else (middle, least)
    kind = "GPU" if backend.on_gpu else "CPU"
    parts = [f"{format_bytes(overhead)} of a {kind} worker's own ({WORKER_OVERHEAD[backend]})"]
    if chosen.staging:
        parts.append(f"{format_bytes(chosen.staging)} of page-locked staging")
    if chosen.tasks:
        parts.append(f"{format_bytes(chosen.tasks)} for the running tasks")
    parts.append(f"{format_bytes(chosen.task_budget)} of stored results (a task's inputs)")
    raise ConfigurationError(
        f"--memory-limit {format_bytes(limit)} is below what a worker needs: "
        f"{' + '.join(parts)}; give --memory-limit {least}MiB or more")

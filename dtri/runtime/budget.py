"""The run's memory budget, decided once: what one worker and one task may plan for, and the
share of a task's budget that each stage may use.

``--memory-budget`` is the memory one worker may plan for. Its threads share it, so one task
plans for ``per_worker // threads``. Without it, a worker plans for a share of its memory: the
GPU's on the GPU backend (the RMM pool, where ``--rmm-pool-size`` caps it), the memory limit
on the CPU (the machine's memory where none is given). The share is a quarter, and half under
host staging on GPU workers, where the device holds only the running task and the device
cache between tasks.

This module is the only one that reads ``--memory-budget``: :func:`given_budget`, what the
option alone says, goes into the run's decision before anything starts
(:attr:`dtri.runtime.resolve.RunDecision.given`). :func:`resolve_budget` turns it, with the
workers' memory, threads and staging, into a :class:`Budget`, once the runtime opens
(:attr:`dtri.runtime.opened.Runtime.budget`); everything below reads that. The local cluster
that dtri starts is shaped, and a run placed, by the same function.

:data:`TASK_SHARES` declares how much of one task's budget each stage may give to one thing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dtri.options import Options
    from dtri.runtime.staging import Staging

DEFAULT_BUDGET_FRACTION = 0.25
"""Share of a worker's memory (GPU memory on the GPU backend) one worker plans for by
default."""

STAGED_BUDGET_FRACTION = 0.5
"""The same under host staging on GPU workers: a stage's results wait in host memory, so the
GPU holds the running task and the device cache of vertex-wide arrays (a quarter of a task's
budget, :attr:`TaskShares.device_cache`) and nothing else."""


@dataclass(frozen=True)
class TaskShares:
    """How much of one task's budget a stage may give to one thing, as ``1 / n``: a task's
    budget divided by the share is the most that thing may take."""

    device_cache: int = 4
    """Host staging on GPU workers: a worker's cache of vertex-wide arrays on the device
    (:class:`dtri.runtime.staging.DeviceCache`)."""
    edge_bin: int = 4
    """A radix bin of edge keys (8 bytes each): its task also holds the bin's slices, its
    CSR and the scratch of building it (:func:`dtri.kernels.bins.choose_bin_count`)."""
    count_group: int = 2
    """Host staging: a group's CSR in a ``dtri-count`` task; the rest holds one other
    partition's CSR and the intersection's working rows
    (:func:`dtri.analytics.staged_plan.csr_groups`)."""
    intersect_chunk: int = 4
    """Host staging: the working rows of one intersection pass
    (:func:`dtri.analytics.staged_plan.chunk_rows`)."""
    read_group: int = 2
    """The input partitions whose rows one ``read`` task counts, by their bytes: a worker
    that spilled them brings them back to the device together
    (:func:`dtri.prepared.inputs.input_rows`)."""
    triangle_records: int = 2
    """The triangle records of one ``graphlets-cliques`` task
    (:func:`dtri.analytics.graphlets.clique_terms`)."""


TASK_SHARES = TaskShares()
"""The shares of a task's budget, the only place they are declared."""


@dataclass(frozen=True)
class Budget:
    """The memory a run plans for, resolved once (:func:`resolve_budget`)."""

    per_worker: int
    """Bytes one worker may plan for: ``--memory-budget``, else :attr:`share_of_memory` of
    the worker's memory."""
    per_task: int
    """Bytes one task may plan for: the worker's budget shared by its threads."""
    given: bool
    """Whether ``--memory-budget`` gave it (else it follows the workers' memory)."""
    share_of_memory: float = DEFAULT_BUDGET_FRACTION
    """The share of a worker's memory that the default budget takes."""
    threads: int = 1
    """The threads of a worker that share its budget."""

    def per_worker_for(self, per_task: int) -> int:
        """The per-worker budget (``--memory-budget``) that gives each task ``per_task``
        bytes."""
        return per_task * self.threads

    def for_task(self, per_task: int) -> Budget:
        """The same workers' budget that gives each task ``per_task`` bytes."""
        return Budget(self.per_worker_for(per_task), per_task, self.given,
                      self.share_of_memory, self.threads)

    def memory_for(self, per_task: int) -> int:
        """The worker memory whose default budget gives each task ``per_task`` bytes."""
        return math.ceil(self.per_worker_for(per_task) / self.share_of_memory)

    def to_dict(self) -> dict[str, int | bool]:
        return {"per_worker": self.per_worker, "per_task": self.per_task, "given": self.given}


def given_budget(options: Options) -> Budget | None:
    """What ``--memory-budget`` alone says, before the workers are known: a worker, and so
    one task, plans for at most that. ``None`` where it is not given."""
    if options.memory_budget is None:
        return None
    return Budget(options.memory_budget, options.memory_budget, True)


def resolve_budget(given: Budget | None, memory: int | Callable[[], int], threads: int,
                   staging: Staging) -> Budget:
    """The :class:`Budget` of workers of ``memory`` bytes (a callable is called only where it
    is needed) and ``threads`` threads each, whose stage results wait where ``staging`` says:
    the ``given`` budget (:func:`given_budget`), else the staging's share of their memory
    (the only place that share is applied)."""
    share = STAGED_BUDGET_FRACTION if staging.moves else DEFAULT_BUDGET_FRACTION
    per_worker = given.per_worker if given is not None else \
        int((memory() if callable(memory) else memory) * share)
    threads = max(1, threads)
    return Budget(per_worker, max(1, per_worker // threads), given is not None, share, threads)


MAX_PLAN_TASKS = "dtri.max-plan-tasks"
"""``dask.config`` key: the most tasks a count's plan may have
(:func:`dtri.analytics.plan.check_plan_tasks`). Its default (``dtri/dtri.yaml``): Dask's
scheduler spends about a millisecond on each task, a 2-core machine more: a plan of 100,000
tasks costs minutes of scheduling alone, and a budget too small for the graph gives millions
(R-MAT 18 under a 1 MiB budget: 4.7 M, silent for minutes)."""


def max_plan_tasks() -> int:
    """The most tasks a count's plan may have (``dtri.max-plan-tasks``)."""
    import dask


    return int(dask.config.get(MAX_PLAN_TASKS))

"""How a worker's host memory limit (``--memory-limit``) is shared, and the least that works.

A worker of a local cluster that dtri starts with a memory limit ``L`` holds, in its process:

* ``overhead``: the interpreter, Dask, NumPy/pandas, numba's kernels and dtri; on GPU workers
  also the CUDA context and the libraries of cuDF, RMM and CuPy. Measured, not spillable:
  ``dtri.worker-overhead-cpu`` and ``dtri.worker-overhead-gpu`` in ``dask.config``
  (``examples/benchmarks/host_memory.py`` prints the idle workers' resident memory);
* ``staging``: under host staging on GPU workers, the pool of page-locked memory that the
  running tasks' results land in as they leave the device: the worker's memory budget.
  Spilling a result gives its pages back to the pool, not to the system, so none of it is
  spillable either;
* ``tasks``: what the running tasks hold in host memory besides: the memory budget of the
  worker. On the CPU that is their whole working set. Under host staging it is their inputs
  read back from disk: where its host tier is full, dtri's store hands a task an input read
  back without keeping it, so the task holds it outside the stored results' bytes. Nothing
  under device staging, where the tasks run on the GPU;
* ``stored``: what is left, for the stage results the worker keeps in memory. Beyond it they
  go to disk: Dask's ``SpillBuffer`` (CPU) and dtri's ``TieredStore`` (GPU) are made
  with exactly this many bytes for their memory (:meth:`HostPlan.stored`), by the results'
  sizes.

Dask's own thresholds act on the whole process's resident memory: ``spill`` (evict stored
results, least recently used first) and, below it, ``target`` (where the eviction stops). They
are set from the plan: eviction starts once the process holds half a task budget more than
the overhead, the staging and the stored results together, and stops at that sum, so it
frees what the plan gives the stored results and never chases memory that spilling cannot
free (the page-locked pool, the libraries). Dask's ``pause`` (80 %) and ``terminate`` (95 %)
are turned off: a paused worker whose memory no spilling can lower would wait forever, and a
terminated one would lose its stored results, be restarted and redo the same work. With
``terminate`` off the scheduler also stops refusing a task whose inputs add up to more than
the limit: they can come back from disk.

A limit whose ``stored`` share cannot hold one task's inputs is refused before the cluster
starts, in one line naming the least ``--memory-limit`` (:func:`host_plan`).
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
CPU, the largest resident memory measured of an idle worker of a local cluster on this
project's 2-core machine once it had run a count (numba's kernels loaded), rounded up
(``examples/benchmarks/results/host-memory-cpu-2core.jsonl``, ``idle_worker_bytes``). GPU: 3 GiB.
An idle GPU worker held 0.83 and 1.06 GB on one H100 after a count (the CUDA context and the
libraries of cuDF, RMM and CuPy; ``host-memory-overhead-h100.jsonl``), but the tasks of a join
hold more than their budget on the host: at 1.5 GiB, R-MAT 26 under a 12 GiB limit peaked at
12.74 GiB in its join (``host-memory-folds-h100.jsonl``, 9383ea9); at 3 GiB, at 8.96 GiB."""
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

"""The counting phase's plan under host staging: the fused join over groups of consecutive
partitions whose CSRs fit half a task's budget (:func:`staged_plan`)."""

from __future__ import annotations

from collections.abc import Sequence

from dtri.analytics.bin_layout import REDUCE_FAN_IN, csr_bytes, reaches, reduce_task_count
from dtri.analytics.plan import (
    BYTES_PER_COUNT,
    CountPlan,
    CountTask,
    StageEstimate,
    partition_kernel,
)
from dtri.kernels.bins import checked_key_bits
from dtri.kernels.csr import PartitionSummary
from dtri.options import Backend
from dtri.runtime.budget import TASK_SHARES, Budget
from dtri.runtime.tasks import partition_owner

CHUNK_BYTES_PER_ROW = 96
"""Working memory per partition row of one intersection pass
(:func:`dtri.analytics.count.count_group`)."""


def partition_csr_bytes(summary: PartitionSummary) -> int:
    """A sorted partition as CSR (:class:`dtri.kernels.csr.CSR`)."""
    if not summary.edges:
        return 8
    return csr_bytes(summary.edges, summary.last_src - summary.first_src + 1)


def csr_groups(summaries: Sequence[PartitionSummary], limit: int) -> list[tuple[int, int]]:
    """Consecutive partitions ``[first, last]`` grouped so that each group's CSR takes at most
    ``limit`` bytes (a partition larger than that is a group of its own), in order."""
    groups: list[tuple[int, int]] = []
    first, size = 0, 0
    for p, s in enumerate(summaries):
        need = partition_csr_bytes(s)
        if p > first and size + need > limit:
            groups.append((first, p - 1))
            first, size = p, 0
        size += need
    if summaries:
        groups.append((first, len(summaries) - 1))
    return groups


def chunk_rows(task_budget: int) -> int:
    """Partition rows per intersection pass under host staging."""
    return max(1, task_budget // TASK_SHARES.intersect_chunk // CHUNK_BYTES_PER_ROW)


def staged_plan(summaries: Sequence[PartitionSummary], vertices: int, *, workers: int,
                budget: Budget, backend: Backend) -> CountPlan:
    """The plan under host staging: the fused join, with groups of consecutive partitions as
    its bins (each group's CSR fits half a task's budget, :func:`csr_groups`). Partitions are
    source ranges already, so a group is made of whole partitions and no edge is re-cut;
    each ``dtri-count`` task moves one group to the device and, one at a time, the partitions
    of one worker whose targets reach it (``reach``).

    Estimates: ``count`` peak = the group's CSR + the largest other partition's CSR + one
    pass's working rows; moved = what the tasks copy from host to device (the group once per
    worker, every partition once per group it reaches)."""
    summaries = tuple(PartitionSummary(*s) for s in summaries)
    vertices = int(vertices)
    task_budget = budget.per_task
    bits = checked_key_bits(vertices)
    groups = csr_groups(summaries, task_budget // TASK_SHARES.count_group)
    bin_sources, bin_partitions, bin_edges = {}, {}, {}
    for k, (first, last) in enumerate(groups):
        filled = [s for s in summaries[first: last + 1] if s.edges]
        if not filled:
            continue
        bin_sources[k] = (filled[0].first_src, filled[-1].last_src + 1)
        bin_partitions[k] = tuple(range(first, last + 1))
        bin_edges[k] = sum(s.edges for s in filled)
    reach = tuple(tuple(k for k, (low, high) in bin_sources.items()
                        if s.wedges and reaches(s, low, high))
                  for s in summaries)
    csr = [partition_csr_bytes(s) for s in summaries]
    group_csr = {k: sum(csr[p] for p in bin_partitions[k]) for k in bin_sources}
    owners = max(workers, 1)  # each partition's owner (the exchanges')
    owned = [[p for p in range(len(summaries)) if partition_owner(p, owners) == w]
             for w in range(owners)]
    tasks = tuple(CountTask(k, w, own) for k in bin_sources for w in range(owners)
                  if (own := tuple(p for p in owned[w] if k in reach[p])))
    rows = min(chunk_rows(task_budget), max((s.edges for s in summaries), default=0))
    count = StageEstimate(
        tasks=len(tasks),
        peak_bytes=max((group_csr[k] + max(csr) + CHUNK_BYTES_PER_ROW * rows
                        for k in bin_sources), default=0),
        moved_bytes=sum(group_csr[t.group] for t in tasks)
        + sum(csr[p] for p in range(len(summaries)) for _ in reach[p]))
    estimates = {"count": count, "reduce": StageEstimate(
        tasks=reduce_task_count(len(tasks)),
        peak_bytes=BYTES_PER_COUNT * min(max(len(tasks), 1), REDUCE_FAN_IN),
        moved_bytes=BYTES_PER_COUNT * len(tasks) if workers > 1 else 0)}
    return CountPlan(
        vertices=vertices, edges=sum(s.edges for s in summaries),
        wedges=sum(s.wedges for s in summaries), backend=backend, workers=workers,
        budget=budget, bits=bits,
        nbins=len(groups), shift=0, src_shift=0, batch_size=0, summaries=summaries,
        strategy=("intersect",) * len(summaries), fallback=(), batches=(),
        bin_sources=bin_sources, bin_partitions=bin_partitions, reach=reach,
        bin_edges=bin_edges, estimates=estimates, staging="host", count_tasks=tasks,
        kernels=tuple(partition_kernel("intersect", backend, vertices) for _ in summaries))

"""Plan: bins, wedge batches and join strategy of the counting phase, with cost estimates.

:func:`build_plan` is a pure function of the partition summaries, the vertex count, the
session's facts (workers, threads, backend, the per-task budget) and the options (``bins``,
``join``); :func:`dtri.analytics.count.count` builds its task graph from the
:class:`CountPlan` it returns, and ``dtri count --explain`` prints it.

Wedge batches are sized per partition from its wedge profile
(:func:`dtri.kernels.csr.wedge_profile`): a batch of wedges reads only the rows around it, and
is as large as the per-task budget allows (and small enough that every thread gets work). A
vertex whose adjacency list cannot fit a task even with a single wedge stops the count here
(:class:`~dtri.errors.ListTooLongError`), before any wedge is written.

The estimates come from the sizes alone: a radix bin's edges assume that each partition's
edges spread evenly over its source ranks (:func:`estimated_bin_edges`); a task kind's peak
memory is that of its largest task, Dask's overheads not counted; bytes moved are an upper
bound that counts every input a task pulls as coming from another worker.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dask.utils import format_bytes

from dtri.analytics.bin_layout import (
    REDUCE_FAN_IN,
    bin_homes,
    bin_layout,
    bin_share,
    bins_reached,
    copy_partitions,
    csr_bytes,
    partitions_owned,
    reduce_task_count,
)
from dtri.errors import ListTooLongError
from dtri.kernels.bins import MAX_BIN_BITS, bin_shift, checked_key_bits, choose_bin_count
from dtri.kernels.compiled import NUMPY_JOIN
from dtri.kernels.csr import PartitionSummary
from dtri.kernels.dispatch import compiled_kernels_ready
from dtri.kernels.strategy import cpu_kernel, cpu_kernel_reason
from dtri.kernels.wedges import BYTES_PER_ROW, BYTES_PER_WEDGE, batch_bytes, list_bytes
from dtri.options import Backend
from dtri.runtime.budget import MAX_PLAN_TASKS, TASK_SHARES, Budget, max_plan_tasks

JOINS = ("auto", "wedges", "intersect")
INTERSECT_MIN_WEDGES = 0
"""With ``join="auto"``, CPU partitions with at least this many wedges use the fused join once
numba's kernels are ready (every partition, so that a plan does not mix the joins): its
``marks`` kernel beats the NumPy wedges join at every size (facebook_combined: 10 ms against
110 ms, docs/performance.md)."""
GPU_INTERSECT_MIN_WEDGES = 0
"""The same on the GPU: the fused join beats the materialising join at every size, down to
karate's 69 wedges (5.8 ms against 7.5 ms on one H100, in-process-h100.jsonl)."""
CPU_INTERSECT_MIN_WEDGES = 1 << 22
"""The same on the CPU while numba's kernels are not ready in this process
(:class:`dtri.kernels.compiled.KernelLoader`): loading them takes about 0.5-0.7 s on the
2-core machine, what the NumPy wedges join takes for about 4 M wedges (cpu-cold-2core.jsonl).
The wedges this process's NumPy join has joined already count towards it
(:data:`dtri.kernels.compiled.NUMPY_JOIN`), so a process that counts again and again loads
the kernels once the NumPy join has cost about as much."""

BYTES_PER_EDGE = 16
"""An edge of a sorted partition: ``src``, ``dst`` as int64."""
BYTES_PER_KEY = 8
"""A packed 64-bit key: an edge of an edge bin, or a wedge's closure key."""
BYTES_PER_COUNT = 8
"""A partial count passed to ``dtri-reduce``."""

BUDGET_SEARCH_LIMIT = 1 << 50
"""The largest task budget :func:`check_plan_tasks` tries before it gives up naming one."""

STAGES = ("edge-bins", "edge-keys", "wedges", "bins", "join", "intersect", "reduce")
"""Task kinds of the counting phase, as their Dask keys name them (``dtri-<stage>-...``)."""


def choose_join(join: str, backend: Backend, summary: PartitionSummary,
                compiled: bool | None = None) -> str:
    """``wedges`` (materialise closure keys, sort-free radix bins, sorted search) or
    ``intersect`` (fused list intersection, no wedge written) for one partition.

    ``auto``: the fused join once the prefix sums show enough wedges to pay for its start
    (the thresholds above); the materialising join below that, so that a small graph's first
    count starts at once. ``compiled``: whether numba's kernels are ready where the join runs
    (a cluster's workers have them, :mod:`dtri.runtime.cpu_worker`); ``None``: in this
    process (:func:`~dtri.kernels.dispatch.compiled_kernels_ready`).
    """
    if join not in JOINS:
        raise ValueError(f"join must be one of {JOINS}, got {join!r}")
    if join != "auto":
        return join
    if backend.on_gpu:
        return "intersect" if summary.wedges > GPU_INTERSECT_MIN_WEDGES else "wedges"
    if compiled_kernels_ready(summary.wedges) if compiled is None else compiled:
        return "intersect" if summary.wedges >= INTERSECT_MIN_WEDGES else "wedges"
    least = CPU_INTERSECT_MIN_WEDGES - NUMPY_JOIN.wedges
    return "intersect" if summary.wedges > least else "wedges"


def partition_kernel(strategy: str, backend: Backend, vertices: int) -> str:
    """The CPU kernel of a partition's fused join (:func:`dtri.kernels.strategy.cpu_kernel`:
    ``dtri.cpu-kernel``, else ``marks`` while a mark per vertex stays in a core's cache);
    ``""`` for the ``wedges`` join or on the GPU, whose kernels class each edge."""
    return "" if strategy != "intersect" or backend.on_gpu else cpu_kernel(vertices)


class WedgeBatch(NamedTuple):
    """One ``dtri-wedges`` task: wedges ``[first, last)`` of a partition, read from its rows
    ``[row_start, row_stop)`` (whole adjacency lists that hold every wedge of the batch),
    whose first row's first wedge is number ``wedge_base``."""

    partition: int
    batch: int
    first: int
    last: int
    row_start: int
    row_stop: int
    wedge_base: int

    @property
    def peak_bytes(self) -> int:
        """:func:`batch_bytes` of this batch."""
        return batch_bytes(self.row_stop - self.row_start, self.last - self.first)


def checkpoints(summary: PartitionSummary) -> tuple[Sequence[int], Sequence[int]]:
    """The wedge profile of a partition: list-start rows and the wedges before each; the
    whole partition as one interval when its summary has none."""
    if summary.checkpoint_rows:
        return summary.checkpoint_rows, summary.checkpoint_wedges
    return (0, summary.edges), (0, summary.wedges)


def partition_batches(partition: int, summary: PartitionSummary, task_budget: int,
                      max_wedges: int) -> list[WedgeBatch]:
    """A partition's wedges cut into consecutive batches, each as large as fits
    ``task_budget`` (:func:`batch_bytes` of the rows of the checkpoint intervals it touches)
    with at most ``max_wedges`` wedges.

    Wedges of one list that do not fit one task are split over several batches, each reading
    only that list when the profile isolates it (it does for lists of at least
    ``edges / PROFILE_POINTS`` rows and for the longest list). Where not even one wedge fits
    with the rows of its interval, the batch is sized as if it read only the longest list and
    its estimate shows it over budget.
    """
    rows, before = checkpoints(summary)
    batches: list[WedgeBatch] = []
    first = 0
    while first < summary.wedges:
        start = bisect_right(before, first) - 1  # the last checkpoint at or before ``first``
        last = first
        for stop in range(start + 1, len(rows)):
            room = task_budget - BYTES_PER_ROW * (rows[stop] - rows[start])
            if room < BYTES_PER_WEDGE:
                break
            end = min(before[stop], first + min(max_wedges, room // BYTES_PER_WEDGE))
            if end > max(first, before[stop - 1]):  # ends inside interval ``stop - 1``
                last = end
            if end < before[stop]:
                break
        if last == first:  # the profile is too coarse here for the budget
            room = task_budget - BYTES_PER_ROW * summary.max_out_degree
            last = min(before[start + 1],
                       first + max(1, min(max_wedges, room // BYTES_PER_WEDGE)))
        stop = bisect_left(before, last, start + 1)
        batches.append(WedgeBatch(partition, len(batches), first, last, rows[start],
                                  rows[stop], before[start]))
        first = last
    return batches


def check_lists_fit(summaries: Sequence[PartitionSummary], strategy: Sequence[str],
                    budget: Budget) -> None:
    """Refuse a budget in which the longest adjacency list of a ``wedges`` partition cannot
    fit one task with a single wedge (:func:`list_bytes`): no batching helps then."""
    lists = [s for p, s in enumerate(summaries) if strategy[p] == "wedges" and s.wedges]
    if not lists:
        return
    worst = max(lists, key=lambda s: s.max_out_degree)
    need = list_bytes(worst.max_out_degree)
    if need <= budget.per_task:
        return
    smallest = budget.per_worker_for(need)
    threads = f"{budget.threads} thread{'s' if budget.threads != 1 else ''}"
    raise ListTooLongError(
        f"memory budget too small: vertex rank {worst.max_out_source} has out-degree "
        f"{worst.max_out_degree}, and a dtri-wedges task over its list needs "
        f"{format_bytes(need)} ({worst.max_out_degree} rows x {BYTES_PER_ROW} B + one wedge x "
        f"{BYTES_PER_WEDGE} B), more than the {format_bytes(budget.per_task)} a task may use "
        f"(the memory budget over {threads} per worker); give --memory-budget {smallest} "
        f"({format_bytes(smallest)}) or more", rank=worst.max_out_source)


@dataclass(frozen=True)
class StageEstimate:
    """One task kind of the plan: how many tasks, the largest one's peak memory, the traffic."""

    tasks: int
    peak_bytes: int
    """Estimated peak memory of the largest task of this kind."""
    moved_bytes: int
    """Estimated bytes that the tasks of this kind pull from other workers (upper bound)."""


class CountTask(NamedTuple):
    """One ``dtri-count`` task of host staging: group ``group`` (a bin of the plan) against the
    partitions ``own`` of worker ``worker`` whose targets reach it."""

    group: int
    worker: int
    own: tuple[int, ...]


@dataclass(frozen=True)
class CountPlan:
    """What the counting phase will do, decided from the partition summaries alone.

    ``batches`` are the :class:`WedgeBatch` tasks of the partitions that use the ``wedges``
    join; ``fallback`` the partitions that ``join="auto"`` gives the ``wedges`` join because
    their ``intersect`` tasks would exceed the per-task budget; ``bin_sources`` maps each bin
    that holds an edge to its half-open range of source ranks and ``bin_partitions`` to the
    partitions that overlap it; ``reach`` lists, per partition, the bins its edges' targets
    can fall in. Treat the mappings as read-only.
    """

    vertices: int
    edges: int
    wedges: int
    backend: Backend
    workers: int
    budget: Budget
    """The run's memory budget, or the one a plan for fewer tasks tries
    (:func:`check_plan_tasks`)."""
    bits: int
    nbins: int
    shift: int
    src_shift: int
    batch_size: int
    """Wedges of the largest batch."""
    summaries: tuple[PartitionSummary, ...] = field(repr=False)
    strategy: tuple[str, ...]
    fallback: tuple[int, ...]
    batches: tuple[WedgeBatch, ...] = field(repr=False)
    bin_sources: dict[int, tuple[int, int]]
    bin_partitions: dict[int, tuple[int, ...]]
    reach: tuple[tuple[int, ...], ...]
    bin_edges: dict[int, int] = field(repr=False)
    """Estimated edges per bin (even spread of sources, see :func:`estimated_bin_edges`)."""
    estimates: dict[str, StageEstimate] = field(repr=False)
    kernels: tuple[str, ...] = ()
    """Per partition, the CPU kernel of its fused join (:func:`partition_kernel`): ``marks``,
    ``hash`` or ``search``; ``""`` where it has none (the ``wedges`` join, or the GPU)."""
    staging: str = "device"
    """``host``: stage results live in host memory and the join runs per group of consecutive
    partitions (the bins are those groups: :func:`staged_plan`); ``device``: radix bins."""
    count_tasks: tuple[CountTask, ...] = field(default=(), repr=False)
    """Host staging's ``dtri-count`` tasks (empty otherwise)."""
    alone: dict[int, int] = field(default_factory=dict, repr=False)
    """Device staging: the bins that are one partition, each with that partition (a bin
    holding the sources of one partition only, which lies in no other bin: nothing is
    built, the partition is the bin; :func:`bin_homes`)."""
    builders: dict[int, tuple[int, ...]] = field(default_factory=dict, repr=False)
    """Device staging: the workers (by number) that build their own copy of each other bin
    that a partition's edges reach (:func:`bin_homes`)."""
    copy_parts: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict,
                                                               repr=False)
    """Device staging: for each copy ``(bin, worker)`` of :attr:`builders`, the partitions
    whose slices it is built from, those that hold sources its readers' edges can reach
    (:func:`copy_partitions`)."""

    @property
    def partitions(self) -> int:
        return len(self.summaries)

    @property
    def join(self) -> str:
        """The joins used, ``+``-joined (``wedges`` when there is nothing to join)."""
        return "+".join(sorted(set(self.strategy))) or "wedges"

    @property
    def kernel(self) -> str:
        """The CPU kernels of the fused join, ``+``-joined (``""``: none)."""
        return "+".join(sorted(set(self.kernels) - {""}))

    @property
    def task_budget(self) -> int:
        """Bytes one task may plan for."""
        return self.budget.per_task

    @property
    def threads_per_worker(self) -> int:
        return self.budget.threads

    @property
    def memory_budget(self) -> int:
        """Bytes one worker may plan for."""
        return self.budget.per_worker

    @property
    def needs_edge_keys(self) -> bool:
        """Whether any batch joins against the edge bins' keys."""
        return bool(self.batches)

    @property
    def owned(self) -> bool:
        """:func:`partitions_owned` for this plan's partitions and workers."""
        return partitions_owned(self.partitions, self.workers)

    @property
    def needs_csr(self) -> bool:
        """Whether any partition uses the fused join (against the edge bins' CSRs)."""
        return "intersect" in self.strategy

    @property
    def tasks(self) -> int:
        """The tasks of the plan, of every kind."""
        return sum(e.tasks for e in self.estimates.values())

    @property
    def peak_bytes(self) -> int:
        """Estimated peak memory of the largest task of any kind."""
        return max((e.peak_bytes for e in self.estimates.values()), default=0)

    @property
    def moved_bytes(self) -> int:
        """Estimated bytes moved between workers in all (upper bound, ignores locality)."""
        return sum(e.moved_bytes for e in self.estimates.values())

    def over_budget(self) -> list[str]:
        """Task kinds whose largest task is estimated above the per-task budget."""
        return [stage for stage, e in self.estimates.items() if e.peak_bytes > self.task_budget]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (per partition and per stage, not every batch)."""
        batches = [0] * self.partitions
        for p, *_ in self.batches:
            batches[p] += 1
        return {
            "vertices": self.vertices, "edges": self.edges, "wedges": self.wedges,
            "backend": self.backend, "workers": self.workers,
            "threads_per_worker": self.threads_per_worker,
            "task_budget": self.task_budget, "memory_budget": self.memory_budget,
            "bits": self.bits, "bins": self.nbins, "bins_with_edges": len(self.bin_sources),
            "shift": self.shift, "src_shift": self.src_shift, "batch_size": self.batch_size,
            "batches": len(self.batches), "join": self.join, "kernel": self.kernel,
            "kernel_reason": cpu_kernel_reason(self.kernel, self.vertices) if self.kernel else "",
            "batch_rows": max((b.row_stop - b.row_start for b in self.batches), default=0),
            "fallback": list(self.fallback),
            "partitions": [
                {"edges": s.edges, "wedges": s.wedges, "first_src": s.first_src,
                 "last_src": s.last_src, "max_out_degree": s.max_out_degree,
                 "max_out_source": s.max_out_source, "join": self.strategy[p],
                 "kernel": self.kernels[p] if self.kernels else "",
                 "batches": batches[p], "bins_reached": len(self.reach[p])}
                for p, s in enumerate(self.summaries)
            ],
            "stages": {stage: {"tasks": e.tasks, "peak_bytes": e.peak_bytes,
                               "moved_bytes": e.moved_bytes}
                       for stage, e in self.estimates.items()},
            "peak_bytes": self.peak_bytes, "moved_bytes": self.moved_bytes,
            "over_budget": self.over_budget(), "staging": self.shown_staging,
        }

    @property
    def shown_staging(self) -> str:
        """Where the plan's stage results wait, as reported: ``none`` on the CPU backend
        without host staging (no device: they wait in the workers' memory; it had said
        ``device``)."""
        return "none" if not self.backend.on_gpu and self.staging != "host" else self.staging


def build_plan(summaries: Sequence[PartitionSummary], vertices: int, *, workers: int,
               budget: Budget, backend: Backend, bins: int | None = None,
               join: str = "auto", compiled: bool | None = None) -> CountPlan:
    """The plan of the counting phase (pure: sizes in, decisions and estimates out).

    ``budget``: what one task may plan for is its :attr:`~dtri.runtime.budget.Budget.per_task`.
    Each partition's batches are as large as fits the budget (:func:`partition_batches`),
    and small enough that there are at least two per thread of the cluster, so that every
    core has work. With ``join="auto"``, a partition whose fused-join tasks would exceed the
    budget takes the ``wedges`` join, whose batches shrink with the budget, and one whose
    longest list no ``wedges`` batch can hold takes the fused join. Raises
    :class:`~dtri.errors.ListTooLongError` when an adjacency list of a ``wedges``
    partition cannot fit one ``dtri-wedges`` task (:func:`check_lists_fit`).
    """
    summaries = tuple(PartitionSummary(*s) for s in summaries)
    vertices = int(vertices)
    task_budget = budget.per_task
    edge_count = sum(s.edges for s in summaries)
    wedge_count = sum(s.wedges for s in summaries)

    bits = checked_key_bits(vertices)
    spread = 1 if partitions_owned(len(summaries), workers) else workers
    nbins = choose_bin_count(edge_count, spread, task_budget, bins, bits, TASK_SHARES.edge_bin)
    src_shift, bin_sources, bin_partitions, bin_edges = bin_layout(summaries, vertices, bits,
                                                                   nbins)
    # Bins split the source ranks evenly, but the oriented edges crowd into some ranks (the
    # higher degrees): double the bins until the fullest bin's estimate fits too.
    while (bins is None and nbins < 1 << min(bits, MAX_BIN_BITS)
           and TASK_SHARES.edge_bin * BYTES_PER_KEY * max(bin_edges.values(), default=0)
           > task_budget):
        nbins *= 2
        src_shift, bin_sources, bin_partitions, bin_edges = bin_layout(summaries, vertices,
                                                                       bits, nbins)
    shift = bin_shift(bits, nbins)
    reach = bins_reached(summaries, bin_sources)

    strategy = [choose_join(join, backend, s, compiled) for s in summaries]
    fallback = tuple(p for p, s in enumerate(summaries)
                     if join == "auto" and strategy[p] == "intersect" and s.wedges
                     and _intersect_peak(s, reach[p], bin_sources, bin_edges) > task_budget)
    for p in fallback:
        strategy[p] = "wedges"
    for p, s in enumerate(summaries):  # a list no wedge batch holds: the fused join, if it fits
        if (join == "auto" and strategy[p] == "wedges" and p not in fallback and s.wedges
                and list_bytes(s.max_out_degree) > task_budget
                and _intersect_peak(s, reach[p], bin_sources, bin_edges) <= task_budget):
            strategy[p] = "intersect"
    if bins is None and all(strategy[p] == "intersect" for p, s in enumerate(summaries)
                            if s.wedges):
        # the fused join passes over a partition's edges once per bin it reaches: the fewest
        # bins whose tasks fit (the keys' rule above sizes bins for the wedges join)
        fewest = fewest_fused_bins(summaries, vertices, bits, spread, task_budget, nbins)
        if fewest < nbins:
            nbins = fewest
            src_shift, bin_sources, bin_partitions, bin_edges = bin_layout(
                summaries, vertices, bits, nbins)
            shift = bin_shift(bits, nbins)
            reach = bins_reached(summaries, bin_sources)
    check_lists_fit(summaries, strategy, budget)
    slots = 2 * workers * budget.threads
    max_wedges = max(1, -(-sum(s.wedges for p, s in enumerate(summaries)
                               if strategy[p] == "wedges") // slots))
    batches = tuple(batch for p, s in enumerate(summaries) if strategy[p] == "wedges"
                    for batch in partition_batches(p, s, task_budget, max_wedges))
    batch_size = max((b.last - b.first for b in batches), default=0)

    alone, builders = bin_homes(summaries, bin_partitions, reach, workers)
    copy_parts = copy_partitions(summaries, bin_sources, bin_partitions, reach, builders,
                                 workers)
    estimates = _estimate(summaries, tuple(strategy), batches, bin_sources, alone, copy_parts,
                          reach, bin_edges, workers)
    return CountPlan(
        vertices=vertices, edges=edge_count, wedges=wedge_count, backend=backend,
        workers=workers, budget=budget, bits=bits, nbins=nbins, shift=shift,
        src_shift=src_shift, batch_size=batch_size,
        summaries=summaries, strategy=tuple(strategy), fallback=fallback, batches=batches,
        bin_sources=bin_sources, bin_partitions=bin_partitions, reach=reach,
        bin_edges=bin_edges, estimates=estimates,
        kernels=tuple(partition_kernel(j, backend, vertices) for j in strategy),
        alone=alone, builders=builders, copy_parts=copy_parts,
    )


def fewest_fused_bins(summaries: Sequence[PartitionSummary], vertices: int, bits: int,
                      spread: int, task_budget: int, most: int) -> int:
    """The fewest bins (a power of two, at most ``most``; four per worker where the bins
    spread the work over ``spread`` workers) where every partition's fused-join task and the
    building of every bin (its slices and its CSR) fit ``task_budget``."""
    nbins = 4 * spread if spread > 1 else 1
    while nbins < most:
        _, bin_sources, _, bin_edges = bin_layout(summaries, vertices, bits, nbins)
        built = max((2 * csr_bytes(bin_edges[k], high - low)
                     for k, (low, high) in bin_sources.items()), default=0)
        joined = max((_intersect_peak(s, reached, bin_sources, bin_edges) for s, reached in
                      zip(summaries, bins_reached(summaries, bin_sources), strict=True)),
                     default=0)
        if max(built, joined) <= task_budget:
            return nbins
        nbins *= 2
    return most


def _intersect_peak(summary: PartitionSummary, reached: tuple[int, ...],
                    bin_sources: dict[int, tuple[int, int]], bin_edges: dict[int, int]) -> int:
    """Estimated peak of a partition's largest ``dtri-intersect`` task: the partition and
    the largest bin it reaches, as CSR."""
    return BYTES_PER_EDGE * summary.edges + max(
        (csr_bytes(bin_edges[k], bin_sources[k][1] - bin_sources[k][0]) for k in reached),
        default=0)


def _estimate(summaries: tuple[PartitionSummary, ...], strategy: tuple[str, ...],
              batches: tuple[WedgeBatch, ...],
              bin_sources: dict[int, tuple[int, int]], alone: dict[int, int],
              copy_parts: dict[tuple[int, int], tuple[int, ...]],
              reach: tuple[tuple[int, ...], ...],
              bin_edges: dict[int, int], workers: int) -> dict[str, StageEstimate]:
    """Tasks, largest task's peak memory and bytes pulled from other workers, per task kind.

    * ``edge-bins``: one task per copy of a bin (:func:`bin_homes`); peak = the bin as CSR
      (int32 targets, int64 offsets per source) and its slices, twice the CSR; pulls the
      slices it is built from (:func:`copy_partitions`): their shares of the bin's edges
      (:func:`bin_share`), as CSR.
    * ``edge-keys``: (the wedges join) peak = the bin as CSR + its packed keys (× 8); local to
      its edge bin; one per copy of a bin, and one per bin that is a partition.
    * ``wedges``: peak = the batch's rows × ``BYTES_PER_ROW`` (32) + its wedges ×
      ``BYTES_PER_WEDGE`` (96) (:func:`batch_bytes`): it reads only the rows of the
      checkpoint intervals its wedges lie in, cut from the partition where the partition
      lives; pulls those rows (× 16) unless every worker owns a partition (then it runs on
      its partition's owner).
    * ``bins``: one bin of a batch, picked where the batch lives; peak ≤ the batch's keys.
    * ``join``: peak = the bin's closure keys (≤ the batch's, × 8) + the bin's edge keys;
      pulls both: every batch's closure keys once in all (wedges × 8) and one edge bin per
      task, unless every worker owns a partition (then it joins its worker's copy of the
      bin, and pulls only a bin that is another worker's partition).
    * ``intersect``: peak = partition edges × 16 + the bin as CSR; pulls the bin and the
      partition, unless every worker owns a partition (then tasks run on its owner, beside
      its copy of the bin: as ``join``).
    * ``reduce``: counts only.
    """
    remote = 1 if workers > 1 else 0  # one worker: nothing moves
    owned = partitions_owned(len(summaries), workers)
    keys = {k: BYTES_PER_KEY * n for k, n in bin_edges.items()}
    csr = {k: csr_bytes(n, bin_sources[k][1] - bin_sources[k][0]) for k, n in bin_edges.items()}
    part = [BYTES_PER_EDGE * s.edges for s in summaries]
    uses_csr = "intersect" in strategy
    estimates: dict[str, StageEstimate] = {}

    binned = bool(batches) or uses_csr
    copies = [k for k, _ in copy_parts]
    built = sum(csr_bytes(math.ceil(sum(bin_share(summaries[p], bin_sources[k])[0]
                                        for p in parts)),
                          bin_sources[k][1] - bin_sources[k][0])
                for (k, _), parts in copy_parts.items())
    estimates["edge-bins"] = StageEstimate(
        tasks=len(copies) if binned else 0,
        peak_bytes=2 * max((csr[k] for k in copies), default=0) if binned else 0,
        moved_bytes=remote * built if binned else 0,
    )

    def pulled(k: int) -> bool:
        """Whether a join task pulls bin ``k`` (upper bound): not where it has its own."""
        return not owned or k in alone

    estimates["edge-keys"] = StageEstimate(
        tasks=len(copies) + len(alone) if batches else 0,
        peak_bytes=max((keys[k] + csr[k] for k in bin_sources), default=0) if batches else 0,
        moved_bytes=0,
    )
    estimates["wedges"] = StageEstimate(
        tasks=len(batches), peak_bytes=max((b.peak_bytes for b in batches), default=0),
        moved_bytes=0 if owned else remote * sum(BYTES_PER_EDGE * (b.row_stop - b.row_start)
                                                 for b in batches),
    )
    pairs = [(b.partition, b.first, b.last, k) for b in batches for k in reach[b.partition]]
    estimates["bins"] = StageEstimate(
        tasks=len(pairs),
        peak_bytes=max((BYTES_PER_KEY * (last - first) for _, first, last, _ in pairs),
                       default=0),
        moved_bytes=0,
    )
    estimates["join"] = StageEstimate(
        tasks=len(pairs),
        peak_bytes=max((BYTES_PER_KEY * (last - first) + keys[k]
                        for _, first, last, k in pairs), default=0),
        moved_bytes=remote * (sum(BYTES_PER_KEY * (b.last - b.first) for b in batches)
                              + sum(keys[k] for *_, k in pairs if pulled(k))),
    )
    fused = [(p, k) for p, s in enumerate(summaries)
             if strategy[p] == "intersect" and s.wedges for k in reach[p]]
    estimates["intersect"] = StageEstimate(
        tasks=len(fused),
        peak_bytes=max((part[p] + csr[k] for p, k in fused), default=0),  # _intersect_peak
        moved_bytes=remote * sum(csr[k] * pulled(k) + (0 if owned else part[p])
                                 for p, k in fused),
    )
    counts = len(pairs) + len(fused)
    estimates["reduce"] = StageEstimate(
        tasks=reduce_task_count(counts), peak_bytes=BYTES_PER_COUNT * min(max(counts, 1),
                                                                          REDUCE_FAN_IN),
        moved_bytes=remote * BYTES_PER_COUNT * counts,
    )
    return estimates


def check_plan_tasks(plan: CountPlan, plan_for: Any) -> None:
    """Refuse a plan of more tasks than :func:`max_plan_tasks` in one line, naming the least
    ``--memory-budget`` (per worker) whose plan has few enough: ``plan_for(budget)`` plans
    the same graph again, at budgets doubling from the plan's."""
    ceiling = max_plan_tasks()
    if plan.tasks <= ceiling:
        return
    from dtri.errors import ConfigurationError

    budget, tasks = plan.budget, plan.tasks
    while tasks > ceiling and budget.per_task < BUDGET_SEARCH_LIMIT:
        budget = budget.for_task(2 * budget.per_task)
        try:
            tasks = plan_for(budget).tasks
        except ListTooLongError:
            continue
    why = (f"the count's plan has {plan.tasks:,} tasks under a memory budget of "
           f"{format_bytes(plan.memory_budget)} a worker, more than {MAX_PLAN_TASKS} = "
           f"{ceiling:,}: scheduling them would take longer than the count")
    if tasks > ceiling:
        raise ConfigurationError(f"{why}; raise {MAX_PLAN_TASKS}")
    raise ConfigurationError(f"{why}; give --memory-budget "
                             f"{format_bytes(budget.per_worker)} or more "
                             f"({tasks:,} tasks), or raise {MAX_PLAN_TASKS}")

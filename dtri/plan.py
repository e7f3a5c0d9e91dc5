"""Plan: bins, wedge batches and join strategy of the counting phase, with cost estimates.

Pipeline order: after the sort (whose :class:`~dtri.sort.PartitionSummary` list it reads),
before the wedges. :func:`build_plan` is a pure function of the partition summaries, the
vertex count, the session's facts (workers, threads per worker, backend, the per-task memory
budget) and the options (``bins``, ``join``); :func:`dtri.pipeline.count_pipeline` builds its
task graph from the :class:`CountPlan` it returns, and ``dtri count --explain`` prints it.

The estimates come from the sizes alone, before any wedge or edge bin exists:

* the edges of each radix bin are not known until the edge bins are built, so they are
  estimated by assuming that each partition's edges spread evenly over the source ranks of
  its ``[first_src, last_src]`` range (:func:`estimated_bin_edges`);
* the peak memory of a task kind is that of its largest task (inputs, output and the working
  arrays named below); Dask's own overheads and the memory of persisted stages are not counted;
* bytes moved between workers are an upper bound that ignores locality: every input a task
  pulls is counted as if it came from another worker (nothing moves with one worker).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dtri.bins import bin_shift, checked_key_bits, choose_bin_count
from dtri.sort import PartitionSummary
from dtri.wedges import BYTES_PER_WEDGE, batch_ranges

REDUCE_FAN_IN = 32
JOINS = ("auto", "wedges", "intersect")
INTERSECT_MIN_WEDGES = 1 << 20
"""With ``join="auto"`` on the GPU, partitions with more wedges than this use the fused join."""

BYTES_PER_EDGE = 16
"""An edge of a sorted partition: ``src``, ``dst`` as int64."""
BYTES_PER_KEY = 8
"""A packed 64-bit key: an edge of an edge bin, or a wedge's closure key."""
BYTES_PER_COUNT = 8
"""A partial count passed to ``dtri-reduce``."""

STAGES = ("edge-bins", "edge-csr", "wedges", "bins", "join", "intersect", "reduce")
"""Task kinds of the counting phase, as their Dask keys name them (``dtri-<stage>-...``)."""


def choose_join(join: str, backend: str, summary: PartitionSummary) -> str:
    """``wedges`` (materialise closure keys, sort-free radix bins, sorted search) or
    ``intersect`` (fused list intersection, no wedge written) for one partition.

    ``auto``: the fused CUDA kernel on the GPU once the prefix sums show enough wedges to pay
    for its launches; the materialising join on the CPU, where its vectorised sorted search
    beats the vectorised intersection.
    """
    if join not in JOINS:
        raise ValueError(f"join must be one of {JOINS}, got {join!r}")
    if join != "auto":
        return join
    return "intersect" if backend == "gpu" and summary.wedges > INTERSECT_MIN_WEDGES else "wedges"


def partitions_owned(partitions: int, workers: int) -> bool:
    """Whether every worker owns a sorted partition. Then each partition's counting tasks run
    on its owner (its work is spread already, by the sort's source ranges) and bins only bound
    memory; with fewer partitions than workers, bins spread the work and Dask places it."""
    return partitions >= workers


@dataclass(frozen=True)
class StageEstimate:
    """One task kind of the plan: how many tasks, the largest one's peak memory, the traffic."""

    tasks: int
    peak_bytes: int
    """Estimated peak memory of the largest task of this kind."""
    moved_bytes: int
    """Estimated bytes that the tasks of this kind pull from other workers (upper bound)."""


@dataclass(frozen=True)
class CountPlan:
    """What the counting phase will do, decided from the partition summaries alone.

    ``batches`` are ``(partition, batch, first_wedge, last_wedge)`` of the partitions that
    use the ``wedges`` join; ``bin_sources`` maps each bin that holds an edge to its half-open
    range of source ranks and ``bin_partitions`` to the partitions that overlap it; ``reach``
    lists, per partition, the bins its edges' targets can fall in. Treat the mappings as
    read-only.
    """

    vertices: int
    edges: int
    wedges: int
    backend: str
    workers: int
    threads_per_worker: int
    task_budget: int
    bits: int
    nbins: int
    shift: int
    src_shift: int
    batch_size: int
    summaries: tuple[PartitionSummary, ...]
    strategy: tuple[str, ...]
    batches: tuple[tuple[int, int, int, int], ...]
    bin_sources: dict[int, tuple[int, int]]
    bin_partitions: dict[int, tuple[int, ...]]
    reach: tuple[tuple[int, ...], ...]
    bin_edges: dict[int, int] = field(repr=False)
    """Estimated edges per bin (even spread of sources, see :func:`estimated_bin_edges`)."""
    estimates: dict[str, StageEstimate] = field(repr=False)

    @property
    def partitions(self) -> int:
        return len(self.summaries)

    @property
    def join(self) -> str:
        """The joins used, ``+``-joined (``wedges`` when there is nothing to join)."""
        return "+".join(sorted(set(self.strategy))) or "wedges"

    @property
    def memory_budget(self) -> int:
        """Bytes per worker the plan used: the task budget times the worker's threads."""
        return self.task_budget * self.threads_per_worker

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
        """Whether any partition uses the fused join (the edge bins as CSR)."""
        return "intersect" in self.strategy

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
            "batches": len(self.batches), "join": self.join,
            "partitions": [
                {"edges": s.edges, "wedges": s.wedges, "first_src": s.first_src,
                 "last_src": s.last_src, "join": self.strategy[p], "batches": batches[p],
                 "bins_reached": len(self.reach[p])}
                for p, s in enumerate(self.summaries)
            ],
            "stages": {stage: {"tasks": e.tasks, "peak_bytes": e.peak_bytes,
                               "moved_bytes": e.moved_bytes}
                       for stage, e in self.estimates.items()},
            "peak_bytes": self.peak_bytes, "moved_bytes": self.moved_bytes,
            "over_budget": self.over_budget(),
        }


def estimated_bin_edges(summaries: Sequence[PartitionSummary],
                        bin_sources: dict[int, tuple[int, int]],
                        src_shift: int) -> dict[int, int]:
    """Edges per bin, estimated before the bins exist: each partition's edges are assumed to
    spread evenly over the source ranks of its ``[first_src, last_src]`` range; a bin gets
    each partition's share of its range (rounded up)."""
    share: dict[int, float] = dict.fromkeys(bin_sources, 0.0)
    for s in summaries:
        if not s.edges:
            continue
        span = s.last_src - s.first_src + 1
        for k in range(s.first_src >> src_shift, (s.last_src >> src_shift) + 1):
            if k not in bin_sources:
                continue
            low, high = bin_sources[k]
            overlap = min(high, s.last_src + 1) - max(low, s.first_src)
            if overlap > 0:
                share[k] += s.edges * overlap / span
    return {k: math.ceil(round(v, 6)) for k, v in share.items()}


def csr_bytes(edges: int, sources: int) -> int:
    """An edge bin as CSR: int32 targets and int64 offsets over its source range."""
    return 4 * edges + 8 * (sources + 1)


def reduce_task_count(counts: int) -> int:
    """``dtri-reduce`` tasks of a tree of fan-in ``REDUCE_FAN_IN`` over ``counts`` counts."""
    tasks, level = 0, 0
    while counts > 1 or level == 0:
        counts = -(-max(counts, 1) // REDUCE_FAN_IN)
        tasks += counts
        level += 1
    return tasks


def build_plan(summaries: Sequence[PartitionSummary], vertices: int, *, workers: int,
               threads_per_worker: int, backend: str, task_budget: int,
               bins: int | None = None, join: str = "auto") -> CountPlan:
    """The plan of the counting phase (pure: sizes in, decisions and estimates out).

    ``task_budget``: bytes one task may plan for (:meth:`dtri.session.Session.task_budget`).
    Batches are at most ``task_budget // BYTES_PER_WEDGE`` wedges, and small enough that
    there are at least two per thread of the cluster, so that every core has work.
    """
    summaries = tuple(PartitionSummary(*s) for s in summaries)
    vertices = int(vertices)
    edge_count = sum(s.edges for s in summaries)
    wedge_count = sum(s.wedges for s in summaries)

    bits = checked_key_bits(vertices)
    spread = 1 if partitions_owned(len(summaries), workers) else workers
    nbins = choose_bin_count(edge_count, spread, task_budget, bins, bits)
    shift = bin_shift(bits, nbins)
    slots = 2 * workers * threads_per_worker
    batch_size = max(1, min(task_budget // BYTES_PER_WEDGE, -(-wedge_count // slots)))
    strategy = tuple(choose_join(join, backend, s) for s in summaries)
    batches = tuple((p, j, first, last)
                    for p, s in enumerate(summaries) if strategy[p] == "wedges"
                    for j, (first, last) in enumerate(batch_ranges(s.wedges, batch_size)))

    src_shift = bits - (nbins.bit_length() - 1)
    bin_sources: dict[int, tuple[int, int]] = {}  # bins that hold any edge
    bin_partitions: dict[int, tuple[int, ...]] = {}
    for k in range(nbins):
        low, high = k << src_shift, min((k + 1) << src_shift, vertices)
        overlapping = tuple(p for p, s in enumerate(summaries)
                            if s.edges and s.first_src < high and s.last_src >= low)
        if overlapping:
            bin_sources[k] = (low, high)
            bin_partitions[k] = overlapping
    # bins that targets of a partition's edges can fall in (targets > first source)
    reach = tuple(tuple(k for k, (low, high) in bin_sources.items()
                        if high > s.first_src + 1 and low <= s.last_dst)
                  for s in summaries)
    bin_edges = estimated_bin_edges(summaries, bin_sources, src_shift)
    estimates = _estimate(summaries, strategy, batches, bin_sources, bin_partitions, reach,
                          bin_edges, workers)
    return CountPlan(
        vertices=vertices, edges=edge_count, wedges=wedge_count, backend=backend,
        workers=workers, threads_per_worker=threads_per_worker, task_budget=task_budget,
        bits=bits, nbins=nbins, shift=shift, src_shift=src_shift, batch_size=batch_size,
        summaries=summaries, strategy=strategy, batches=batches, bin_sources=bin_sources,
        bin_partitions=bin_partitions, reach=reach, bin_edges=bin_edges, estimates=estimates,
    )


def _estimate(summaries: tuple[PartitionSummary, ...], strategy: tuple[str, ...],
              batches: tuple[tuple[int, int, int, int], ...],
              bin_sources: dict[int, tuple[int, int]],
              bin_partitions: dict[int, tuple[int, ...]], reach: tuple[tuple[int, ...], ...],
              bin_edges: dict[int, int], workers: int) -> dict[str, StageEstimate]:
    """Tasks, largest task's peak memory and bytes pulled from other workers, per task kind.

    * ``edge-bins``: peak = bin edges × 8 (its packed keys); pulls its slices of the
      partitions that overlap it, its keys × 8.
    * ``edge-csr``: peak = bin keys + the bin as CSR (int32 targets, int64 offsets per
      source), about twice the keys; local to its edge bin.
    * ``wedges``: peak = batch wedges × ``BYTES_PER_WEDGE`` + its partition's edges × 16;
      pulls its partition.
    * ``bins``: one bin of a batch, picked where the batch lives; peak ≤ the batch's keys.
    * ``join``: peak = the bin's closure keys (≤ the batch's, × 8) + the bin's edge keys;
      pulls both: every batch's closure keys once in all (wedges × 8) and one edge bin per
      task.
    * ``intersect``: peak = partition edges × 16 + the bin as CSR; pulls the bin, and the
      partition too unless every worker owns a partition (then tasks run on its owner).
    * ``reduce``: counts only.
    """
    remote = 1 if workers > 1 else 0  # one worker: nothing moves
    owned = partitions_owned(len(summaries), workers)
    keys = {k: BYTES_PER_KEY * n for k, n in bin_edges.items()}
    csr = {k: csr_bytes(n, bin_sources[k][1] - bin_sources[k][0]) for k, n in bin_edges.items()}
    part = [BYTES_PER_EDGE * s.edges for s in summaries]
    uses_csr = "intersect" in strategy
    estimates: dict[str, StageEstimate] = {}

    estimates["edge-bins"] = StageEstimate(
        tasks=len(bin_sources) if batches or uses_csr else 0,
        peak_bytes=max(keys.values(), default=0) if batches or uses_csr else 0,
        moved_bytes=remote * sum(keys.values()) if batches or uses_csr else 0,
    )
    estimates["edge-csr"] = StageEstimate(
        tasks=len(bin_sources) if uses_csr else 0,
        peak_bytes=max((keys[k] + csr[k] for k in bin_sources), default=0) if uses_csr else 0,
        moved_bytes=0,
    )
    wedges_peak = max((BYTES_PER_WEDGE * (last - first) + part[p]
                       for p, _, first, last in batches), default=0)
    estimates["wedges"] = StageEstimate(
        tasks=len(batches), peak_bytes=wedges_peak,
        moved_bytes=remote * sum(part[p] for p, *_ in batches),
    )
    pairs = [(p, first, last, k) for p, _, first, last in batches for k in reach[p]]
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
        moved_bytes=remote * (sum(BYTES_PER_KEY * (last - first) for _, _, first, last in batches)
                              + sum(keys[k] for *_, k in pairs)),
    )
    fused = [(p, k) for p, s in enumerate(summaries)
             if strategy[p] == "intersect" and s.wedges for k in reach[p]]
    estimates["intersect"] = StageEstimate(
        tasks=len(fused),
        peak_bytes=max((part[p] + csr[k] for p, k in fused), default=0),
        moved_bytes=remote * sum(csr[k] + (0 if owned else part[p]) for p, k in fused),
    )
    counts = len(pairs) + len(fused)
    estimates["reduce"] = StageEstimate(
        tasks=reduce_task_count(counts), peak_bytes=BYTES_PER_COUNT * min(max(counts, 1),
                                                                          REDUCE_FAN_IN),
        moved_bytes=remote * BYTES_PER_COUNT * counts,
    )
    return estimates

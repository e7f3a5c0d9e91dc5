"""Where the counting phase's radix bins live: the bin of each closure key range, the
partitions each bin reaches, the workers that hold them, and the copies of partitions a bin
needs where it is joined (:func:`dtri.analytics.plan.build_plan` lays them out)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from dtri.kernels.csr import PartitionSummary
from dtri.runtime.tasks import partition_owner

REDUCE_FAN_IN = 32


def reaches(summary: PartitionSummary, low: int, high: int) -> bool:
    """Whether the targets of a partition's edges can fall in the sources ``[low, high)``:
    a target lies above its partition's first source, and at most at its largest target."""
    return high > summary.first_src + 1 and low <= summary.last_dst


def bins_reached(summaries: Sequence[PartitionSummary],
                 bin_sources: dict[int, tuple[int, int]]) -> tuple[tuple[int, ...], ...]:
    """For each partition, the bins (ascending) whose sources its edges' targets can reach
    (:func:`reaches`)."""
    return tuple(tuple(k for k, (low, high) in bin_sources.items() if reaches(s, low, high))
                 for s in summaries)


def partitions_owned(partitions: int, workers: int) -> bool:
    """Whether every worker owns a sorted partition. Then each partition's counting tasks run
    on its owner (its work is spread already, by the sort's source ranges) and bins only bound
    memory; with fewer partitions than workers, bins spread the work and Dask places it."""
    return partitions >= workers


def bin_layout(summaries: Sequence[PartitionSummary], vertices: int, bits: int, nbins: int,
               ) -> tuple[int, dict[int, tuple[int, int]], dict[int, tuple[int, ...]],
                          dict[int, int]]:
    """The edge bins of ``nbins`` even source-rank ranges: the shift from a source to its
    bin, and for the bins that hold any edge their source range, the partitions that
    overlap it and their estimated edges (:func:`estimated_bin_edges`)."""
    src_shift = bits - (nbins.bit_length() - 1)
    overlapping: dict[int, list[int]] = {}
    for p, s in enumerate(summaries):  # only the bins some partition overlaps
        if s.edges:
            for k in range(s.first_src >> src_shift, (s.last_src >> src_shift) + 1):
                overlapping.setdefault(k, []).append(p)
    bin_sources = {k: (k << src_shift, min((k + 1) << src_shift, vertices))
                   for k in sorted(overlapping)}
    bin_partitions = {k: tuple(sorted(overlapping[k])) for k in bin_sources}
    return src_shift, bin_sources, bin_partitions, estimated_bin_edges(summaries, bin_sources,
                                                                       src_shift)


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
        for k in range(s.first_src >> src_shift, (s.last_src >> src_shift) + 1):
            if k in bin_sources:
                share[k] += bin_share(s, bin_sources[k])[0]
    return {k: math.ceil(round(v, 6)) for k, v in share.items()}


def bin_share(summary: PartitionSummary, sources: tuple[int, int]) -> tuple[float, int]:
    """A partition's estimated edges among the sources ``[low, high)`` of a bin, its edges
    taken to spread evenly over its source ranks, and the source ranks the two share."""
    low, high = sources
    overlap = max(min(high, summary.last_src + 1) - max(low, summary.first_src), 0)
    span = summary.last_src - summary.first_src + 1
    return (summary.edges * overlap / span if summary.edges else 0.0), overlap


def bin_homes(summaries: Sequence[PartitionSummary], bin_partitions: dict[int, tuple[int, ...]],
              reach: tuple[tuple[int, ...], ...], workers: int,
              ) -> tuple[dict[int, int], dict[int, tuple[int, ...]]]:
    """Where the edge bins come from: the bins that are one partition (``alone``, bin to
    partition), and for every other bin that a partition with wedges reaches, the workers
    that build it (``builders``, bin to worker numbers).

    Where every worker owns a partition (:func:`partitions_owned`), each worker whose
    partitions reach a bin builds its own copy, from the slices that the partitions' owners
    cut: a worker then pulls the slices others hold, never a copy with its own slices in it.
    Otherwise each bin is built once, where Dask places it; the owner of its first partition
    stands for that place in the bytes model. A bin no partition reaches is not built."""
    workers = max(workers, 1)
    bins_of = Counter(p for owners in bin_partitions.values() for p in owners)
    alone = {k: owners[0] for k, owners in bin_partitions.items()
             if len(owners) == 1 and bins_of[owners[0]] == 1}
    readers: dict[int, set[int]] = {}
    for p, s in enumerate(summaries):
        if s.wedges:
            for k in reach[p]:
                readers.setdefault(k, set()).add(partition_owner(p, workers))
    each_worker = partitions_owned(len(summaries), workers)
    builders = {k: tuple(sorted(readers[k])) if each_worker
                else (partition_owner(bin_partitions[k][0], workers),)
                for k in bin_partitions if k not in alone and k in readers}
    return alone, builders


def copy_partitions(summaries: Sequence[PartitionSummary],
                    bin_sources: dict[int, tuple[int, int]],
                    bin_partitions: dict[int, tuple[int, ...]],
                    reach: tuple[tuple[int, ...], ...], builders: dict[int, tuple[int, ...]],
                    workers: int) -> dict[tuple[int, int], tuple[int, ...]]:
    """The partitions each copy of a bin (:func:`bin_homes`) is built from: those that hold
    sources its readers' edges can reach. A target lies above its partition's first source
    and at most at its largest target (:func:`reaches`), so a copy read only by partitions
    of high ranks leaves out the slices of the low ranks, whose lists none of its edges
    point into. A left-out slice's sources are lists without edges in the copy.

    With the sorted partitions dealt to their workers, most of a graph's edges lie in the
    low ranks' lists, which only their own partitions read: on four workers, R-MAT's
    partition 0 holds more than half of the edges, and the other three workers need none of
    it. A copy's readers are its worker's partitions that reach the bin where every worker
    owns a partition, else every partition that reaches it (one copy, read by all)."""
    workers = max(workers, 1)
    each_worker = partitions_owned(len(summaries), workers)
    spans: dict[tuple[int, int], tuple[int, int]] = {}  # a copy's readers' targets
    for p, s in enumerate(summaries):
        if s.wedges:
            for k in reach[p]:
                if k in builders:  # the copy p reads, as binned_joins' bin_for picks it
                    w = partition_owner(p, workers) if each_worker else builders[k][0]
                    first, last = spans.get((k, w), (s.first_src + 1, s.last_dst + 1))
                    spans[k, w] = (min(first, s.first_src + 1), max(last, s.last_dst + 1))
    copies: dict[tuple[int, int], tuple[int, ...]] = {}
    for k, built_on in builders.items():
        low, high = bin_sources[k]
        for w in built_on:
            first, last = spans.get((k, w), (high, low))
            first, last = max(low, first), min(high, last)
            copies[k, w] = tuple(p for p in bin_partitions[k]
                                 if summaries[p].first_src < last
                                 and summaries[p].last_src >= first) \
                or bin_partitions[k][-1:]  # the reached sources have no lists: any slice
    return copies


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

"""Where the triangles are: credits per edge and per vertex, by the fused intersection run per
group of consecutive partitions.

The analytics beyond the total need to know, of every triangle, its three vertices or its
three edges (:mod:`dtri.kernels.intersect`). The plan (:func:`group_plan`) is that of host
staging's count, for both stagings: consecutive partitions are taken together in groups whose
CSR fits half a task's budget; each partition's rows are cut into *pieces* (whole adjacency
lists, of about equal wedges) so that every worker thread has work, even on a graph of one
partition; one ``dtri-credits`` task per group and worker loads the group once (a device copy,
or under host staging a move to the GPU) and intersects that worker's pieces whose targets
reach the group against it. What the tasks return, and how it is summed:

* ``vertex``: the triangles at each vertex (a vertex-wide array per task), summed per worker,
  then cut by the partitions' rank ranges and exchanged (:func:`vertex_totals`): partition
  ``p`` gets the counts of its own ranks, on its owner;
* ``edge``: the triangles on each edge, as pieces ``(offset, credits)`` of the partitions they
  belong to (a piece's own edges, and with the group's credits, the group's members), picked
  and summed per partition on its owner (:func:`edge_totals`);
* ``peel``: the same per edge, of the triangles that lose a leaving edge, among the edges
  still there (:mod:`dtri.analytics.truss`).
"""

from __future__ import annotations

import itertools
import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from dtri.analytics.bin_layout import reaches
from dtri.analytics.cannon import cannon_rounds, decomposition
from dtri.analytics.count import load_group, member_starts, own_partition
from dtri.analytics.plan import checkpoints
from dtri.analytics.staged_plan import chunk_rows, csr_groups
from dtri.kernels.counting import add_counts
from dtri.kernels.csr import list_cuts, row_range
from dtri.kernels.dispatch import array_module
from dtri.kernels.intersect import intersect, vertex_credits
from dtri.kernels.strategy import CREDIT_DTYPE, cpu_kernel
from dtri.kernels.wire import pack_counts, unpack
from dtri.prepared.checkpoint import resumed_line
from dtri.runtime.budget import TASK_SHARES
from dtri.runtime.staging import Staging
from dtri.runtime.tasks import partition_owner

if TYPE_CHECKING:
    from dtri.prepared.graph import GraphData

MODES = ("vertex", "edge", "peel")


class Piece(NamedTuple):
    """Rows ``[first, last)`` of a partition: whole adjacency lists."""

    partition: int
    first: int
    last: int


class GroupTask(NamedTuple):
    """One ``dtri-credits`` task: group ``group`` against worker ``worker``'s pieces that
    reach it."""

    group: int
    worker: int
    pieces: tuple[Piece, ...]


@dataclass(frozen=True)
class GroupPlan:
    """Groups of consecutive partitions, the pieces of the partitions, and the tasks."""

    groups: tuple[tuple[int, int], ...]
    """First and last partition of each group."""
    tasks: tuple[GroupTask, ...]
    chunk_rows: int
    """Partition rows per intersection pass on the GPU (bounds the working arrays)."""


def pieces_of(partition: int, summary: Any, count: int) -> list[Piece]:
    """A partition's rows cut into about ``count`` pieces of equal wedges, at the list starts
    of its wedge profile."""
    if not summary.edges:
        return []
    rows, before = checkpoints(summary)
    cuts = [0]
    for j in range(1, count):
        at = bisect_left(before, summary.wedges * j / count)
        if 0 < at < len(rows) - 1 and rows[at] > cuts[-1]:
            cuts.append(rows[at])
    cuts.append(summary.edges)
    return [Piece(partition, a, b) for a, b in itertools.pairwise(cuts) if b > a]


def group_plan(graph: GraphData, summaries: list[Any] | None = None,
               most_wedges: int | None = None) -> GroupPlan:
    """The credits' plan of a prepared graph (see the module docstring), or of partitions
    over its ranks with these ``summaries`` (a graph being peeled); ``most_wedges``: each
    partition cut into pieces of at most about that many wedges too (the listing's)."""
    summaries = graph.summaries if summaries is None else summaries
    bounds = graph.bounds
    runtime = graph.runtime
    workers = max(runtime.workers, 1)
    groups = csr_groups(summaries, graph.task_budget // TASK_SHARES.count_group)
    slots = workers * max(runtime.threads_per_worker, 1)
    per_partition = -(-slots // max(len(summaries), 1)) if len(summaries) < slots else 1
    by_worker: dict[int, list[Piece]] = {}
    for p, s in enumerate(summaries):
        if s.wedges:
            count = per_partition if most_wedges is None \
                else max(per_partition, -(-s.wedges // most_wedges))
            cut = pieces_of(p, s, count)
            for i, piece in enumerate(cut):
                # the pieces beyond per_partition (a listing's) stay in per_partition runs of
                # consecutive rows, one run per worker, so a partition goes to no more workers
                spread = i if len(cut) <= per_partition else i * per_partition // len(cut)
                by_worker.setdefault((partition_owner(p, workers) + spread) % workers,
                                     []).append(piece)
    tasks = []
    for g, (first, last) in enumerate(groups):
        low, high = bounds[first], bounds[last + 1]
        for w, pieces in sorted(by_worker.items()):
            reaching = tuple(piece for piece in pieces
                             if reaches(summaries[piece.partition], low, high))
            if reaching:
                tasks.append(GroupTask(g, w, reaching))
    return GroupPlan(tuple(groups), tuple(tasks), chunk_rows(graph.task_budget))


def credit_group(staging: Staging, mode: str, rows: int, kernel: str,
                 bounds: tuple[int, int], vertices: int, group_size: int,
                 pieces: tuple[tuple[int, int, int], ...], stateful: bool, *inputs: Any) -> Any:
    """One ``dtri-credits`` task: the group of the first ``group_size`` partitions of
    ``inputs`` (over the ranks ``bounds``) against ``pieces`` (``(input index, first row,
    last row)``), by the CPU ``kernel`` (:func:`~dtri.kernels.strategy.cpu_kernel`); with
    ``stateful``, the second half of ``inputs`` are the partitions' per-edge states. Returns
    the vertex-wide counts (``vertex``), or per input index the
    pieces ``(offset, credits)`` of its edges (``edge``, ``peel``)."""
    parts = inputs[: len(inputs) // 2] if stateful else inputs
    states = [staging.to_device(s) for s in inputs[len(inputs) // 2:]] if stateful else []
    members = list(parts[:group_size])
    group = load_group(staging, bounds, members)
    xp = array_module(group.offsets)
    group_state = xp.concatenate(states[:group_size]) if stateful else None
    per_edge = mode != "vertex"
    vw = xp.zeros(group.edges, dtype=CREDIT_DTYPE) if per_edge else None
    starts = member_starts(members)
    totals = xp.zeros(vertices, dtype=xp.int64) if mode == "vertex" else None
    credited: dict[int, list[tuple[int, Any]]] = {}
    for index, first_of_piece, last_of_piece in pieces:
        part = own_partition(staging, group, starts, index, parts[index])
        # a pass per span of about ``rows`` edges: the per-edge credits of a whole piece
        # (R-MAT 28: a partition) do not fit beside the group and the vertex-wide totals
        for first, last in itertools.pairwise(list_cuts(part, first_of_piece, last_of_piece,
                                                        rows)):
            piece = row_range(part, first, last)
            found = intersect(piece, group, credits=True, group_credits=per_edge,
                              part_state=states[index][first:last] if stateful else None,
                              group_state=group_state, peel=mode == "peel", chunk_rows=rows,
                              group_out=vw, kernel=kernel)
            if mode == "vertex":
                vertex_credits(piece, found.uv, found.uw, vertices, out=totals)
                continue
            lowest = found.uv
            lowest += found.uw  # in place: each edge's credits as u-v and as u-w
            credited.setdefault(index, []).append((first, staging.to_host(lowest)))
    if vw is None:  # the vertex-wide counts only
        return staging.to_host(totals)
    for index, start in enumerate(starts):
        edges = int(parts[index][0].shape[0])
        if edges:
            credited.setdefault(index, []).append((0, staging.to_host(vw[start: start + edges])))
    return credited


def run_credits(graph: GraphData, mode: str, states: list[Any] | None = None,
                parts: list[Any] | None = None, summaries: list[Any] | None = None,
                ) -> list[tuple[GroupTask, Any, list[int]]]:
    """The ``dtri-credits`` tasks of ``mode`` over ``parts`` with their ``summaries``
    (default: the graph's; with their per-edge ``states`` for ``peel``): per task, its plan
    entry, the delayed result of :func:`credit_group` and the partitions its inputs are."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    parts = graph.parts if parts is None else parts
    plan = group_plan(graph, summaries)
    tasks, bounds = graph.tasks, graph.bounds
    kernel = "hash" if graph.backend.on_gpu \
        else cpu_kernel(graph.vertices, stateful=states is not None)
    results = []
    for t in plan.tasks:
        first, last = plan.groups[t.group]
        members = list(range(first, last + 1))
        inputs = [*members, *dict.fromkeys(p.partition for p in t.pieces
                                           if p.partition not in members)]
        pieces = tuple((inputs.index(p.partition), p.first, p.last) for p in t.pieces)
        with tasks.on_worker(t.worker):
            result = tasks.task(
                "credits", credit_group, graph.staging, mode, plan.chunk_rows, kernel,
                (bounds[first], bounds[last + 1]), graph.vertices, len(members), pieces,
                states is not None, *(parts[p] for p in inputs),
                *((states[p] for p in inputs) if states is not None else ()),
                key=(mode, t.group, t.worker), on_host=True)
        results.append((t, result, inputs))
    return results


# ------------------------------------------------------------------------- per vertex

def slice_ranges(counts: Any, bounds: list[int]) -> dict[int, Any]:
    """Vertex-wide counts (along the last axis: one row or several) cut by the partitions'
    rank ranges, each piece an array of its own."""
    return {p: counts[..., bounds[p]: bounds[p + 1]].copy() for p in range(len(bounds) - 1)}


def packed_ranges(counts: Any, bounds: list[int], fmt: str) -> dict[int, Any]:
    """:func:`slice_ranges`, each slice packed in the wire format ``fmt``: the triangles at
    each vertex are small counts, which cross as a byte or less each."""
    return {p: pack_counts(piece, fmt) for p, piece in slice_ranges(counts, bounds).items()}


def add_packed(*pieces: Any) -> Any:
    """:func:`~dtri.kernels.counting.add_counts` of slices as they crossed (packed)."""
    return add_counts(*(unpack(piece) for piece in pieces))


def range_zeros(like: Any, size: int | tuple[int, ...]) -> Any:
    """int64 zeros of ``size`` (a length or a shape) in the array library of ``like``."""
    xp = array_module(like)
    return xp.zeros(size, dtype=xp.int64)


def vertex_totals(graph: GraphData, stage: str) -> list[Any]:
    """Triangles at each vertex, partition by partition: the credits of ``vertex`` tasks (or
    of the 2D join's rounds, :mod:`dtri.analytics.cannon`) summed per worker, cut by the
    partitions' rank ranges and summed on each partition's owner. Delayed, one per partition
    (int64 counts of its ranks)."""
    tasks, bounds = graph.tasks, graph.bounds
    per_worker: dict[int, list[Any]] = {}
    spread = decomposition(graph)
    if spread.kind == "2d":
        rounds = cannon_rounds(graph, spread.side, mode="vertex")
        per_worker = {g: [result] for g, result in enumerate(rounds)}
    else:
        for t, result, _ in run_credits(graph, "vertex"):
            per_worker.setdefault(t.worker, []).append(result)
    if not per_worker:  # no wedge anywhere: no triangle
        return [tasks.task(stage, range_zeros, graph.degree, bounds[p + 1] - bounds[p],
                           key=("zeros", p), on_host=True) for p in range(graph.partitions)]
    splits = []
    for w, results in sorted(per_worker.items()):
        with tasks.on_worker(w):
            total = tasks.tree(stage, add_counts, results, on_host=True)
            splits.append(tasks.task(stage, packed_ranges, total, bounds,
                                     graph.runtime.wire_format, key=("cut", w), on_host=True))
    return tasks.exchange(stage, splits, add_packed, graph.partitions, on_host=True)


# ------------------------------------------------------------------------- per edge

def add_pieces(part: tuple, *pieces: list[tuple[int, Any]]) -> Any:
    """Per-edge totals of a partition (int64) from pieces ``(offset, credits)``."""
    xp = array_module(part[0])
    total = xp.zeros(part[0].shape[0], dtype=xp.int64)
    for listed in pieces:
        for offset, credits in listed:
            total[offset: offset + credits.shape[0]] += credits
    return total


def pick_partition(credited: dict[int, Any], index: int) -> list[tuple[int, Any]]:
    """What one ``dtri-credits`` task credited to one of its inputs."""
    return credited.get(index, [])


def edge_totals(graph: GraphData, stage: str, mode: str = "edge",
                states: list[Any] | None = None, parts: list[Any] | None = None,
                summaries: list[Any] | None = None) -> list[Any]:
    """Triangles on each edge (``edge``), or lost by each edge still there when the leaving
    ones go (``peel``), partition by partition: delayed int64 arrays over each partition's
    edges, summed on its owner."""
    tasks = graph.tasks
    parts = graph.parts if parts is None else parts
    received: dict[int, list[Any]] = {p: [] for p in range(len(parts))}
    for t, result, inputs in run_credits(graph, mode, states, parts, summaries):
        for index, p in enumerate(inputs):
            received[p].append(tasks.task(stage, pick_partition, result, index,
                                          key=(mode, t.group, t.worker, p), kind="pick",
                                          on_host=True))
    return [tasks.task(stage, add_pieces, parts[p], *pieces, key=("sum", p), on_host=True,
                       at=tasks.owner(p)) for p, pieces in received.items()]


def kept_partitions(graph: GraphData, stage: str, lengths: list[int],
                    build: Callable[[], list[Any]]) -> list[Any]:
    """A per-partition stage of ``graph``'s analytics (``build()``: its delayed arrays, one
    a partition of ``lengths[p]`` values), persisted: read from the graph's checkpoint where
    a run before finished it (the stage skipped), else run, and written there when the graph
    has a checkpoint."""
    timer = graph.timer()
    checkpoint = graph.checkpoint
    results = None if checkpoint is None else checkpoint.partitions(stage, len(lengths))
    if results is not None and results.done is not None:  # finished
        on_device = graph.staging.in_gpu_memory
        values = list(timer.submit(stage, *results.read(graph.tasks, lengths, on_device)))
        timer.settle()
        saved = float(results.done.get("seconds", 0.0))
        graph.resumed[stage] = {"seconds": saved}
        resumed_line(stage, saved, graph.options.progress)
        return values
    started = time.perf_counter()
    values = list(timer.submit(stage, *build()))
    timer.settle()
    if results is not None:
        results.write(graph.tasks, timer, values, time.perf_counter() - started)
    return values

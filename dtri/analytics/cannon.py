"""The 2D cyclic decomposition with Cannon's schedule (Tom & Karypis): the choice between it
and the 1D join, its bytes model, and its task graph.

The 1D join (:mod:`dtri.analytics.count`) gives every worker the lists of every target its
partitions' edges reach: each worker pulls most of the graph, O(m). On a ``q × q`` grid of
``p = q²`` workers, worker ``(x, y)`` keeps block ``(x, y)`` of the oriented adjacency
(:mod:`dtri.kernels.cyclic`), and the ``q³`` rounds ``(x, y, z)`` (block ``(x, y)``'s edges
against blocks ``(x, z)`` and ``(y, z)``) are spread ``q`` to a worker. Cannon's order gives
worker ``(x, y)`` the rounds of its own block, ``z = (x + y + t) mod q``, so that each round
every block is wanted by one worker only; :func:`~dtri.kernels.cyclic.round_assignment`
then swaps rounds to even out the blocks each pulls. A worker pulls O(q) blocks of about
``m / p`` edges, O(m / √p). The tasks (``docs/design.md``, "The count"): ``dtri-cyclic-blocks``
makes block ``(r, s)`` on grid worker ``r·q + s``, its home, from the sorted partitions' pieces;
``dtri-cannon-shift-(g, t)`` brings the blocks of worker ``g``'s round ``t`` to it after round
``t - 2``, so the next round's blocks travel while the current one intersects
(``dtri-cannon-round-(g, t)``); ``dtri-reduce`` sums the rounds' counts.

A worker count that is not a square uses the largest square grid. ``auto`` takes the 2D join
(on a grid of at least 2 × 2) where the bytes model (:func:`moved_1d`, :func:`moved_2d`)
predicts fewer bytes for the busiest worker than the 1D join.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from dask.sizeof import sizeof
from dask.utils import format_bytes

from dtri.analytics.bin_layout import bin_share, csr_bytes
from dtri.analytics.plan import BYTES_PER_KEY, CountPlan, build_plan
from dtri.errors import ConfigurationError, ListTooLongError
from dtri.kernels.csr import as_csr
from dtri.kernels.cyclic import (
    block_segments,
    class_rows,
    cyclic_block,
    cyclic_pieces,
    partition_values,
    pulled_blocks,
    round_assignment,
    round_blocks,
    round_edge_credits,
    round_triangles,
    round_vertex_triangles,
)
from dtri.kernels.strategy import cpu_kernel
from dtri.kernels.wire import pack_counts, packed_bytes, packed_rows, unpack
from dtri.options import DECOMPOSITIONS
from dtri.runtime.link import probed_bandwidth
from dtri.runtime.tasks import partition_owner

if TYPE_CHECKING:
    from dtri.prepared.graph import GraphData
    from dtri.runtime.timer import StageTimer

BYTES_PER_TARGET = 4
"""A target in a block or a piece: int32."""
BYTES_PER_PIECE_ROW = 4
"""A row's out-degree in a piece: int32."""
ROUND_BYTES_PER_EDGE = 56
"""Device bytes a round holds per edge of a block, at its peak: its three blocks' targets
(int32), and, for the union of two blocks, their packed keys and places (int64) and its
targets, then the kernel's row, order and class of each union edge (int32, int64, uint8)."""
ROUND_BYTES_PER_VERTEX = 24
"""And per vertex: the offsets of the two blocks spread over every rank, and the union's."""


def round_bytes(edges: int, vertices: int, q: int) -> int:
    """The device bytes one round of the 2D join on a ``q × q`` grid holds, its blocks taken
    to be even (:data:`ROUND_BYTES_PER_EDGE`, :data:`ROUND_BYTES_PER_VERTEX`)."""
    return ROUND_BYTES_PER_EDGE * (edges // (q * q)) + ROUND_BYTES_PER_VERTEX * (vertices + 1)


@dataclass(frozen=True)
class Decomposition:
    """How the join is spread over the workers, and why."""

    kind: str
    """``1d`` (source ranges, every worker pulls the lists its edges reach) or ``2d``."""
    side: int
    """The grid's side ``q`` (``2d``: ``q²`` workers join; ``1d``: 1)."""
    reason: str
    moved_1d: dict[str, int]
    """Predicted bytes the busiest worker pulls under the 1D join, per stage."""
    moved_2d: dict[str, int]
    """The same under the 2D join on the largest square grid (empty below 2 × 2)."""
    link_bandwidth: float | None = None
    """Bytes per second of the link between two workers, measured
    (:func:`dtri.runtime.link.link_bandwidth`); ``None`` where not measured."""
    seconds_1d: float | None = None
    """The busiest worker's predicted transfer seconds under the 1D join on that link."""
    seconds_2d: float | None = None
    """The same under the 2D join."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def grid_side(workers: int) -> int:
    """The side of the largest square grid of at most ``workers`` workers."""
    return max(1, math.isqrt(max(workers, 1)))


PieceSizes = Sequence[Sequence[tuple[int, int, int]]]
"""Per sorted partition, per grid block ``g``: its piece's bytes as Dask sends it (its
``sizeof``), its payloads' alone (:func:`~dtri.kernels.wire.packed_bytes`), and its edges."""


def raw_piece_sizes(summaries: Sequence[Any], bounds: Sequence[int], q: int) -> list[list[
        tuple[int, int, int]]]:
    """The pieces' sizes in the ``raw`` wire format, each partition's edges spread evenly
    over its ``q²`` pieces, as the cyclic classes of degree-ordered ranks make them: int32
    local targets and an int32 degree per compact row."""
    sizes = []
    for p, s in enumerate(summaries):
        row = []
        for g in range(q * q):
            rows = class_rows(bounds[p], bounds[p + 1], g // q, q)
            nbytes = BYTES_PER_TARGET * s.edges // (q * q) + BYTES_PER_PIECE_ROW * (rows[1]
                                                                                   - rows[0])
            row.append((nbytes, nbytes, s.edges // (q * q)))
        sizes.append(row)
    return sizes


def moved_2d(summaries: Sequence[Any], bounds: Sequence[int], workers: int, q: int,
             piece_sizes: PieceSizes | None = None) -> dict[str, int]:
    """Predicted bytes the busiest grid worker pulls under the 2D join, per stage: the blocks'
    pieces from the partitions' owners (``cyclic-blocks``), then the rounds' blocks
    (``cannon-shift``: a block is its pieces' payloads together, with one header). The
    pieces' sizes are those measured where they were cut, in the run's wire format
    (:func:`cyclic_piece_sizes`), or without them the ``raw`` format's
    (:func:`raw_piece_sizes`)."""
    if piece_sizes is None:
        piece_sizes = raw_piece_sizes(summaries, bounds, q)
    grid = range(q * q)
    pieces = [0] * (q * q)
    for p, sizes in enumerate(piece_sizes):
        owner = partition_owner(p, workers)
        for g in grid:
            if g != owner:
                pieces[g] += sizes[g][0]
    blocks = [sum(sizes[g][1] for sizes in piece_sizes) + max(
        (sizes[g][0] - sizes[g][1] for sizes in piece_sizes), default=0) for g in grid]
    shifts = [sum(blocks[b] for b in pulled_blocks(rounds, g, q))
              for g, rounds in enumerate(round_assignment(q))]
    busiest = max(grid, key=lambda g: pieces[g] + shifts[g])
    return {"cyclic-blocks": pieces[busiest], "cannon-shift": shifts[busiest]}


def moved_1d(plan: CountPlan) -> dict[str, int]:
    """Predicted bytes the busiest worker pulls under the 1D join, per stage, from the count's
    plan (device staging): each worker builds its own copy of every edge bin its partitions
    reach from the slices of the partitions that overlap it and hold sources its edges can
    reach, pulling those that other workers own (``edge-bins``,
    :func:`~dtri.analytics.bin_layout.bin_homes`,
    :func:`~dtri.analytics.bin_layout.copy_partitions`), and pulls every bin its
    partitions reach that is another worker's partition, once (``join``: its packed keys, 8 B
    an edge; ``intersect``: its CSR). Each partition's edges are taken to spread evenly over
    its source ranks: a slice holds the partition's share of the bin's sources, with one
    offset per source rank (:func:`~dtri.analytics.bin_layout.bin_share`)."""
    workers = max(plan.workers, 1)
    if workers == 1:
        return {"edge-bins": 0, "join": 0, "intersect": 0}
    if not plan.owned:  # fewer partitions than workers: Dask spreads the tasks, each of
        # which pulls its partition and the bin it joins; at most, a worker pulls each once
        busiest = min(range(workers), key=lambda w: sum(
            partition_owner(p, workers) == w for p in range(len(plan.summaries))))
        stage = "join" if plan.join == "wedges" else "intersect"
        pulled_parts = sum(BYTES_PER_TARGET * s.edges for p, s in enumerate(plan.summaries)
                           if s.wedges and partition_owner(p, workers) != busiest)
        bins = sum(BYTES_PER_KEY * plan.bin_edges[k] if stage == "join" else
                   csr_bytes(plan.bin_edges[k], plan.bin_sources[k][1] - plan.bin_sources[k][0])
                   for k in plan.bin_edges)
        return {"edge-bins": 0, "join": 0, "intersect": 0, stage: pulled_parts + bins}
    slices = [0] * workers
    for (k, w), parts in plan.copy_parts.items():
        for p in parts:
            if partition_owner(p, workers) != w:
                edges, rows = bin_share(plan.summaries[p], plan.bin_sources[k])
                slices[w] += csr_bytes(math.ceil(edges), rows)
    pulled = {"join": [0] * workers, "intersect": [0] * workers}
    for stage, wanted in (("join", "wedges"), ("intersect", "intersect")):
        for w in range(workers):
            reached = {k for p, s in enumerate(plan.summaries)
                       if partition_owner(p, workers) == w and s.wedges
                       and plan.strategy[p] == wanted for k in plan.reach[p]
                       if k in plan.alone and partition_owner(plan.alone[k], workers) != w}
            pulled[stage][w] = sum(
                BYTES_PER_KEY * plan.bin_edges[k] if stage == "join" else
                csr_bytes(plan.bin_edges[k], plan.bin_sources[k][1] - plan.bin_sources[k][0])
                for k in reached)
    busiest = max(range(workers), key=lambda w: slices[w] + pulled["join"][w]
                  + pulled["intersect"][w])
    return {"edge-bins": slices[busiest], "join": pulled["join"][busiest],
            "intersect": pulled["intersect"][busiest]}


def choose_decomposition(requested: str, plan: CountPlan, bounds: Sequence[int],
                         piece_sizes: PieceSizes | None = None,
                         bandwidth: float | None = None) -> Decomposition:
    """The decomposition of a count by ``plan`` (1D, device staging) on its workers, whose
    partitions start at the ranks ``bounds`` (see the module docstring); ``piece_sizes``:
    the 2D pieces as cut (:func:`moved_2d`); ``bandwidth``: the measured link, in bytes a
    second, on which each decomposition's busiest worker is predicted to spend the seconds
    its bytes take. ``auto`` takes the fewer seconds (the joins' own work is the same:
    every oriented edge intersected once), that is the fewer bytes."""
    chosen = _choose(requested, plan, bounds, piece_sizes)
    if not bandwidth:
        return chosen
    one, two = (round(sum(moved.values()) / bandwidth, 6) if moved else None
                for moved in (chosen.moved_1d, chosen.moved_2d))
    reason = chosen.reason
    if requested == "auto" and two is not None and "predicted to pull" in reason:
        reason += (f" ({one if chosen.kind == '1d' else two:.3g} s against "
                   f"{two if chosen.kind == '1d' else one:.3g} s on the measured link of "
                   f"{format_bytes(int(bandwidth))}/s)")
    return Decomposition(chosen.kind, chosen.side, reason, chosen.moved_1d, chosen.moved_2d,
                         round(bandwidth, 1), one, two)


def _choose(requested: str, plan: CountPlan, bounds: Sequence[int],
            piece_sizes: PieceSizes | None) -> Decomposition:
    """:func:`choose_decomposition` by bytes alone."""
    summaries, workers = plan.summaries, plan.workers
    if requested not in DECOMPOSITIONS:
        raise ConfigurationError(f"--decomposition must be one of "
                                 f"{', '.join(DECOMPOSITIONS)}, got {requested!r}")
    q = grid_side(workers)
    one = moved_1d(plan)
    two = moved_2d(summaries, bounds, workers, q, piece_sizes) if q > 1 else {}
    grid = f"a {q} x {q} grid"
    idle = workers - q * q
    if idle:
        grid += f" of {workers} workers ({idle} kept out: not a square)"
    if requested == "1d":
        return Decomposition("1d", 1, "--decomposition 1d", one, two)
    if requested == "2d":
        return Decomposition("2d", q, f"--decomposition 2d: {grid}", one, two)
    if q == 1:
        return Decomposition("1d", 1, f"auto: {workers} worker{'s' * (workers != 1)}, "
                             "too few for a 2 x 2 grid", one, two)
    held = round_bytes(sum(s.edges for s in summaries), plan.vertices, q)
    if held > plan.task_budget:  # a round is one task, whole blocks: it cannot be cut
        return Decomposition("1d", 1, f"auto: a round on {grid} would hold about "
                             f"{format_bytes(held)}, more than a task's "
                             f"{format_bytes(plan.task_budget)}", one, two)
    busiest_1d, busiest_2d = sum(one.values()), sum(two.values())
    pulls_1d, pulls_2d = format_bytes(busiest_1d), format_bytes(busiest_2d)
    if busiest_2d < busiest_1d:
        return Decomposition("2d", q, f"auto: {grid}; the busiest worker is predicted to pull "
                             f"{pulls_2d} against {pulls_1d} under 1d", one, two)
    return Decomposition("1d", 1, f"auto: the busiest worker is predicted to pull {pulls_1d} "
                         f"under 1d against {pulls_2d} on {grid}", one, two)


def measured_link(graph: GraphData) -> float | None:
    """The bandwidth between the workers, as measured: by the link probe where it ran on this
    cluster (:func:`~dtri.runtime.link.probed_bandwidth`, ``--workers auto`` on GPUs), else
    by the preparation's own transfers (their bytes over their seconds). Probing here would
    send 192 MiB over each link, for a choice that the bytes make alone: the joins' own work
    is the same either way, so the fewer bytes are the fewer seconds on any link."""
    return probed_bandwidth(graph.runtime) or graph.moved.link_bandwidth()


def decomposition(graph: GraphData, plan: CountPlan | None = None,
                  timer: StageTimer | None = None) -> Decomposition:
    """The decomposition of a prepared graph's joins, chosen once and cached on the graph
    (the count and the triangles at each vertex share it, and the blocks), by the 1D plan of
    its count under device staging: ``plan``, the count's own, where it is that plan; else
    made here. Where a grid of 2 x 2 or more could take it, unless ``--decomposition 1d``,
    the partitions are cut into their 2D pieces first, whose sizes the bytes model reads
    (:func:`cyclic_piece_sizes`), and from which the 2D join starts (``timer`` times them).
    The predicted seconds are on the link as measured (:func:`measured_link`)."""

    def chosen() -> Decomposition:
        made = device_plan(graph) if plan is None or plan.staging != "device" else plan
        q = grid_side(made.workers)
        sizes = bandwidth = None
        if q > 1 and graph.options.decomposition != "1d" and graph.runtime.client is not None:
            sizes = cyclic_piece_sizes(graph, q, timer)
            bandwidth = measured_link(graph)
        return choose_decomposition(graph.options.decomposition, made, graph.bounds, sizes,
                                    bandwidth)

    return graph.cached("decomposition", chosen)


def device_plan(graph: GraphData) -> CountPlan:
    """The 1D plan of a graph's count under device staging (the fused join's where the
    options' join cannot plan: the count says why)."""
    runtime = graph.runtime
    plan = partial(build_plan, graph.summaries, graph.vertices, workers=runtime.workers,
                   budget=runtime.budget, backend=runtime.backend, bins=graph.options.bins)
    try:
        return plan(join=graph.options.join)
    except ListTooLongError:
        return plan(join="intersect")


# ------------------------------------------------------------------------- the task graph

def cut_pieces(part: tuple, q: int, fmt: str) -> dict[int, Any]:
    """A stored sorted partition cut into its ``q²`` pieces, packed in the wire format
    ``fmt`` (:func:`cyclic_pieces`)."""
    return cyclic_pieces(as_csr(part), q, fmt)


def cut_sizes(pieces: dict[int, Any]) -> list[tuple[int, int, int]]:
    """Each piece's bytes as Dask sends it (its ``sizeof``, which the transfer ledger counts),
    its payloads' alone, and its edges."""
    return [(sizeof(pieces[g]), packed_bytes(pieces[g]), packed_rows(pieces[g]))
            for g in sorted(pieces)]


def cyclic_cuts(graph: GraphData, q: int, timer: StageTimer | None = None) -> list[Any]:
    """Persisted, each where its partition lives: the sorted partitions cut into their
    ``q²`` pieces, packed (cached on the graph; ``timer`` times them as part of
    ``cyclic_blocks``, else a timer of their own)."""

    def cuts() -> list[Any]:
        tasks, fmt = graph.tasks, graph.runtime.wire_format
        made = [tasks.task("cyclic-blocks", cut_pieces, part, q, fmt, key=("cut", p),
                           at=tasks.owner(p)) for p, part in enumerate(graph.parts)]
        stage_timer = graph.timer() if timer is None else timer
        persisted = list(stage_timer.submit("cyclic_blocks", *made))
        if timer is None:
            stage_timer.settle()
        return persisted

    return graph.cached(f"cyclic-cuts-{q}", cuts)


def cyclic_piece_sizes(graph: GraphData, q: int,
                       timer: StageTimer | None = None) -> list[list[tuple[int, int, int]]]:
    """The sizes of every partition's 2D pieces, as cut (:func:`cyclic_cuts`, :func:`cut_sizes`):
    what the bytes model of the 2D join reads (cached on the graph)."""

    def sizes() -> list[list[tuple[int, int, int]]]:
        cuts = cyclic_cuts(graph, q, timer)
        tasks = graph.tasks
        sized = [tasks.task("cyclic-blocks", cut_sizes, cut, key=("sizes", p), on_host=True,
                            at=tasks.owner(p))  # where the cut is: only its sizes move
                 for p, cut in enumerate(cuts)]
        stage_timer = graph.timer() if timer is None else timer
        return [[tuple(piece) for piece in sizes]
                for sizes in stage_timer.compute("cyclic_blocks", *sized)]

    return graph.cached(f"cyclic-piece-sizes-{q}", sizes)


def cyclic_blocks(graph: GraphData, q: int, timer: StageTimer | None = None) -> list[Any]:
    """Persisted, block ``g = r·q + s`` on grid worker ``g``: the graph's ``q²`` blocks
    (cached on the graph; ``timer`` times their stage, else a timer of their own)."""

    def blocks() -> list[Any]:
        tasks, fmt = graph.tasks, graph.runtime.wire_format
        splits = dict(enumerate(cyclic_cuts(graph, q, timer)))
        grid = range(q * q)
        picks = tasks.pick_pieces("cyclic-blocks", splits, dict.fromkeys(splits, grid))
        built = []
        for g in grid:
            with tasks.pinned(g):
                built.append(tasks.task("cyclic-blocks", cyclic_block, fmt,
                                        *(picks[p, g] for p in splits), key=("block", g)))
        stage_timer = graph.timer() if timer is None else timer
        persisted = list(stage_timer.submit("cyclic_blocks", *built))
        if timer is None:  # a timer of its own: waited for here
            stage_timer.settle()
        return persisted

    return graph.cached(f"cyclic-blocks-{q}", blocks)


def arrived(block: Any, after: Any = None) -> Any:
    """A block, once it is on the worker (``after``: the round it waits for, so that only
    the next round's blocks travel ahead)."""
    return block


def cannon_rounds(graph: GraphData, q: int, timer: StageTimer | None = None,
                  mode: str = "count") -> list[Any]:
    """The rounds of every grid worker (:func:`~dtri.kernels.cyclic.round_assignment`):
    ``count``, each round's triangles (delayed ints); ``vertex``, per worker its rounds'
    triangles at each rank (a delayed vertex-wide array); ``edge``, per worker its rounds'
    triangles on each edge of the blocks they read (a delayed ``{block: int64 array}``).

    Each block a worker pulls is brought to it once, by one ``cannon-shift`` task there that
    waits for the round two before the first that reads it; the rounds read that copy (Dask
    lets go of a fetched copy once no task there waits for it, so two rounds that each took
    it fetched it twice)."""
    tasks, n = graph.tasks, graph.vertices
    kernel = "hash" if graph.backend.on_gpu else cpu_kernel(n)  # as the 1D join's
    blocks = cyclic_blocks(graph, q, timer)
    results = []
    for g, assigned in enumerate(round_assignment(q)):
        rounds: list[Any] = []
        held: dict[int, Any] = {}  # its own block too: Dask's memory manager dropped a
        # home's copy of its block once another worker had fetched one, and the home's
        # rounds fetched it back (a block more to one worker of 16, sometimes)
        with tasks.pinned(g):
            for t, (x, y, z) in enumerate(assigned):
                after = rounds[t - 2] if t >= 2 else None
                for b in (x * q + y, x * q + z, y * q + z):
                    if b not in held:
                        held[b] = tasks.task("cannon-shift", arrived, blocks[b], after,
                                             key=(mode, g, b), on_host=True)
                pair = (held[x * q + y], held[x * q + z], held[y * q + z])
                if mode == "count":
                    rounds.append(tasks.task("cannon-round", round_triangles, pair, x, y, z, q,
                                             n, kernel, key=(mode, g, t)))
                else:
                    before = rounds[-1] if rounds else None
                    credit = round_vertex_triangles if mode == "vertex" else round_edge_credits
                    rounds.append(tasks.task("cannon-round", credit, pair, x, y, z, q, n,
                                             before, kernel, key=(mode, g, t)))
        results.extend(rounds if mode == "count" else rounds[-1:])
    return results


# ------------------------------------------------------------------- the triangles on each edge

def packed_credits(credits: dict[int, Any], fmt: str) -> dict[int, Any]:
    """A grid worker's credits per block, each packed in the wire format ``fmt``."""
    return {block: pack_counts(values, fmt) for block, values in credits.items()}


def block_support(fmt: str, counts: Sequence[int], *credits: Any) -> dict[int, Any]:
    """A block's support (every grid worker's credits to it, summed), cut into the segments
    of its pieces, one per sorted partition of ``counts[p]`` edges, each packed."""
    values = [unpack(c) for c in credits]
    total = values[0].copy()
    for more in values[1:]:
        total += more
    return {p: pack_counts(segment, fmt)
            for p, segment in block_segments(total, counts).items()}


def partition_support(part: tuple, q: int, blocks: Sequence[int], *segments: Any) -> Any:
    """A sorted partition's support (int64, in its order) from its segment of each block."""
    return partition_values(as_csr(part), q, {block: unpack(segment) for block, segment
                                              in zip(blocks, segments, strict=True)})


def cannon_edge_support(graph: GraphData, q: int) -> list[Any]:
    """The triangles on each edge under the 2D join, per sorted partition (delayed int64
    arrays in its order, on its owner): each grid worker's rounds credit the edges of the
    blocks they read (:func:`~dtri.kernels.cyclic.round_edge_credits`); each block's credits
    are summed at its home (``support``), and go back, a segment each, to the partitions its
    pieces came from, which put them in their own order."""
    tasks, fmt = graph.tasks, graph.runtime.wire_format
    sizes = cyclic_piece_sizes(graph, q)
    rounds = cannon_rounds(graph, q, mode="edge")
    assignment = round_assignment(q)
    read = {g: sorted(set().union(*(round_blocks(x, y, z, q) for x, y, z in assigned)))
            for g, assigned in enumerate(assignment)}
    packed = {}
    for g, credits in enumerate(rounds):
        with tasks.pinned(g):
            packed[g] = tasks.task("support", packed_credits, credits, fmt,
                                   key=("pack", g), on_host=True)
    picks = tasks.pick_pieces("support", packed, read)
    parts = graph.partitions
    totals = {}
    for b in range(q * q):
        counts = [sizes[p][b][2] for p in range(parts)]
        with tasks.pinned(b):
            totals[b] = tasks.task("support", block_support, fmt, counts,
                                   *(picks[g, b] for g in range(q * q) if b in read[g]),
                                   key=("block", b), on_host=True)
    segments = tasks.pick_pieces("support", totals, dict.fromkeys(totals, range(parts)))
    blocks = list(range(q * q))
    return [tasks.task("support", partition_support, part, q, blocks,
                       *(segments[b, p] for b in blocks), key=("partition", p),
                       at=tasks.owner(p)) for p, part in enumerate(graph.parts)]

"""k-truss and truss numbers, by peeling the prepared graph.

The k-truss is the largest subgraph in which every edge lies on at least ``k - 2`` triangles of
that subgraph (``networkx.k_truss``; its isolated vertices are dropped). Every edge starts with
its support (:func:`dtri.analytics.edge.support_totals`, cached on the graph), and the edges
below ``k - 2`` leave, round after round, until none does.

Where one task can hold the whole graph (:func:`peels_whole`), one task peels it
(:mod:`dtri.kernels.peel`): each round touches only the triangles of the edges that leave in
it. Otherwise the partitions peel where they are (:class:`Peeling`):

1. every edge starts *alive*;
2. a round marks the alive edges whose support is below ``k - 2`` *leaving*; the fused
   intersection, run over the edges not yet gone, credits each alive edge with the triangles
   it loses, those with a leaving edge (``peel`` credits, :mod:`dtri.kernels.intersect`); the
   supports drop by those credits and the leaving edges are *gone*;
3. rounds repeat until no edge is leaving. What is alive then is the k-truss.

There the states live beside the partitions on their owners; only the counts of leaving and
remaining edges come back to the client each round. Once half the edges of the partitions are
gone, they are compacted (the gone edges dropped from the CSRs), so later rounds scan only
what is left. The k-truss is returned as a prepared graph over the same ranks and vertex ids,
its degrees counted anew and its vertices those with an edge.

Truss numbers (the largest ``k`` whose k-truss holds an edge) peel level after level: an edge
that leaves while ``k`` is peeled has truss number ``k - 1``; a level that would remove nothing
is skipped (the next level is the smallest remaining support plus 3).
"""

from __future__ import annotations

import time
from operator import getitem
from typing import TYPE_CHECKING, Any, NamedTuple

from dtri.analytics.credits import edge_totals
from dtri.analytics.edge import edge_frame, support_totals
from dtri.kernels.counting import add_counts
from dtri.kernels.csr import (
    PartitionSummary,
    as_csr,
    edge_degrees,
    sources,
    stored,
    stored_summary,
    with_edges,
)
from dtri.kernels.dispatch import array_module, frame_from_arrays
from dtri.kernels.peel import BYTES_PER_EDGE, peel
from dtri.kernels.strategy import STATE_ALIVE, STATE_GONE, STATE_LEAVING
from dtri.options import checked_k

if TYPE_CHECKING:
    import dask.dataframe as dd

    from dtri.prepared.graph import GraphData

NO_SUPPORT = 2**62
"""The smallest remaining support where nothing remains."""


class Stats(NamedTuple):
    """What a round tells the client of one partition."""

    leaving: int
    alive: int
    """Edges still alive (not leaving, not gone)."""
    gone: int
    smallest: int
    """The smallest support of an alive edge (:data:`NO_SUPPORT` if none)."""


def initial(part: tuple, support: Any, numbers: bool) -> tuple:
    """A partition's peeling state: its CSR, supports, states (all alive) and, when truss
    numbers are wanted, each edge's truss number (0: not yet known)."""
    xp = array_module(support)
    edges = support.shape[0]
    state = xp.full(edges, STATE_ALIVE, dtype=xp.uint8)
    truss = xp.zeros(edges, dtype=xp.int32) if numbers else None
    return part, support, state, truss


def step(peeled: tuple, lost: Any, threshold: int, level: int) -> tuple:
    """One round on one partition: the supports drop by what the alive edges ``lost`` (none
    in the first round of a level), the leaving edges are gone, and the alive edges below
    ``threshold`` leave (their truss number is ``level - 1``). Returns the new state and its
    :class:`Stats`."""
    part, support, state, truss = peeled
    xp = array_module(support)
    state = state.copy()
    if lost is not None:
        support = support - lost
        state[state == STATE_LEAVING] = STATE_GONE
    leaving = (state == STATE_ALIVE) & (support < threshold)
    state[leaving] = STATE_LEAVING
    if truss is not None:
        truss = truss.copy()
        truss[leaving] = level - 1
    alive = state == STATE_ALIVE
    smallest = int(support[alive].min()) if bool(alive.any()) else NO_SUPPORT
    stats = Stats(int(xp.count_nonzero(leaving)), int(xp.count_nonzero(alive)),
                  int(xp.count_nonzero(state == STATE_GONE)), smallest)
    return (part, support, state, truss), tuple(stats)


def compacted(peeled: tuple) -> tuple[tuple, tuple | None]:
    """A partition without its gone edges, and the gone edges (source and target ranks with
    their truss numbers; ``None`` without truss numbers)."""
    part, support, state, truss = peeled
    csr = as_csr(part)
    keep = state != STATE_GONE
    finished = None
    if truss is not None:
        gone = ~keep
        finished = (sources(csr)[gone], csr.dst[gone], truss[gone])
    kept = (stored(with_edges(csr, keep)), support[keep], state[keep],
            None if truss is None else truss[keep])
    return kept, finished


def part_of(peeled: tuple) -> tuple:
    return peeled[0]


def state_of(peeled: tuple) -> Any:
    return peeled[2]


class Peeling:
    """The client's side of peeling one graph: the per-partition states as futures, and the
    rounds that advance them."""

    def __init__(self, graph: GraphData, numbers: bool):
        self.graph = graph
        self.tasks = graph.tasks
        self.timer = graph.timer()
        self.numbers = numbers
        self.finished: list[list[Any]] = [[] for _ in range(graph.partitions)]
        self.round = 0
        support = support_totals(graph)
        self.peeled = list(self.timer.submit("truss", *(
            self.tasks.task("truss", initial, part, support[p], numbers, key=("init", p),
                            on_host=True) for p, part in enumerate(graph.parts))))
        self.summaries = list(graph.summaries)
        self.edges = graph.edges

    def advance(self, threshold: int, level: int, peel: bool) -> list[Stats]:
        """One round: with ``peel``, the leaving edges go and the supports drop; then the
        edges below ``threshold`` leave. Returns each partition's :class:`Stats`."""
        tasks, r = self.tasks, self.round
        self.round += 1
        lost = [None] * len(self.peeled)
        if peel:
            parts = [tasks.task("truss", part_of, s, key=("part", r, p), on_host=True)
                     for p, s in enumerate(self.peeled)]
            states = [tasks.task("truss", state_of, s, key=("state", r, p), on_host=True)
                      for p, s in enumerate(self.peeled)]
            lost = edge_totals(self.graph, "truss-peel", "peel", states=states, parts=parts,
                               summaries=self.summaries)
        stepped = []
        for p, peeled in enumerate(self.peeled):
            with tasks.placed(p):
                stepped.append(tasks.task("truss", step, peeled, lost[p], threshold, level,
                                          key=("step", r, p), on_host=True))
        results = [tasks.task("truss", getitem, s, 0, key=("peeled", r, p), on_host=True)
                   for p, s in enumerate(stepped)]
        stats = [tasks.task("truss", getitem, s, 1, key=("stats", r, p), on_host=True)
                 for p, s in enumerate(stepped)]
        self.peeled = list(self.timer.submit("truss", *results))
        (stats,) = self.timer.compute("truss", stats)
        stats = [Stats(*s) for s in stats]
        if peel:
            self.maybe_compact(stats)
        return stats

    def maybe_compact(self, stats: list[Stats]) -> None:
        """Drop the gone edges from the partitions once half of them are gone."""
        gone = sum(s.gone for s in stats)
        if 2 * gone >= max(self.edges, 1):
            self.compact()

    def compact(self) -> None:
        """Drop the gone edges from the partitions (keeping those with truss numbers as
        finished pieces) and summarise what is left for the next rounds' plans."""
        tasks, r = self.tasks, self.round
        compactions = []
        for p, peeled in enumerate(self.peeled):
            with tasks.placed(p):
                compactions.append(tasks.task("truss", compacted, peeled, key=("compact", r, p),
                                              on_host=True))
        kept = [tasks.task("truss", getitem, c, 0, key=("kept", r, p), on_host=True)
                for p, c in enumerate(compactions)]
        done = ([tasks.task("truss", getitem, c, 1, key=("done", r, p), on_host=True)
                 for p, c in enumerate(compactions)] if self.numbers else [])
        persisted = self.timer.submit("truss", *kept, *done)
        self.peeled = list(persisted[: len(kept)])
        for p, finished in enumerate(persisted[len(kept):]):
            self.finished[p].append(finished)
        summaries = self.timer.compute("truss", *(
            tasks.task("truss", stored_summary, tasks.task("truss", part_of, peeled,
                                                      key=("part", r, p), on_host=True),
                       key=("summary", r, p)) for p, peeled in enumerate(self.peeled)))
        self.summaries = [PartitionSummary(*s) for s in summaries]
        self.edges = sum(s.edges for s in self.summaries)

    def peel_level(self, k: int) -> list[Stats]:
        """Peel until no edge is leaving at level ``k``; the last round's stats."""
        stats = self.advance(k - 2, k, peel=False)
        while sum(s.leaving for s in stats):
            stats = self.advance(k - 2, k, peel=True)
        return stats


def k_truss(graph: GraphData, k: int) -> GraphData:
    """The k-truss of a prepared graph, as a prepared graph on the same workers."""
    k = checked_k(k)
    started = time.perf_counter()
    tasks = graph.tasks
    if peels_whole(graph):
        timer = graph.timer()
        whole = whole_peel(graph, max(k, 2))
        parts = [tasks.task("k-truss", kept_edges, part, whole[p], key=("kept", p),
                            at=tasks.owner(p)) for p, part in enumerate(graph.parts)]
    else:
        peeling = Peeling(graph, numbers=False)
        peeling.peel_level(max(k, 2))
        timer = peeling.timer
        parts = [tasks.task("k-truss", part_of, tasks.task(
            "k-truss", getitem, tasks.task("k-truss", compacted, peeled, key=("compact", p),
                                           on_host=True), 0, key=("kept", p), on_host=True),
            key=("part", p), on_host=True) for p, peeled in enumerate(peeling.peeled)]
    owners = [tasks.owner(p) for p in range(len(parts))]
    degree = tasks.reduce_over("k-truss", edge_degrees, add_counts, parts, (graph.vertices,),
                               owners, "degree")
    present = tasks.task("k-truss", has_edges, degree, key=("present",))
    *parts, degree, present = timer.submit("k-truss", *parts, degree, present)
    summaries = timer.compute("k-truss", *(tasks.task("k-truss", stored_summary, part,
                                                      key=(p,))
                                           for p, part in enumerate(parts)))
    seconds = dict(timer.seconds)
    seconds["prepare_total"] = round(time.perf_counter() - started, 6)
    return graph.peeled_to(parts, [PartitionSummary(*s) for s in summaries], degree, present,
                           seconds)


def peels_whole(graph: GraphData) -> bool:
    """Whether one task holds the whole graph while peeling it
    (:data:`dtri.kernels.peel.BYTES_PER_EDGE`, within the run's budget of a task); else the
    partitions peel where they are, a round at a time."""
    return graph.edges * BYTES_PER_EDGE <= graph.task_budget


def whole_peel(graph: GraphData, k: int | None) -> list[Any]:
    """One task, on the first partition's owner, that peels the whole graph
    (:func:`peeled_parts`); per partition, its piece of the result."""
    support, tasks = support_totals(graph), graph.tasks
    first = tasks.owner(0)
    whole = tasks.task("truss", peeled_parts, graph.vertices, k, len(graph.parts),
                       *graph.parts, *support, key=("whole",), at=first)
    return [tasks.task("truss", getitem, whole, p, key=("piece", p), on_host=True, at=first)
            for p in range(len(graph.parts))]


def peeled_parts(vertices: int, k: int | None, parts: int, *arguments: Any) -> list[Any]:
    """The partitions (``arguments``: their CSRs, then their supports) joined and peeled
    (:func:`dtri.kernels.peel.peel`): per partition, its alive edges (with ``k``) or its
    edges' truss numbers."""
    csrs = [as_csr(part) for part in arguments[:parts]]
    xp = array_module(csrs[0].offsets)
    order = sorted(range(parts), key=lambda p: csrs[p].low)  # by source: the lists ascend
    src = xp.concatenate([sources(csrs[p]).astype(xp.int32) for p in order])
    dst = xp.concatenate([csrs[p].dst.astype(xp.int32, copy=False) for p in order])
    support = xp.concatenate([arguments[parts + p].astype(xp.int32) for p in order])
    peeled = peel(src, dst, support, vertices, k)
    result = peeled.alive if peeled.truss is None else peeled.truss
    pieces: list[Any] = [None] * parts
    start = 0
    for p in order:
        end = start + csrs[p].dst.shape[0]
        pieces[p] = result[start:end]
        start = end
    return pieces


def kept_edges(part: tuple, alive: Any) -> tuple:
    """A partition without the edges that peeling to the k-truss removed."""
    return stored(with_edges(as_csr(part), alive))


def truss_piece(part: tuple, truss: Any) -> tuple:
    """A partition's edges with their truss numbers, as its one finished piece."""
    csr = as_csr(part)
    return ((sources(csr), csr.dst, truss),)


def has_edges(degree: Any) -> Any:
    return degree > 0


def truss_pieces(graph: GraphData) -> list[tuple]:
    """Persisted, per partition: its edges' truss numbers as the peeling finished them, a
    tuple of pieces (source and target ranks, truss numbers; cached on the graph)."""

    def peeled() -> list[tuple]:
        if peels_whole(graph):
            whole, tasks = whole_peel(graph, None), graph.tasks
            return list(graph.timer().submit("truss", *(
                tasks.task("truss", truss_piece, part, whole[p], key=("pieces", p),
                           at=tasks.owner(p)) for p, part in enumerate(graph.parts))))
        peeling = Peeling(graph, numbers=True)
        k = 3
        while True:
            stats = peeling.peel_level(k)
            if not sum(s.alive for s in stats):
                break
            k = max(k + 1, min(s.smallest for s in stats) + 3)
        peeling.compact()  # everything is gone: the pieces hold every edge
        return [tuple(pieces) for pieces in peeling.finished]

    return graph.cached("truss_pieces", peeled)


def truss_numbers(graph: GraphData) -> dd.DataFrame:
    """The truss number of every edge (cached on the graph)."""
    return graph.cached("truss_numbers", lambda: edge_frame(
        graph, "truss-numbers", truss_frame, {"u": "int64", "v": "int64", "truss": "int64"},
        truss_pieces(graph), parts=[None] * graph.partitions))


def truss_frame(_: Any, ids: Any, pieces: tuple) -> Any:
    """One partition of :func:`truss_numbers` from its finished pieces."""
    xp = array_module(ids)
    found = [p for p in pieces if p is not None]
    src = xp.concatenate([p[0] for p in found]) if found else xp.zeros(0, dtype=xp.int64)
    dst = xp.concatenate([p[1].astype(xp.int64) for p in found]) if found \
        else xp.zeros(0, dtype=xp.int64)
    truss = xp.concatenate([p[2] for p in found]).astype(xp.int64) if found \
        else xp.zeros(0, dtype=xp.int64)
    u, v = ids[src], ids[dst]
    return frame_from_arrays(u, {"u": xp.minimum(u, v), "v": xp.maximum(u, v), "truss": truss})


"""Truss peeling of a whole graph in one task: the edges leave level by level, and each round
touches only the triangles of the edges that leave in it.

The graph is the prepared partitions joined: every edge once, from its lower rank to its
higher, with its support (its triangles). :func:`adjacency` lists every vertex's neighbours,
each with the id of the edge that reaches it: the in-neighbours (lower ranks) then the
out-neighbours, so each list is ascending without a sort. A round
(:data:`~dtri.kernels.dispatch.peel_round_kernel`) takes the edges leaving now; for each
one it intersects its ends' lists from the shorter side and, for every triangle that no gone
edge has broken, takes one from the support of each alive edge of the triangle. A triangle
with several leaving edges is taken by the lowest of their ids alone, so every alive edge
loses each of its triangles exactly once. An edge whose support falls to the level's threshold
minus one leaves in the next round; the rounds of a level end when none does.

The work of all the rounds together is that of finding each triangle up to three times, where
peeling by rounds over every alive edge repeats the whole join each round (the distributed
peeling of :mod:`dtri.analytics.truss`, for graphs that one task cannot hold).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from dtri.kernels.dispatch import array_module, peel_round_kernel
from dtri.kernels.strategy import STATE_ALIVE, STATE_GONE, STATE_LEAVING

BYTES_PER_EDGE = 80
"""The most one task holds for an edge while peeling, the prepared partition's own 12 bytes
(its target and support) included: its ends and support again (12), two entries of the
neighbour lists with their edge ids (16), state, truss number and the rounds' buffer (9), the
threaded rounds' buffers on the CPU (2: :data:`dtri.kernels.peel.cpu.HITS_PER_EDGE`), and the
lists' building. Measured: 73 on NumPy before the threaded rounds (tracemalloc, 2 M edges)."""


class Adjacency(NamedTuple):
    """Every vertex's neighbours, ascending, and the id of each one's edge."""

    offsets: Any
    """int64, one more than the vertices."""
    neighbours: Any
    """int32 ranks."""
    edge: Any
    """The edge id of each neighbour (int32, or int64 from 2**31 edges)."""


def adjacency(src: Any, dst: Any, vertices: int, ids: Any = None) -> Adjacency:
    """The neighbour lists of the edges ``src -> dst`` (``src < dst``, sorted by source, then
    target), or of the edges ``ids`` (ascending) among them: vertex ``x`` lists its
    in-neighbours, then its out-neighbours. Built in the order that holds least at once."""
    xp = array_module(src)
    id_type = xp.int32 if src.shape[0] < 2**31 else xp.int64
    if ids is not None:
        ids = ids.astype(id_type, copy=False)
        src, dst = src[ids], dst[ids]
    m = src.shape[0]
    at_type = xp.int32 if 2 * m < 2**31 else xp.int64  # positions in the lists
    by_target = xp.argsort(dst, kind="stable").astype(id_type)  # each target's sources ascend
    ins = xp.bincount(dst, minlength=vertices).astype(at_type)
    outs = xp.bincount(src, minlength=vertices).astype(at_type)
    offsets = xp.zeros(vertices + 1, dtype=xp.int64)
    xp.cumsum(ins + outs, out=offsets[1:])
    neighbours = xp.empty(2 * m, dtype=xp.int32)
    edge = xp.empty(2 * m, dtype=id_type)
    # an edge's place: its group's start in the lists, less the group's first edge's number,
    # plus its own number (the edges are grouped by source, and by_target groups them by
    # target); in-neighbours first, then out-neighbours
    start = offsets[:-1].astype(at_type)
    at = (start - (xp.cumsum(ins, dtype=at_type) - ins))[dst[by_target]]
    at += xp.arange(m, dtype=at_type)
    neighbours[at] = src[by_target]
    edge[at] = by_target if ids is None else ids[by_target]
    del at, by_target
    at = (start + ins - (xp.cumsum(outs, dtype=at_type) - outs))[src]
    at += xp.arange(m, dtype=at_type)
    neighbours[at] = dst
    edge[at] = xp.arange(m, dtype=id_type) if ids is None else ids
    return Adjacency(offsets, neighbours, edge)


class Peeled(NamedTuple):
    """What peeling left: the alive edges, and each edge's truss number where asked for."""

    alive: Any
    """bool per edge: in the k-truss peeled to (all ``False`` after truss numbers)."""
    truss: Any | None
    """int32 per edge: the largest ``k`` whose k-truss holds it (``None``: not asked)."""


def peel(src: Any, dst: Any, support: Any, vertices: int, k: int | None) -> Peeled:
    """Peel the graph ``src -> dst`` whose edges lie on ``support`` triangles each: to its
    ``k``-truss, or, with ``k`` ``None``, level after level to every edge's truss number.
    An int32 ``support`` is lowered in place."""
    xp = array_module(src)
    if not src.shape[0]:  # nothing to peel (CuPy's bincount takes no empty input)
        return Peeled(xp.zeros(0, dtype=bool), None if k is not None else
                      xp.zeros(0, dtype=xp.int32))
    src = src.astype(xp.int32, copy=False)
    dst = dst.astype(xp.int32, copy=False)
    graph = adjacency(src, dst, vertices)
    support = support.astype(xp.int32, copy=False)  # the rounds lower it in place
    state = xp.full(src.shape[0], STATE_ALIVE, dtype=xp.uint8)
    truss = None if k is not None else xp.zeros(src.shape[0], dtype=xp.int32)
    spare = xp.empty(src.shape[0], dtype=graph.edge.dtype)  # the next rounds' leaving edges
    listed, gone = src.shape[0], 0  # edges in the lists, and gone since they were made
    level = 3 if k is None else max(k, 2)
    while True:
        threshold = level - 2
        leaving = xp.flatnonzero((state == STATE_ALIVE) & (support < threshold))
        leaving = leaving.astype(graph.edge.dtype)
        while leaving.shape[0]:
            if 2 * gone >= listed:  # drop the gone edges from the lists
                kept = xp.flatnonzero(state != STATE_GONE)
                graph = adjacency(src, dst, vertices, kept)
                listed, gone = kept.shape[0], 0
            state[leaving] = STATE_LEAVING
            if truss is not None:
                truss[leaving] = level - 1
            found = peel_round_kernel(src, dst, graph, state, support, leaving, threshold,
                                      spare)
            state[leaving] = STATE_GONE
            gone += leaving.shape[0]
            leaving = spare[:found].copy()
        if truss is None:
            break
        alive = state == STATE_ALIVE
        if not bool(alive.any()):
            break
        level = max(level + 1, int(support[alive].min()) + 3)
    return Peeled(state == STATE_ALIVE, truss)

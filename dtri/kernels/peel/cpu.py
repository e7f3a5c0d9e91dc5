"""The peeling round compiled by numba, for :mod:`dtri.kernels.peel`.

On one thread the round walks the leaving edges in turn and lowers the supports in place. On
several (:func:`~dtri.kernels.strategy.kernel_threads`, for rounds with work enough:
:data:`PARALLEL_MIN_WORK`) each thread walks its share of the leaving edges and writes the
alive edges it would lower to a buffer of its own; one thread then lowers them. A round reads
the edges' states and never changes them, and each support only falls, so the order of the
lowering does not change which edges leave next. numba on the CPU has no atomics: the
buffers take their place."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

from dtri.kernels.compiled import watch_numba
from dtri.kernels.intersect.cpu import seek
from dtri.kernels.strategy import STATE_ALIVE, STATE_GONE, STATE_LEAVING

watch_numba()

HITS_PER_EDGE = 0.5
"""A threaded round's buffers hold at most this many entries per edge of the graph (at least
:data:`MIN_HITS` in all): rounds whose leaving edges may lower more take them in batches.
Two bytes an edge with int32 ids, within :data:`~dtri.kernels.peel.BYTES_PER_EDGE`."""
MIN_HITS = 1 << 16
PARALLEL_MIN_WORK = 1 << 15
"""Rounds with less work (:func:`lowered_bounds`, summed) run on one thread: handing a
round to the threads and lowering from their buffers costs more than it saves."""


@numba.njit(nogil=True, cache=True, inline="always")
def _lowered(offsets: Any, neighbours: Any, edge: Any, src: Any, dst: Any, state: Any,
             e: int, hits: Any, at_hit: int) -> int:
    """The alive edges that leaving edge ``e``'s triangles lower, written to ``hits`` from
    ``at_hit`` on; returns where the next goes."""
    a0, a1 = offsets[src[e]], offsets[src[e] + 1]
    b0, b1 = offsets[dst[e]], offsets[dst[e] + 1]
    if a1 - a0 > b1 - b0:
        a0, a1, b0, b1 = b0, b1, a0, a1
    at = b0
    for i in range(a0, a1):
        at = seek(neighbours, at, b1, neighbours[i])
        if at >= b1:
            break
        if neighbours[at] != neighbours[i]:
            continue
        j, k = edge[i], edge[at]
        sj, sk = state[j], state[k]
        if sj == STATE_GONE or sk == STATE_GONE:
            continue
        if (sj == STATE_LEAVING and j < e) or (sk == STATE_LEAVING and k < e):
            continue  # the triangle is taken by its lowest leaving edge
        if sj == STATE_ALIVE:
            hits[at_hit] = j
            at_hit += 1
        if sk == STATE_ALIVE:
            hits[at_hit] = k
            at_hit += 1
    return at_hit


@numba.njit(nogil=True, cache=True)
def _lower(hits: Any, count: int, support: Any, threshold: int, out: Any, found: int) -> int:
    """Lower the support of each of ``hits[:count]`` by one; an edge that falls to
    ``threshold - 1`` goes to ``out`` (from ``found`` on). Returns the new ``found``."""
    for h in range(count):
        j = hits[h]
        support[j] -= 1
        if support[j] == threshold - 1:
            out[found] = j
            found += 1
    return found


@numba.njit(nogil=True, cache=True)
def _peel_round(offsets: Any, neighbours: Any, edge: Any, src: Any, dst: Any, state: Any,
                support: Any, leaving: Any, threshold: int, out: Any, hits: Any) -> int:
    """A round on one thread: each leaving edge's lowering done before the next's found
    (``hits``: room for the most one leaving edge lowers)."""
    found = 0
    for f in range(leaving.shape[0]):
        count = _lowered(offsets, neighbours, edge, src, dst, state, leaving[f], hits, 0)
        found = _lower(hits, count, support, threshold, out, found)
    return found


@numba.njit(nogil=True, cache=True)
def _share_hits(offsets: Any, neighbours: Any, edge: Any, src: Any, dst: Any, state: Any,
                leaving: Any, hits: Any) -> int:
    """One thread's share of a round: the edges that ``leaving``'s triangles lower, in
    ``hits``; returns how many."""
    at_hit = 0
    for f in range(leaving.shape[0]):
        at_hit = _lowered(offsets, neighbours, edge, src, dst, state, leaving[f], hits,
                          at_hit)
    return at_hit


def lowered_bounds(graph: Any, src: Any, dst: Any, leaving: Any) -> Any:
    """The most edges each leaving edge lowers: two per member of its ends' shorter list."""
    offsets, ends = graph.offsets, (src[leaving], dst[leaving])
    return 2 * np.minimum(*(offsets[x + 1] - offsets[x] for x in ends))


@functools.cache
def round_threads(threads: int) -> ThreadPoolExecutor:
    """This process's threads for the threaded rounds, made once: a peeling runs hundreds of
    rounds, and starting their threads each round cost 1.3 ms a round on the 2-core machine
    (R-MAT 18's truss numbers: 848 threaded rounds, 6.1 s against 5.0 s)."""
    return ThreadPoolExecutor(threads, thread_name_prefix="dtri-peel")


def peel_round_threads(threads: int, src: Any, dst: Any, graph: Any, state: Any,
                       support: Any, leaving: Any, threshold: int, out: Any,
                       bounds: Any) -> int:
    """A round on ``threads`` Python threads (:func:`_share_hits` releases the GIL), in
    batches of leaving edges whose ``bounds`` (:func:`lowered_bounds`) fit the buffers
    (:data:`HITS_PER_EDGE`). Thread ``t`` takes every ``threads``-th edge of a batch from its
    ``t``-th: the leaving edges ascend by source, and the later sources' lists are longer."""
    pool = round_threads(threads)
    prefix = np.zeros(leaving.shape[0] + 1, dtype=np.int64)
    np.cumsum(bounds, out=prefix[1:])
    room = max(MIN_HITS, int(src.shape[0] * HITS_PER_EDGE))
    found, first = 0, 0
    while first < leaving.shape[0]:
        last = max(first + 1, int(np.searchsorted(prefix, prefix[first] + room,
                                                  side="right")) - 1)
        shares = []
        for t in range(threads):
            hits = np.empty(int(bounds[first + t:last:threads].sum()), dtype=graph.edge.dtype)
            share = np.ascontiguousarray(leaving[first + t:last:threads])
            shares.append((hits, pool.submit(_share_hits, graph.offsets, graph.neighbours,
                                             graph.edge, src, dst, state, share, hits)))
        for hits, done in shares:
            found = int(_lower(hits, done.result(), support, threshold, out, found))
        first = last
    return found


def peel_round_cpu(src: Any, dst: Any, graph: Any, state: Any, support: Any, leaving: Any,
                   threshold: int, out: Any) -> int:
    """One round (:mod:`dtri.kernels.peel`); the edges that leave next are written to ``out``,
    and their number returned. On the kernel's threads where the round's work, two per
    member of each leaving edge's shorter list, is at least :data:`PARALLEL_MIN_WORK`."""
    from dtri.kernels.strategy import kernel_threads

    threads = kernel_threads()
    bounds = lowered_bounds(graph, src, dst, leaving)
    if threads > 1 and int(bounds.sum()) >= PARALLEL_MIN_WORK:
        return peel_round_threads(threads, src, dst, graph, state, support, leaving,
                                  threshold, out, bounds)
    hits = np.empty(int(bounds.max(initial=0)), dtype=graph.edge.dtype)
    return int(_peel_round(graph.offsets, graph.neighbours, graph.edge, src, dst, state,
                           support, leaving, threshold, out, hits))

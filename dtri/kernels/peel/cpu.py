"""The peeling round compiled by numba, for :mod:`dtri.kernels.peel`: one thread walks the
leaving edges in turn (the supports are lowered in place, without atomics)."""

from __future__ import annotations

from typing import Any

import numba

from dtri.kernels.compiled import watch_numba
from dtri.kernels.intersect.cpu import seek
from dtri.kernels.strategy import STATE_ALIVE, STATE_GONE, STATE_LEAVING

watch_numba()


@numba.njit(nogil=True, cache=True)
def _peel_round(offsets: Any, neighbours: Any, edge: Any, src: Any, dst: Any, state: Any,
                support: Any, leaving: Any, threshold: int, out: Any) -> int:
    found = 0
    for f in range(leaving.shape[0]):
        e = leaving[f]
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
                support[j] -= 1
                if support[j] == threshold - 1:
                    out[found] = j
                    found += 1
            if sk == STATE_ALIVE:
                support[k] -= 1
                if support[k] == threshold - 1:
                    out[found] = k
                    found += 1
    return found


def peel_round_cpu(src: Any, dst: Any, graph: Any, state: Any, support: Any, leaving: Any,
                   threshold: int, out: Any) -> int:
    """One round (:mod:`dtri.kernels.peel`); the edges that leave next are written to ``out``,
    and their number returned."""
    return int(_peel_round(graph.offsets, graph.neighbours, graph.edge, src, dst, state,
                           support, leaving, threshold, out))

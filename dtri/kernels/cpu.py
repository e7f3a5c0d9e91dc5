"""CPU kernels compiled by numba: the fused intersection (:func:`intersect_edges`, see
:mod:`dtri.kernels.intersect`) and exact integer scatter-adds.

Imported only where they run (numba takes a moment to import); compiled on first use and
cached on disk by numba. They hold no lock (``nogil``), so Dask's threaded scheduler runs them
on several cores; dtri's CPU workers are single-threaded processes, each running one.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np


@numba.njit(nogil=True, cache=True, inline="always")
def _credit(e: int, ia: int, ib: int, se: int, credits: bool, group_credits: bool,
            stateful: bool, peel: bool, part_state: Any, group_state: Any, uw: Any,
            vw: Any) -> int:
    """Whether a common member closes a triangle to count (0: no), crediting ``uw[ia]`` and
    ``vw[ib]`` where asked; 1: the caller credits ``uv[e]`` too, 2: it does not (``e`` is
    leaving)."""
    if stateful:
        sa = part_state[ia]
        sb = group_state[ib]
        if sa == 0 or sb == 0:
            return 0
        if peel:
            if se != 2 and sa != 2 and sb != 2:
                return 0
            if sa == 1:
                uw[ia] += 1
            if group_credits and sb == 1:
                vw[ib] += 1
            return 1 if se == 1 else 2
    if credits:
        uw[ia] += 1
        if group_credits:
            vw[ib] += 1
    return 1


@numba.njit(nogil=True, cache=True, inline="always")
def _walk(shorter: Any, s0: int, s1: int, longer: Any, l0: int, l1: int, swapped: bool, e: int,
          se: int, credits: bool, group_credits: bool, stateful: bool, peel: bool,
          part_state: Any, group_state: Any, uw: Any, vw: Any) -> tuple[int, int]:
    """Walk ``shorter[s0:s1]`` ascending and binary-search each member in ``longer[l0:l1]``
    from where the last search ended; ``swapped``: the shorter list is ``v``'s (positions in
    the group), else ``u``'s (in the partition). Returns the triangles found and those to
    credit to ``uv[e]``."""
    found = mine = 0
    low = l0
    for i in range(s0, s1):
        w = shorter[i]
        high = l1
        while low < high:
            mid = (low + high) >> 1
            if longer[mid] < w:
                low = mid + 1
            else:
                high = mid
        if low < l1 and longer[low] == w:
            ia, ib = (low, i) if swapped else (i, low)
            hit = _credit(e, ia, ib, se, credits, group_credits, stateful, peel, part_state,
                          group_state, uw, vw)
            if hit:
                found += 1
                if hit == 1:
                    mine += 1
    return found, mine


@numba.njit(nogil=True, cache=True)
def intersect_edges(pdst: Any, poff: Any, plow: int, gdst: Any, goff: Any, glow: int,
                    ghigh: int, credits: bool, group_credits: bool, stateful: bool, peel: bool,
                    part_state: Any, group_state: Any, part_leaving: Any, group_leaving: Any,
                    uv: Any, uw: Any, vw: Any) -> int:
    """Triangles closed by the partition's edges (CSR ``pdst``, ``poff``) whose target lies
    in ``[glow, ghigh)``, whose lists are the group's CSR (``gdst``, ``goff``); see
    :func:`dtri.kernels.intersect.intersect` for the credits and states. Each edge walks the
    shorter of its two lists (smaller-degree first) and searches the longer."""
    found = 0
    for r in range(poff.shape[0] - 1):
        row_end = poff[r + 1]
        for e in range(poff[r], row_end):
            v = pdst[e]
            if v < glow or v >= ghigh:
                continue
            se = 1
            if stateful:
                se = part_state[e]
                if se == 0:
                    continue
                if peel and se != 2 and part_leaving[r] == 0 and group_leaving[v - glow] == 0:
                    continue
            a0, a1 = e + 1, row_end
            b0, b1 = goff[v - glow], goff[v - glow + 1]
            if a0 >= a1 or b0 >= b1:
                continue
            if a1 - a0 <= b1 - b0:  # walk u's later members, search v's list
                hits, mine = _walk(pdst, a0, a1, gdst, b0, b1, False, e, se, credits,
                                   group_credits, stateful, peel, part_state, group_state, uw,
                                   vw)
            else:  # walk v's list, search u's later members
                hits, mine = _walk(gdst, b0, b1, pdst, a0, a1, True, e, se, credits,
                                   group_credits, stateful, peel, part_state, group_state, uw,
                                   vw)
            found += hits
            if (credits or peel) and mine:
                uv[e] += mine
    return found


@numba.njit(nogil=True, cache=True)
def scatter_add(ids: Any, weights: Any, size: int) -> Any:
    """``out[ids[i]] += weights[i]`` into int64 zeros of ``size``: an exact ``bincount`` with
    integer weights (NumPy's adds in float64)."""
    out = np.zeros(size, dtype=np.int64)
    for i in range(ids.shape[0]):
        out[ids[i]] += weights[i]
    return out

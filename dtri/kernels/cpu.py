"""CPU kernels compiled by numba: the fused intersection (:func:`intersect_edges`, see
:mod:`dtri.kernels.intersect`), a radix sort of packed keys and exact integer scatter-adds.

Imported only where they run (numba takes a moment to import); compiled on first use and
cached on disk by numba. They hold no lock (``nogil``), so Dask's threaded scheduler runs them
on several cores; dtri's CPU workers are single-threaded processes, each running one; an
in-process run gives one task every core (:func:`intersect_edges_parallel`, numba's threads).
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


GALLOP_RATIO = 8
"""A list this many times longer than the other is searched (galloping) member by member of
the shorter; lists closer in length are merged, which costs less than as many searches."""


@numba.njit(nogil=True, cache=True, inline="always")
def _walk(shorter: Any, s0: int, s1: int, longer: Any, l0: int, l1: int, swapped: bool, e: int,
          se: int, credits: bool, group_credits: bool, stateful: bool, peel: bool,
          part_state: Any, group_state: Any, uw: Any, vw: Any) -> tuple[int, int]:
    """Walk ``shorter[s0:s1]`` ascending and find each member in ``longer[l0:l1]``, from
    where the last one was found: by a merge of the two when their lengths are within
    :data:`GALLOP_RATIO`, else by galloping (steps of 1, 2, 4, ... to bracket it, then a
    binary search of the bracket), so a search costs the log of how far it moves.
    ``swapped``: the shorter list is ``v``'s (positions in the group), else ``u``'s (in the
    partition). Returns the triangles found and those to credit to ``uv[e]``."""
    found = mine = 0
    low = l0
    gallop = (l1 - l0) > GALLOP_RATIO * (s1 - s0)
    i = s0
    while i < s1 and low < l1:
        w = shorter[i]
        if longer[low] < w:
            if not gallop:
                low += 1
                continue
            last_below = low  # longer[last_below] < w
            step = 1
            high = low + 1
            while high < l1 and longer[high] < w:
                last_below = high
                step <<= 1
                high = last_below + step
            if high > l1:
                high = l1
            low = last_below + 1
            while low < high:
                mid = (low + high) >> 1
                if longer[mid] < w:
                    low = mid + 1
                else:
                    high = mid
            if low >= l1:
                break
        if longer[low] == w:
            ia, ib = (low, i) if swapped else (i, low)
            hit = _credit(e, ia, ib, se, credits, group_credits, stateful, peel, part_state,
                          group_state, uw, vw)
            if hit:
                found += 1
                if hit == 1:
                    mine += 1
        i += 1
    return found, mine


ROW_BLOCK = 64
"""Rows of a partition taken together by one thread of the parallel kernel; thread ``t`` of
``T`` takes blocks ``t, t + T, t + 2T, ...``, so every thread gets a share of each part of the
rank order (the work per row varies along it, and a contiguous cut would leave threads idle)."""


@numba.njit(nogil=True, cache=True)
def _intersect_rows(first_block: int, block_step: int, pdst: Any, poff: Any, gdst: Any,
                    goff: Any, glow: int, ghigh: int, credits: bool, group_credits: bool,
                    stateful: bool, peel: bool, part_state: Any, group_state: Any,
                    part_leaving: Any, group_leaving: Any, uv: Any, uw: Any, vw: Any) -> int:
    """:func:`intersect_edges` over the partition's row blocks ``first_block, first_block +
    block_step, ...`` (:data:`ROW_BLOCK` rows each)."""
    found = 0
    rows = poff.shape[0] - 1
    for block in range(first_block, (rows + ROW_BLOCK - 1) // ROW_BLOCK, block_step):
        for r in range(block * ROW_BLOCK, min(rows, (block + 1) * ROW_BLOCK)):
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
                    if peel and se != 2 and part_leaving[r] == 0 \
                            and group_leaving[v - glow] == 0:
                        continue
                a0, a1 = e + 1, row_end
                b0, b1 = goff[v - glow], goff[v - glow + 1]
                if a0 >= a1 or b0 >= b1:
                    continue
                if a1 - a0 <= b1 - b0:  # walk u's later members, search v's list
                    hits, mine = _walk(pdst, a0, a1, gdst, b0, b1, False, e, se, credits,
                                       group_credits, stateful, peel, part_state, group_state,
                                       uw, vw)
                else:  # walk v's list, search u's later members
                    hits, mine = _walk(gdst, b0, b1, pdst, a0, a1, True, e, se, credits,
                                       group_credits, stateful, peel, part_state, group_state,
                                       uw, vw)
                found += hits
                if (credits or peel) and mine:
                    uv[e] += mine
    return found


@numba.njit(nogil=True, cache=True)
def intersect_edges(pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int, ghigh: int,
                    credits: bool, group_credits: bool, stateful: bool, peel: bool,
                    part_state: Any, group_state: Any, part_leaving: Any, group_leaving: Any,
                    uv: Any, uw: Any, vw: Any) -> int:
    """Triangles closed by the partition's edges (CSR ``pdst``, ``poff``) whose target lies
    in ``[glow, ghigh)``, whose lists are the group's CSR (``gdst``, ``goff``); see
    :func:`dtri.kernels.intersect.intersect` for the credits and states. Each edge walks the
    shorter of its two lists (smaller-degree first) and searches the longer."""
    return _intersect_rows(0, 1, pdst, poff, gdst, goff, glow, ghigh, credits, group_credits,
                           stateful, peel, part_state, group_state, part_leaving,
                           group_leaving, uv, uw, vw)


@numba.njit(nogil=True, cache=True, parallel=True)
def intersect_edges_parallel(threads: int, pdst: Any, poff: Any, gdst: Any, goff: Any,
                             glow: int, ghigh: int, credits: bool, stateful: bool, peel: bool,
                             part_state: Any, group_state: Any, part_leaving: Any,
                             group_leaving: Any, uv: Any, uw: Any) -> int:
    """:func:`intersect_edges` on ``threads`` threads, each taking every ``threads``-th row
    block. Without the group's credits every write (``uv``, ``uw``) lands on an edge of the
    row being walked, so no two threads write the same counter."""
    none = np.zeros(0, dtype=uw.dtype)
    found = np.zeros(threads, dtype=np.int64)
    for t in numba.prange(threads):
        found[t] = _intersect_rows(t, threads, pdst, poff, gdst, goff, glow, ghigh, credits,
                                   False, stateful, peel, part_state, group_state,
                                   part_leaving, group_leaving, uv, uw, none)
    return found.sum()


RADIX_BITS = 11
"""Bits per pass of :func:`radix_sort` (2048 counters: they stay in the L1 cache)."""


@numba.njit(nogil=True, cache=True)
def radix_sort(keys: Any) -> Any:
    """int64 keys, ascending: a least-significant-digit radix sort, one pass per
    :data:`RADIX_BITS` bits of the largest key (three for the packed edges of a graph of
    2**16 vertices, where NumPy's comparison sort takes several times longer); NumPy's sort
    where a key is negative."""
    n = keys.shape[0]
    top = 0
    for i in range(n):
        if keys[i] > top:
            top = keys[i]
        elif keys[i] < 0:
            return np.sort(keys)  # not for negative keys: their digits do not order them
    source = keys.copy()
    target = np.empty_like(keys)
    buckets = 1 << RADIX_BITS
    mask = buckets - 1
    counts = np.empty(buckets, dtype=np.int64)
    shift = 0
    while shift == 0 or (top >> shift) > 0:
        counts[:] = 0
        for i in range(n):
            counts[(source[i] >> shift) & mask] += 1
        total = 0
        for b in range(buckets):
            c = counts[b]
            counts[b] = total
            total += c
        for i in range(n):
            d = (source[i] >> shift) & mask
            target[counts[d]] = source[i]
            counts[d] += 1
        source, target = target, source
        shift += RADIX_BITS
    return source


@numba.njit(nogil=True, cache=True)
def scatter_add(ids: Any, weights: Any, size: int) -> Any:
    """``out[ids[i]] += weights[i]`` into int64 zeros of ``size``: an exact ``bincount`` with
    integer weights (NumPy's adds in float64)."""
    out = np.zeros(size, dtype=np.int64)
    for i in range(ids.shape[0]):
        out[ids[i]] += weights[i]
    return out

"""The graphlet kernels compiled by numba, for :mod:`dtri.kernels.graphlets`: the triangle
listing (:func:`list_triangles_cpu`) and its input ids (:func:`triangle_ids_cpu`), the
4-cliques over listed triangles (:func:`clique_counts_cpu`), the oriented wedges of 4-cycles
(:func:`cycle_records_cpu`) and their credits (:func:`cycle_credits_cpu`). Imported only where
they run; compiled on first use and cached on disk by numba; threaded by numba
(:func:`dtri.kernels.strategy.kernel_threads`).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from dtri.kernels.compiled import watch_numba
from dtri.kernels.intersect.cpu import seek
from dtri.kernels.strategy import kernel_threads

watch_numba()  # their compiles and cache loads are reported apart from the stages


EDGE_BLOCK = 256
"""Edges taken together by one thread of the triangle listing and the 4-cycle wedges; thread
``t`` of ``T`` takes blocks ``t, t + T, ...``."""


@numba.njit(nogil=True, cache=True, inline="always")
def _write_common(shorter: Any, s0: int, s1: int, longer: Any, l0: int, l1: int,
                  swapped: bool, e: int, k: int, ab: Any, ac: Any, bc: Any) -> None:
    """Write each member of ``shorter[s0:s1]`` found in ``longer[l0:l1]`` as a triangle of
    edge ``e`` at records ``k, k + 1, ...``; ``swapped``: the shorter list is the group's."""
    for i in range(s0, s1):
        l0 = seek(longer, l0, l1, shorter[i])
        if l0 >= l1:
            break
        if longer[l0] == shorter[i]:
            ab[k] = e
            ac[k] = l0 if swapped else i
            bc[k] = i if swapped else l0
            k += 1


@numba.njit(nogil=True, cache=True, parallel=True)
def _list_triangles(threads: int, pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int,
                    ghigh: int, first: int, last: int, starts: Any, ab: Any, ac: Any,
                    bc: Any) -> None:
    blocks = (last - first + EDGE_BLOCK - 1) // EDGE_BLOCK
    for t in numba.prange(threads):
        for block in range(t, blocks, threads):
            lo = first + block * EDGE_BLOCK
            hi = min(last, lo + EDGE_BLOCK)
            row = np.searchsorted(poff, lo, side="right") - 1
            for e in range(lo, hi):
                while poff[row + 1] <= e:
                    row += 1
                v = pdst[e]
                if v < glow or v >= ghigh:
                    continue
                k = starts[e - first]
                if k == starts[e - first + 1]:
                    continue
                a0, a1 = e + 1, poff[row + 1]
                b0, b1 = goff[v - glow], goff[v - glow + 1]
                if a1 - a0 <= b1 - b0:  # walk u's later members, gallop in v's list
                    _write_common(pdst, a0, a1, gdst, b0, b1, False, e, k, ab, ac, bc)
                else:
                    _write_common(gdst, b0, b1, pdst, a0, a1, True, e, k, ab, ac, bc)


def list_triangles_cpu(pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int, ghigh: int,
                       first: int, last: int, starts: Any, ab: Any, ac: Any, bc: Any) -> None:
    """Write the triangles of edges ``first .. last - 1`` (``starts``: where each edge's
    records begin) into ``ab``, ``ac``, ``bc`` (:func:`dtri.kernels.graphlets.list_triangles`):
    each edge walks the shorter of its two lists and gallops in the other."""
    _list_triangles(kernel_threads(), pdst, poff, gdst, goff, glow, ghigh, first, last,
                    starts, ab, ac, bc)


@numba.njit(nogil=True, cache=True, parallel=True)
def _triangle_ids(threads: int, lowest: Any, dst: Any, ids: Any, ab: Any, ac: Any,
                  out: Any) -> None:
    n = ab.shape[0]
    for t in numba.prange(threads):
        for r in range(n * t // threads, n * (t + 1) // threads):
            x = np.int64(ids[lowest[ab[r]]])
            y = np.int64(ids[dst[ab[r]]])
            z = np.int64(ids[dst[ac[r]]])
            if x > y:
                x, y = y, x
            if y > z:
                y, z = z, y
            if x > y:
                x, y = y, x
            out[0, r] = x
            out[1, r] = y
            out[2, r] = z


def triangle_ids_cpu(lowest: Any, dst: Any, ids: Any, ab: Any, ac: Any, out: Any) -> None:
    """Write the input ids of the triangles ``ab``, ``ac`` (records of
    :func:`list_triangles_cpu`) into ``out``, ascending row by row
    (:func:`dtri.kernels.graphlets.triangle_ids`): one pass, no array per step."""
    _triangle_ids(kernel_threads(), lowest, dst, ids, ab, ac, out)


@numba.njit(nogil=True, cache=True)
def _record_cuts(ab: Any, poff: Any, threads: int) -> Any:
    """Record ranges for ``threads`` threads, cut where the row of ``ab`` changes (records
    ascend by edge), so no two threads credit edges of one row."""
    n = ab.shape[0]
    cuts = np.zeros(threads + 1, dtype=np.int64)
    cuts[threads] = n
    for t in range(1, threads):
        at = max(cuts[t - 1], n * t // threads)
        if at < n and at > 0:
            row_end = poff[np.searchsorted(poff, ab[at - 1], side="right")]
            while at < n and ab[at] < row_end:
                at += 1
        cuts[t] = min(at, n)
    return cuts


@numba.njit(nogil=True, cache=True, inline="always")
def _walk3(walked: Any, w0: int, w1: int, first: Any, f0: int, f1: int, second: Any, s0: int,
           s1: int, partition_list: int, per_edge: Any) -> int:
    """The members of ``walked[w0:w1]`` also in ``first[f0:f1]`` and ``second[s0:s1]``
    (ascending lists), galloping in the other two; each is credited to ``per_edge`` at its
    position in the partition's list: the walked one (``partition_list`` 0) or ``first``
    (1)."""
    found = 0
    for i in range(w0, w1):
        w = walked[i]
        f0 = seek(first, f0, f1, w)
        s0 = seek(second, s0, s1, w)
        if f0 >= f1 or s0 >= s1:
            break
        if first[f0] == w and second[s0] == w:
            found += 1
            per_edge[i if partition_list == 0 else f0] += 1
    return found


@numba.njit(nogil=True, cache=True, parallel=True)
def _clique_counts(threads: int, pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int,
                   tdst: Any, toff: Any, tlow: int, thigh: int, ab: Any, ac: Any, bc: Any,
                   per_record: Any, per_edge: Any) -> None:
    cuts = _record_cuts(ab, poff, threads)
    for t in numba.prange(threads):
        start, stop = cuts[t], cuts[t + 1]
        if start >= stop:
            continue
        row = np.searchsorted(poff, ab[start], side="right") - 1
        for r in range(start, stop):
            e, ia, ib = ab[r], ac[r], bc[r]
            c = pdst[ia]
            if c < tlow or c >= thigh:
                continue
            while poff[row + 1] <= e:
                row += 1
            b = pdst[e]
            lists0, lists1 = ia + 1, poff[row + 1]          # N+(a) above c
            mid0, mid1 = ib + 1, goff[b - glow + 1]        # N+(b) above c
            top0, top1 = toff[c - tlow], toff[c - tlow + 1]  # N+(c)
            la, lb, lc = lists1 - lists0, mid1 - mid0, top1 - top0
            if la == 0 or lb == 0 or lc == 0:
                continue
            if la <= lb and la <= lc:  # walk the shortest, gallop in the other two
                found = _walk3(pdst, lists0, lists1, gdst, mid0, mid1, tdst, top0, top1, 0,
                               per_edge)
            elif lb <= lc:
                found = _walk3(gdst, mid0, mid1, pdst, lists0, lists1, tdst, top0, top1, 1,
                               per_edge)
            else:
                found = _walk3(tdst, top0, top1, pdst, lists0, lists1, gdst, mid0, mid1, 1,
                               per_edge)
            per_record[r] = found


def clique_counts_cpu(pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int, tdst: Any,
                      toff: Any, tlow: int, thigh: int, ab: Any, ac: Any, bc: Any,
                      per_record: Any, per_edge: Any) -> None:
    """4-cliques over listed triangles (:func:`dtri.kernels.graphlets.clique_counts`): per
    record, the shortest of ``N+(a)``, ``N+(b)`` above ``c`` and ``N+(c)`` is walked and its
    members galloped to in the other two. Threads take record ranges cut at row changes."""
    _clique_counts(kernel_threads(), pdst, poff, gdst, goff, glow, tdst, toff, tlow, thigh,
                   ab, ac, bc, per_record, per_edge)


@numba.njit(nogil=True, cache=True, parallel=True)
def _cycle_records(threads: int, pdst: Any, poff: Any, plow: int, idst: Any, ioff: Any,
                   first: int, last: int, starts: Any, bits: int, packed: Any, pairs: Any,
                   middles: Any) -> None:
    blocks = (last - first + EDGE_BLOCK - 1) // EDGE_BLOCK
    three = packed.shape[0] > 0
    for t in numba.prange(threads):
        for block in range(t, blocks, threads):
            lo = first + block * EDGE_BLOCK
            hi = min(last, lo + EDGE_BLOCK)
            row = np.searchsorted(poff, lo, side="right") - 1
            for e in range(lo, hi):
                while poff[row + 1] <= e:
                    row += 1
                v = np.int64(pdst[e])
                u = np.int64(row + plow)
                k = starts[e - first]
                for i in range(ioff[row], ioff[row + 1]):
                    x = np.int64(idst[i])
                    if three:
                        packed[k] = (((v << bits) | x) << bits) | u
                    else:
                        pairs[k] = (v << bits) | x
                        middles[k] = u
                    k += 1
                for i in range(poff[row], e):
                    x = np.int64(pdst[i])
                    if three:
                        packed[k] = (((v << bits) | x) << bits) | u
                    else:
                        pairs[k] = (v << bits) | x
                        middles[k] = u
                    k += 1


def cycle_records_cpu(pdst: Any, poff: Any, plow: int, idst: Any, ioff: Any, first: int,
                      last: int, starts: Any, bits: int, out: Any) -> None:
    """Write the oriented wedges of edges ``first .. last - 1`` into ``out``
    (:func:`dtri.kernels.graphlets.cycle_records`: packed ``(k,)`` or ``(k, 2)``)."""
    none = np.zeros(0, dtype=np.int64)
    if out.ndim == 1:
        packed, pairs, middles = out, none, none
    else:
        packed, pairs, middles = none, np.empty(out.shape[0], np.int64), \
            np.empty(out.shape[0], np.int64)
    _cycle_records(kernel_threads(), pdst, poff, plow, idst, ioff, first, last, starts, bits,
                   packed, pairs, middles)
    if out.ndim == 2:
        out[:, 0] = pairs
        out[:, 1] = middles


@numba.njit(nogil=True, cache=True, parallel=True)
def _cycle_credits(threads: int, pairs: Any, middles: Any, bits: int, three: bool,
                   vertices: int) -> Any:
    mask = (np.int64(1) << bits) - 1
    n = pairs.shape[0]
    # bucket the wedges by anchor (a counting sort): x and u of each, anchor by anchor
    per_anchor = np.zeros(vertices + 1, dtype=np.int64)
    for i in range(n):
        key = pairs[i] >> bits if three else pairs[i]
        per_anchor[(key >> bits) + 1] += 1
    for v in range(vertices):
        per_anchor[v + 1] += per_anchor[v]
    fill = per_anchor[:-1].copy()
    xs = np.empty(n, dtype=np.int32)
    us = np.empty(n, dtype=np.int32)
    for i in range(n):
        key = pairs[i] >> bits if three else pairs[i]
        v = key >> bits
        at = fill[v]
        xs[at] = key & mask
        us[at] = pairs[i] & mask if three else middles[i]
        fill[v] = at + 1
    low = 0
    while low < vertices and per_anchor[low + 1] == 0:
        low += 1
    high = vertices
    while high > low and per_anchor[high] == per_anchor[high - 1]:
        high -= 1
    credits = np.zeros((threads, vertices), dtype=np.int64)
    for t in numba.prange(threads):
        seen = np.zeros(vertices, dtype=np.int32)
        mine = credits[t]
        for v in range(low + t, high, threads):
            lo, hi = per_anchor[v], per_anchor[v + 1]
            if hi - lo < 2:
                continue
            for i in range(lo, hi):
                seen[xs[i]] += 1
            for i in range(lo, hi):
                mine[us[i]] += seen[xs[i]] - 1
            for i in range(lo, hi):
                c = np.int64(seen[xs[i]])
                if c:
                    pairs_closed = c * (c - 1) // 2
                    mine[xs[i]] += pairs_closed
                    mine[v] += pairs_closed
                    seen[xs[i]] = 0
    total = credits[0].copy()
    for t in range(1, threads):
        total += credits[t]
    return total


def cycle_credits_cpu(keys: Any, bits: int, vertices: int) -> Any:
    """4-cycles at each vertex from oriented wedges (:func:`dtri.kernels.graphlets.
    cycle_credits`): a counting sort by anchor, then per anchor a dense count of each ``x``,
    anchors shared among the threads (each with counters of its own)."""
    none = np.zeros(0, dtype=np.int64)
    if keys.ndim == 1:
        return _cycle_credits(kernel_threads(), keys, none, bits, True, vertices)
    return _cycle_credits(kernel_threads(), np.ascontiguousarray(keys[:, 0]),
                          np.ascontiguousarray(keys[:, 1]), bits, False, vertices)

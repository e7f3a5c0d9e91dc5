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

from dtri.kernels.compiled import watch_numba
from dtri.kernels.strategy import HASHED, NOTHING, kernel_threads

watch_numba()  # their compiles and cache loads are reported apart from the stages


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
def _seek(values: Any, low: int, high: int, wanted: int) -> int:
    """The first position in ``values[low:high]`` (ascending) not below ``wanted``, galloping
    from ``low`` (``high`` if none)."""
    if low >= high or values[low] >= wanted:
        return low
    last_below = low
    step = 1
    probe = low + 1
    while probe < high and values[probe] < wanted:
        last_below = probe
        step <<= 1
        probe = last_below + step
    if probe > high:
        probe = high
    low = last_below + 1
    while low < probe:
        mid = (low + probe) >> 1
        if values[mid] < wanted:
            low = mid + 1
        else:
            probe = mid
    return low


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
            low = _seek(longer, low, l1, w)
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

MIN_TABLE_BITS = 7
"""The smallest hash table: 128 slots (as on the GPU)."""
HASH_MULTIPLIER = 2654435769
"""Fibonacci hashing: a member ``w`` goes to slot ``((w * this) mod 2**32) >> (32 - bits)``."""
EMPTY_SLOT = -1
"""A free slot of a table (members are ranks, never negative)."""
SEARCHED = 0
"""What :func:`_select` says of an edge of any search class."""


@numba.njit(nogil=True, cache=True, inline="always")
def _bit_length(x: int) -> int:
    """``int.bit_length`` of a non-negative integer."""
    bits = 0
    while x > 0:
        bits += 1
        x >>= 1
    return bits


@numba.njit(nogil=True, cache=True, inline="always")
def _hashes(a: int, b: int, enabled: bool, min_members: int, probe_cost: float,
            max_members: int) -> bool:
    """Whether an edge with ``a, b > 0`` is hashed: the rule of
    :func:`dtri.kernels.strategy.edge_class`."""
    return (enabled and min_members <= b and b <= max_members
            and a * probe_cost <= min(a, b) * _bit_length(max(a, b)))


@numba.njit(nogil=True, cache=True, inline="always")
def _select(e: int, r: int, row_end: int, pdst: Any, goff: Any, glow: int, ghigh: int,
            stateful: bool, peel: bool, part_state: Any, part_leaving: Any,
            group_leaving: Any, tuning: tuple) -> int:
    """The class of edge ``e`` (row ``r``, whose list ends at ``row_end``): ``NOTHING``
    where its target lies outside the group, it is gone, or (``peel``) neither it nor an
    edge of its row or of its target's list is leaving, or a list is empty; ``HASHED`` by
    the rule of :func:`dtri.kernels.strategy.edge_class` (:func:`_hashes`; ``tuning``:
    enabled, min_members, probe_cost, max_members); else :data:`SEARCHED` (whatever its
    search class). Both passes over the edges class them here: :func:`_count_hashed` sizes
    the hashed edges' arrays that :func:`_intersect_rows` fills."""
    v = pdst[e]
    if v < glow or v >= ghigh:
        return NOTHING
    if stateful:
        se = part_state[e]
        if se == 0:
            return NOTHING
        if peel and se != 2 and part_leaving[r] == 0 and group_leaving[v - glow] == 0:
            return NOTHING
    a = row_end - e - 1
    b = goff[v - glow + 1] - goff[v - glow]
    if a <= 0 or b <= 0:
        return NOTHING
    if _hashes(a, b, tuning[0], tuning[1], tuning[2], tuning[3]):
        return HASHED
    return SEARCHED


@numba.njit(nogil=True, cache=True)
def _may_hash(goff: Any, tuning: tuple) -> bool:
    """Whether an edge could be hashed: the probes are on and a list of the group is long
    enough for a table (else the kernels skip the rule: probes off)."""
    if not tuning[0] or tuning[3] < tuning[1]:
        return False
    longest = 0
    for v in range(goff.shape[0] - 1):
        longest = max(longest, goff[v + 1] - goff[v])
    return longest >= tuning[1]


@numba.njit(nogil=True, cache=True)
def _count_hashed(first_block: int, block_step: int, pdst: Any, poff: Any, goff: Any,
                  glow: int, ghigh: int, stateful: bool, peel: bool, part_state: Any,
                  part_leaving: Any, group_leaving: Any, tuning: tuple,
                  block_hashed: Any) -> None:
    """The hashed edges of each row block ``first_block, first_block + block_step, ...``,
    into ``block_hashed[block + 1]``."""
    rows = poff.shape[0] - 1
    for block in range(first_block, (rows + ROW_BLOCK - 1) // ROW_BLOCK, block_step):
        n = 0
        for r in range(block * ROW_BLOCK, min(rows, (block + 1) * ROW_BLOCK)):
            row_end = poff[r + 1]
            for e in range(poff[r], row_end):
                if _select(e, r, row_end, pdst, goff, glow, ghigh, stateful, peel,
                           part_state, part_leaving, group_leaving, tuning) == HASHED:
                    n += 1
        block_hashed[block + 1] = n


@numba.njit(nogil=True, cache=True)
def _intersect_rows(first_block: int, block_step: int, pdst: Any, poff: Any, gdst: Any,
                    goff: Any, glow: int, ghigh: int, credits: bool, group_credits: bool,
                    stateful: bool, peel: bool, part_state: Any, group_state: Any,
                    part_leaving: Any, group_leaving: Any, uv: Any, uw: Any, vw: Any,
                    tuning: tuple, block_start: Any, hashed: Any, stops: Any) -> int:
    """The search edges of the partition's row blocks ``first_block, first_block +
    block_step, ...`` (:data:`ROW_BLOCK` rows each): each walks the shorter of its two lists
    and searches the longer. The hashed edges of block ``k`` are written (with the end of
    their row) to ``hashed`` and ``stops`` from ``block_start[k]`` on, in row order."""
    found = 0
    rows = poff.shape[0] - 1
    for block in range(first_block, (rows + ROW_BLOCK - 1) // ROW_BLOCK, block_step):
        at = block_start[block]
        for r in range(block * ROW_BLOCK, min(rows, (block + 1) * ROW_BLOCK)):
            row_end = poff[r + 1]
            for e in range(poff[r], row_end):
                kind = _select(e, r, row_end, pdst, goff, glow, ghigh, stateful, peel,
                               part_state, part_leaving, group_leaving, tuning)
                if kind == NOTHING:
                    continue
                if kind == HASHED:
                    hashed[at] = e
                    stops[at] = row_end
                    at += 1
                    continue
                v = pdst[e]
                se = part_state[e] if stateful else 1
                a0, a1 = e + 1, row_end
                b0, b1 = goff[v - glow], goff[v - glow + 1]
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


@numba.njit(nogil=True, cache=True, inline="always")
def _table_bits(members: int) -> int:
    """``max(7, ceil(log2(2 * members)))``: a table at most half full."""
    return max(MIN_TABLE_BITS, _bit_length(2 * members - 1))


@numba.njit(nogil=True, cache=True, inline="always")
def _slot(w: int, bits: int) -> np.int64:
    """The home slot of member ``w`` in a table of ``2**bits`` slots."""
    return ((np.int64(w) * HASH_MULTIPLIER) & 0xFFFFFFFF) >> (32 - bits)


@numba.njit(nogil=True, cache=True)
def _bucket_by_target(hashed: Any, stops: Any, pdst: Any, glow: int, goff: Any) -> tuple:
    """The hashed edges in buckets by target (a counting sort; row order within a bucket):
    ``(bucket, edges, stops, work, longest)``: target ``v``'s edges are ``edges[bucket[v]:
    bucket[v + 1]]`` (their rows' ends in ``stops``), ``work[v]`` the work of the targets
    before ``v`` (each target's list, for its table, and its edges' probes), ``longest`` the
    longest list that goes into a table."""
    rows = goff.shape[0] - 1
    n = hashed.shape[0]
    bucket = np.zeros(rows + 1, dtype=np.int64)
    for k in range(n):
        bucket[pdst[hashed[k]] - glow + 1] += 1
    for v in range(rows):
        bucket[v + 1] += bucket[v]
    cursor = bucket[:-1].copy()
    edges = np.empty(n, dtype=np.int64)
    edge_stops = np.empty(n, dtype=np.int64)
    for k in range(n):
        v = pdst[hashed[k]] - glow
        at = cursor[v]
        edges[at] = hashed[k]
        edge_stops[at] = stops[k]
        cursor[v] = at + 1
    work = np.zeros(rows + 1, dtype=np.int64)
    longest = 0
    for v in range(rows):
        w = 0
        if bucket[v + 1] > bucket[v]:
            w = goff[v + 1] - goff[v]
            longest = max(longest, w)
            for k in range(bucket[v], bucket[v + 1]):
                w += edge_stops[k] - edges[k] - 1
        work[v + 1] = work[v] + w
    return bucket, edges, edge_stops, work, longest


@numba.njit(nogil=True, cache=True)
def _probe_targets(v0: int, v1: int, bucket: Any, edges: Any, stops: Any, pdst: Any,
                   gdst: Any, goff: Any, keys: Any, where: Any, credits: bool,
                   group_credits: bool, stateful: bool, peel: bool, part_state: Any,
                   group_state: Any, uv: Any, uw: Any, vw: Any) -> int:
    """The hashed edges of the targets ``v0 .. v1 - 1`` (group rows): per target with any,
    its list goes into an open-addressing table (``keys``, with each key's position in the
    list in ``where``; linear probing), then each member of every in-edge's source after the
    target is looked up there. Credits as :func:`_credit` (``uv[e]`` for each edge here)."""
    found = 0
    positions = stateful or group_credits  # where in v's list: only for its state or vw
    for v in range(v0, v1):
        k0, k1 = bucket[v], bucket[v + 1]
        if k0 == k1:
            continue
        b0, b1 = goff[v], goff[v + 1]
        bits = _table_bits(b1 - b0)
        mask = (1 << bits) - 1
        keys[: mask + 1] = EMPTY_SLOT
        for j in range(b0, b1):
            w = gdst[j]
            s = _slot(w, bits)
            while keys[s] != EMPTY_SLOT:
                s = (s + 1) & mask
            keys[s] = w
            if positions:
                where[s] = j - b0
        for k in range(k0, k1):
            e = edges[k]
            se = part_state[e] if stateful else 1
            mine = 0
            for i in range(e + 1, stops[k]):
                w = pdst[i]
                s = _slot(w, bits)
                key = keys[s]
                while key != w and key != EMPTY_SLOT:
                    s = (s + 1) & mask
                    key = keys[s]
                if key == w:
                    ib = b0 + where[s] if positions else 0
                    hit = _credit(e, i, ib, se, credits, group_credits, stateful, peel,
                                  part_state, group_state, uw, vw)
                    if hit:
                        found += 1
                        if hit == 1:
                            mine += 1
            if (credits or peel) and mine:
                uv[e] += mine
    return found


@numba.njit(nogil=True, cache=True)
def _target_cuts(work: Any, threads: int) -> Any:
    """Contiguous target ranges of about equal work, one per thread (``work``: the work
    before each target, :func:`_bucket_by_target`)."""
    rows = work.shape[0] - 1
    total = work[rows]
    cuts = np.empty(threads + 1, dtype=np.int64)
    for t in range(threads):
        cuts[t] = min(rows, np.searchsorted(work, total * t // threads))
    cuts[threads] = rows
    return cuts


@numba.njit(nogil=True, cache=True)
def _block_starts(rows: int) -> Any:
    return np.zeros((rows + ROW_BLOCK - 1) // ROW_BLOCK + 1, dtype=np.int64)


@numba.njit(nogil=True, cache=True)
def intersect_edges(pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int, ghigh: int,
                    credits: bool, group_credits: bool, stateful: bool, peel: bool,
                    part_state: Any, group_state: Any, part_leaving: Any, group_leaving: Any,
                    uv: Any, uw: Any, vw: Any, tuning: tuple) -> int:
    """Triangles closed by the partition's edges (CSR ``pdst``, ``poff``) whose target lies
    in ``[glow, ghigh)``, whose lists are the group's CSR (``gdst``, ``goff``); see
    :func:`dtri.kernels.intersect.intersect` for the credits and states, and
    :func:`dtri.kernels.strategy.edge_class` for ``tuning`` (enabled, min_members,
    probe_cost, max_members). A search edge walks the shorter of its two lists
    (smaller-degree first) and searches the longer; the hashed edges are taken target by
    target, each target's list in a hash table."""
    starts = _block_starts(poff.shape[0] - 1)
    blocks = starts.shape[0] - 1
    if not _may_hash(goff, tuning):
        tuning = (False, tuning[1], tuning[2], tuning[3])
    else:
        _count_hashed(0, 1, pdst, poff, goff, glow, ghigh, stateful, peel, part_state,
                      part_leaving, group_leaving, tuning, starts)
        for k in range(blocks):
            starts[k + 1] += starts[k]
    n = starts[blocks]
    hashed = np.empty(n, dtype=np.int64)
    stops = np.empty(n, dtype=np.int64)
    found = _intersect_rows(0, 1, pdst, poff, gdst, goff, glow, ghigh, credits, group_credits,
                            stateful, peel, part_state, group_state, part_leaving,
                            group_leaving, uv, uw, vw, tuning, starts, hashed, stops)
    if n:
        bucket, edges, stops, _, longest = _bucket_by_target(hashed, stops, pdst, glow, goff)
        size = 1 << _table_bits(longest)
        found += _probe_targets(0, goff.shape[0] - 1, bucket, edges, stops, pdst, gdst, goff,
                                np.empty(size, dtype=np.int32),
                                np.empty(size, dtype=np.int32), credits, group_credits,
                                stateful, peel, part_state, group_state, uv, uw, vw)
    return found


@numba.njit(nogil=True, cache=True, parallel=True)
def intersect_edges_parallel(threads: int, pdst: Any, poff: Any, gdst: Any, goff: Any,
                             glow: int, ghigh: int, credits: bool, stateful: bool, peel: bool,
                             part_state: Any, group_state: Any, part_leaving: Any,
                             group_leaving: Any, uv: Any, uw: Any, tuning: tuple) -> int:
    """:func:`intersect_edges` on ``threads`` threads. The search edges: each thread takes
    every ``threads``-th row block; without the group's credits every write (``uv``, ``uw``)
    lands on an edge of the row being walked, so no two threads write the same counter. The
    hashed edges: each thread takes a contiguous range of targets of about equal work, with
    a table of its own; ``uv[e]`` is then one thread's, but ``uw`` (positions in the
    sources' rows) is not: threads after the first count it in arrays of their own, added
    up at the end."""
    none = np.zeros(0, dtype=uw.dtype)
    starts = _block_starts(poff.shape[0] - 1)
    blocks = starts.shape[0] - 1
    if not _may_hash(goff, tuning):
        tuning = (False, tuning[1], tuning[2], tuning[3])
    else:
        for t in numba.prange(threads):
            _count_hashed(t, threads, pdst, poff, goff, glow, ghigh, stateful, peel,
                          part_state, part_leaving, group_leaving, tuning, starts)
        for k in range(blocks):
            starts[k + 1] += starts[k]
    n = starts[blocks]
    hashed = np.empty(n, dtype=np.int64)
    stops = np.empty(n, dtype=np.int64)
    found = np.zeros(threads, dtype=np.int64)
    for t in numba.prange(threads):
        found[t] = _intersect_rows(t, threads, pdst, poff, gdst, goff, glow, ghigh, credits,
                                   False, stateful, peel, part_state, group_state,
                                   part_leaving, group_leaving, uv, uw, none, tuning, starts,
                                   hashed, stops)
    total = found.sum()
    if n == 0:
        return total
    bucket, edges, stops, work, longest = _bucket_by_target(hashed, stops, pdst, glow, goff)
    cuts = _target_cuts(work, threads)
    size = 1 << _table_bits(longest)
    extra = np.zeros((threads - 1, uw.shape[0]), dtype=uw.dtype)  # empty without credits
    for t in numba.prange(threads):
        own = uw if t == 0 else extra[t - 1]
        found[t] = _probe_targets(cuts[t], cuts[t + 1], bucket, edges, stops, pdst, gdst,
                                  goff, np.empty(size, dtype=np.int32),
                                  np.empty(size, dtype=np.int32), credits, False, stateful,
                                  peel, part_state, group_state, uv, own, none)
    total += found.sum()
    m = uw.shape[0]
    if m and threads > 1:
        for t in numba.prange(threads):
            for i in range(m * t // threads, m * (t + 1) // threads):
                add = uw[i]
                for x in range(threads - 1):
                    add += extra[x, i]
                uw[i] = add
    return total


# ---------------------------------------------------------------- the marks kernel
# (dtri.kernels.intersect, kernel "marks": SuiteSparse's saxpy under the mask, per row)

@numba.njit(nogil=True, cache=True, inline="always")
def _gallop_marked(pdst: Any, e: int, a1: int, gdst: Any, b0: int, b1: int, credits: bool,
                   group_credits: bool, uw: Any, vw: Any) -> int:
    """The members of ``pdst[e + 1:a1]`` found in ``gdst[b0:b1]`` (galloping), credited to
    ``uw`` (and ``vw``); for an edge whose target's list is far longer than the rest of its
    row."""
    found = 0
    low = b0
    for i in range(e + 1, a1):
        w = pdst[i]
        low = _seek(gdst, low, b1, w)
        if low >= b1:
            break
        if gdst[low] == w:
            found += 1
            if credits:
                uw[i] += 1
            if group_credits:
                vw[low] += 1
    return found


@numba.njit(nogil=True, cache=True)
def _marked_rows(first_block: int, block_step: int, pdst: Any, poff: Any, gdst: Any,
                 goff: Any, glow: int, ghigh: int, credits: bool, group_credits: bool,
                 uv: Any, uw: Any, vw: Any, gallop_ratio: float, marks: Any) -> int:
    """The row blocks ``first_block, first_block + block_step, ...`` of the partition: each
    row ``u`` marks its members in ``marks`` (indexed by rank: ``1 + `` their position in
    the row), then each edge ``(u, v)`` streams ``v``'s list and counts the marked members:
    every triangle ``u < v < w`` once, no search. An edge whose ``v`` list is more than
    ``gallop_ratio`` × the rest of ``u``'s row × log2 of its own length gallops from the
    row's side instead. ``marks`` is all zeros before and after; for a count (no credits)
    they are flags (0 or 1), summed."""
    found = 0
    rows = poff.shape[0] - 1
    for block in range(first_block, (rows + ROW_BLOCK - 1) // ROW_BLOCK, block_step):
        for r in range(block * ROW_BLOCK, min(rows, (block + 1) * ROW_BLOCK)):
            a0, a1 = poff[r], poff[r + 1]
            if a1 - a0 < 2:
                continue
            for i in range(a0, a1):
                marks[pdst[i]] = i - a0 + 1 if credits else 1
            for e in range(a0, a1 - 1):
                v = pdst[e]
                if v < glow or v >= ghigh:
                    continue
                b0, b1 = goff[v - glow], goff[v - glow + 1]
                b = b1 - b0
                if b == 0:
                    continue
                a = a1 - e - 1
                if b > gallop_ratio * a * _bit_length(b):
                    mine = _gallop_marked(pdst, e, a1, gdst, b0, b1, credits, group_credits,
                                          uw, vw)
                elif not (credits or group_credits):  # a count: flags summed, no branch
                    mine = 0
                    for j in range(b0, b1):
                        mine += marks[gdst[j]]
                elif not group_credits:  # the per-vertex credits: the row's alone
                    mine = 0
                    for j in range(b0, b1):  # a miss adds 0 to the row's first edge
                        at = marks[gdst[j]]
                        hit = at != 0
                        mine += hit
                        uw[a0 + max(at, 1) - 1] += hit
                else:
                    mine = 0
                    for j in range(b0, b1):
                        at = marks[gdst[j]]
                        if at:
                            mine += 1
                            if credits:
                                uw[a0 + at - 1] += 1
                            if group_credits:
                                vw[j] += 1
                found += mine
                if credits and mine:
                    uv[e] += mine
            for i in range(a0, a1):
                marks[pdst[i]] = 0
    return found


@numba.njit(nogil=True, cache=True)
def _mark_width(pdst: Any, gdst: Any) -> int:
    """One more than the largest rank among the targets: the marks' length."""
    top = -1
    for i in range(pdst.shape[0]):
        top = max(top, pdst[i])
    for i in range(gdst.shape[0]):
        top = max(top, gdst[i])
    return top + 1


@numba.njit(nogil=True, cache=True)
def intersect_marked(pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int, ghigh: int,
                     credits: bool, group_credits: bool, uv: Any, uw: Any, vw: Any,
                     gallop_ratio: float, positions: Any) -> int:
    """:func:`intersect_edges` by marks, on one thread (see :func:`_marked_rows`): no
    states. ``positions``: any array of the marks' dtype (uint8 for a count, whose marks
    are flags; int32 with credits, whose marks are positions)."""
    marks = np.zeros(_mark_width(pdst, gdst), dtype=positions.dtype)
    return _marked_rows(0, 1, pdst, poff, gdst, goff, glow, ghigh, credits, group_credits,
                        uv, uw, vw, gallop_ratio, marks)


@numba.njit(nogil=True, cache=True, parallel=True)
def intersect_marked_parallel(threads: int, pdst: Any, poff: Any, gdst: Any, goff: Any,
                              glow: int, ghigh: int, credits: bool, uv: Any, uw: Any,
                              gallop_ratio: float, positions: Any) -> int:
    """:func:`intersect_marked` on ``threads`` threads, each with marks of its own, taking
    every ``threads``-th row block: every write (``uv``, ``uw``) lands on an edge of the
    row being walked, so no two threads write the same counter (no group credits)."""
    width = _mark_width(pdst, gdst)
    none = np.zeros(0, dtype=uw.dtype)
    found = np.zeros(threads, dtype=np.int64)
    for t in numba.prange(threads):
        marks = np.zeros(width, dtype=positions.dtype)
        found[t] = _marked_rows(t, threads, pdst, poff, gdst, goff, glow, ghigh, credits,
                                False, uv, uw, none, gallop_ratio, marks)
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
def prepare_marked(src: Any, dst: Any, largest: int, by_degree: bool) -> tuple:
    """The whole preparation of a graph whose ids ``0 .. largest`` are few enough to mark
    (:func:`dtri.kernels.canonicalize.partition_vertices` holds them as marks), in one pass
    of each kind, where the NumPy path takes thirty-odd array calls: the dense id of every
    id by a running count of the marks; the simple edges as packed keys ``(low << bits) |
    high``, sorted (:func:`radix_sort`) and made distinct; the degrees; the ranks, in
    (degree, dense id) order by a counting sort of the degrees (``by_degree``; else the
    dense ids are the ranks); and the edges pointed from lower to higher rank as a CSR over
    every rank, each list ascending (its edges bucketed by target first, then dealt to their
    sources in target order). The same ranks and CSR as :func:`dtri.prepared.local.
    prepare_partition`'s NumPy path. Returns ``(dst, offsets, vertices, input id by rank,
    degree by rank, longest out-list)``."""
    m = src.shape[0]
    marks = np.zeros(largest + 1, dtype=np.uint8)
    for i in range(m):
        marks[src[i]] = 1
        marks[dst[i]] = 1
    table = np.empty(largest + 1, dtype=np.int64)  # read only where marked
    n = 0
    for v in range(largest + 1):
        if marks[v]:
            table[v] = n
            n += 1
    ids = np.empty(n, dtype=np.int64)
    for v in range(largest + 1):
        if marks[v]:
            ids[table[v]] = v
    bits = 1
    while (1 << bits) < n:
        bits += 1
    keys = np.empty(m, dtype=np.int64)
    k = 0
    for i in range(m):
        a = table[src[i]]
        b = table[dst[i]]
        if a < b:
            keys[k] = (a << bits) | b
            k += 1
        elif b < a:
            keys[k] = (b << bits) | a
            k += 1
    keys = radix_sort(keys[:k])
    mask = (1 << bits) - 1
    degree = np.zeros(n, dtype=np.int64)
    edges = 0
    for i in range(k):
        if i and keys[i] == keys[i - 1]:
            continue
        keys[edges] = keys[i]
        edges += 1
        degree[keys[i] >> bits] += 1
        degree[keys[i] & mask] += 1
    rank = np.arange(n)
    order = np.arange(n)
    if by_degree:
        top = 0
        for v in range(n):
            top = max(top, degree[v])
        starts = np.zeros(top + 2, dtype=np.int64)
        for v in range(n):
            starts[degree[v] + 1] += 1
        for d in range(top + 1):
            starts[d + 1] += starts[d]
        for v in range(n):
            r = starts[degree[v]]
            starts[degree[v]] += 1
            rank[v] = r
            order[r] = v
    offsets = np.zeros(n + 1, dtype=np.int64)
    into = np.zeros(n + 1, dtype=np.int64)
    for i in range(edges):
        a = rank[keys[i] >> bits]
        b = rank[keys[i] & mask]
        offsets[min(a, b) + 1] += 1
        into[max(a, b) + 1] += 1
    longest = 0
    for r in range(n):
        longest = max(longest, offsets[r + 1])
        offsets[r + 1] += offsets[r]
        into[r + 1] += into[r]
    by_target = np.empty(edges, dtype=np.int64)
    fill = into[:n].copy()
    for i in range(edges):
        a = rank[keys[i] >> bits]
        b = rank[keys[i] & mask]
        t = max(a, b)
        by_target[fill[t]] = min(a, b)
        fill[t] += 1
    out = np.empty(edges, dtype=np.int32)
    fill = offsets[:n].copy()
    for t in range(n):
        for j in range(into[t], into[t + 1]):
            s = by_target[j]
            out[fill[s]] = t
            fill[s] += 1
    ids_by_rank = np.empty(n, dtype=np.int64)
    degree_by_rank = np.empty(n, dtype=np.int64)
    for r in range(n):
        ids_by_rank[r] = ids[order[r]]
        degree_by_rank[r] = degree[order[r]]
    return out, offsets, n, ids_by_rank, degree_by_rank, longest


ID_DIGITS = 18
"""The most digits :func:`parse_id_pairs` reads in a field: any such number fits int64."""


@numba.njit(nogil=True, cache=True)
def parse_id_pairs(data: Any, first: int, second: int, comment: int, other_comment: int,
                   ) -> tuple[Any, Any, bool]:
    """Fields ``first`` and ``second`` of each line of whitespace-separated text (``data``:
    its bytes as uint8), one pass: a line is fields of digits apart by spaces and tabs, then
    a comment from ``comment`` or ``other_comment`` to the line's end (blank and comment
    lines hold no edge); a CR only before a LF or at the end. Returns ``(src, dst, True)``,
    or ``False`` (and empty arrays) at the first byte or line outside that: a sign, any
    other character, a field of more than :data:`ID_DIGITS` digits, a line of too few
    fields; the exact parser then reads the block and says what is wrong with it."""
    n = data.shape[0]
    rows = n // 4 + 1  # the shortest line that holds an edge: "1 2\n"
    src = np.empty(rows, dtype=np.int64)
    dst = np.empty(rows, dtype=np.int64)
    none = np.empty(0, dtype=np.int64)
    wanted = max(first, second)
    rows = 0
    i = 0
    while i < n:
        field = digits = value = 0
        a = b = -1
        while i < n:
            c = data[i]
            if 48 <= c <= 57:
                digits += 1
                if digits > ID_DIGITS:
                    return none, none, False
                value = value * 10 + (c - 48)
                i += 1
                continue
            if c != 32 and c != 9 and c != 10 and c != 13 and c != comment \
                    and c != other_comment:
                return none, none, False
            if digits:
                if field == first:
                    a = value
                if field == second:
                    b = value
                field += 1
                digits = value = 0
            i += 1
            if c == 10:
                break
            if c == 13 and i < n and data[i] != 10:
                return none, none, False
            if c in (comment, other_comment):
                while i < n and data[i] != 10:
                    i += 1
        if digits:  # the last line, without its LF
            if field == first:
                a = value
            if field == second:
                b = value
            field += 1
        if field == 0:
            continue
        if field <= wanted:
            return none, none, False
        src[rows] = a
        dst[rows] = b
        rows += 1
    return src[:rows].copy(), dst[:rows].copy(), True


@numba.njit(nogil=True, cache=True)
def scatter_add(ids: Any, weights: Any, size: int) -> Any:
    """``out[ids[i]] += weights[i]`` into int64 zeros of ``size``: an exact ``bincount`` with
    integer weights (NumPy's adds in float64)."""
    out = np.zeros(size, dtype=np.int64)
    scatter_add_into(out, ids, weights)
    return out


@numba.njit(nogil=True, cache=True)
def scatter_add_into(out: Any, ids: Any, weights: Any) -> None:
    """``out[ids[i]] += weights[i]`` in place."""
    for i in range(ids.shape[0]):
        out[ids[i]] += weights[i]


# ---------------------------------------------------------------- graphlets
# (dtri.kernels.graphlets)

EDGE_BLOCK = 256
"""Edges taken together by one thread of the triangle listing and the 4-cycle wedges; thread
``t`` of ``T`` takes blocks ``t, t + T, ...``."""


@numba.njit(nogil=True, cache=True, inline="always")
def _write_common(shorter: Any, s0: int, s1: int, longer: Any, l0: int, l1: int,
                  swapped: bool, e: int, k: int, ab: Any, ac: Any, bc: Any) -> None:
    """Write each member of ``shorter[s0:s1]`` found in ``longer[l0:l1]`` as a triangle of
    edge ``e`` at records ``k, k + 1, ...``; ``swapped``: the shorter list is the group's."""
    for i in range(s0, s1):
        l0 = _seek(longer, l0, l1, shorter[i])
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
        f0 = _seek(first, f0, f1, w)
        s0 = _seek(second, s0, s1, w)
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

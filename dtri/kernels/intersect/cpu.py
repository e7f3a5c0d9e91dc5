"""The fused intersection compiled by numba (:func:`intersect_edges`, the marks kernel
:func:`intersect_marked` and their threaded twins), for :func:`dtri.kernels.intersect.intersect`.

Imported only where they run (numba takes a moment to import); compiled on first use and
cached on disk by numba. They hold no lock (``nogil``), so Dask's threaded scheduler runs them
on several cores; dtri's CPU workers are single-threaded processes, each running one; an
in-process run gives one task every core (:func:`intersect_edges_parallel`, numba's threads;
:func:`intersect_marked_threads`, Python's).
:func:`seek` (a gallop) is shared with the graphlet kernels (:mod:`dtri.kernels.graphlets.cpu`).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from dtri.kernels.compiled import watch_numba
from dtri.kernels.strategy import HASHED, NOTHING

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
def seek(values: Any, low: int, high: int, wanted: int) -> int:
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
            low = seek(longer, low, l1, w)
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
        low = seek(gdst, low, b1, w)
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


@numba.njit(nogil=True, cache=True)
def marked_blocks(first_block: int, block_step: int, width: int, pdst: Any, poff: Any,
                  gdst: Any, goff: Any, glow: int, ghigh: int, credits: bool, uv: Any,
                  uw: Any, gallop_ratio: float, positions: Any) -> int:
    """One thread's share of :func:`intersect_marked_threads`: the row blocks
    ``first_block, first_block + block_step, ...``, with marks of its own of ``width``."""
    marks = np.zeros(width, dtype=positions.dtype)
    none = np.zeros(0, dtype=uw.dtype)
    return _marked_rows(first_block, block_step, pdst, poff, gdst, goff, glow, ghigh, credits,
                        False, uv, uw, none, gallop_ratio, marks)


def intersect_marked_threads(threads: int, pdst: Any, poff: Any, gdst: Any, goff: Any,
                             glow: int, ghigh: int, credits: bool, uv: Any, uw: Any,
                             gallop_ratio: float, positions: Any) -> int:
    """:func:`intersect_marked` on ``threads`` Python threads, each taking every
    ``threads``-th row block with marks of its own (:func:`marked_blocks`, which releases the
    GIL): every write (``uv``, ``uw``) lands on an edge of the row being walked, so no two
    threads write the same counter (no group credits). Threads of Python's own, not numba's
    ``prange``, whose parallel kernel cost 3-4.4 s to compile on a machine's first run."""
    from concurrent.futures import ThreadPoolExecutor

    width = int(_mark_width(pdst, gdst))
    # compiled (or loaded) here first, on no rows: threads that each compiled it would
    # count the compile once each (the compile clock's spans are per thread)
    marked_blocks(0, threads, width, pdst, poff[:1], gdst, goff, glow, ghigh, credits, uv, uw,
                  gallop_ratio, positions)
    with ThreadPoolExecutor(threads, thread_name_prefix="dtri-marks") as pool:
        shares = [pool.submit(marked_blocks, t, threads, width, pdst, poff, gdst, goff, glow,
                              ghigh, credits, uv, uw, gallop_ratio, positions)
                  for t in range(threads)]
        return sum(int(share.result()) for share in shares)

"""The 2D cyclic decomposition of the oriented adjacency (Tom & Karypis): blocks, and the
intersection of one Cannon round. Array code only; :mod:`dtri.analytics.cannon` builds the
tasks.

On a ``q × q`` grid, block ``(r, s)`` holds the oriented edges ``(a, c)`` with ``a ≡ r`` and
``c ≡ s`` (mod ``q``). A block is stored *compact*: its rows are the ranks ``r, r + q, r +
2q, ...`` only, so a row index ``i`` is the rank ``r + q·i``, and a target ``c = s + q·j``
is its local id ``j``. It is stored, and shifted, as the wire format packs rows
(:func:`dtri.kernels.wire.pack_rows`); local ids span ``n / q`` values, so they narrow well.

Round ``(x, y, z)`` closes the triangles ``a < b < c`` of the edges ``(a, b)`` of block
``(x, y)`` with ``c ≡ z`` in ``N+(a) ∩ N+(b)``: those members of row ``a`` in block ``(x,
z)`` and of row ``b`` in block ``(y, z)``. Which worker runs which of the ``q³`` rounds is
:func:`round_assignment`. The fused intersection kernel
(:func:`dtri.kernels.intersect.intersect`) takes a partition whose rows hold both the edges
it closes and their members, so the round gives it the union of blocks ``(x, y)`` and ``(x,
z)`` (:func:`merged`) against block ``(y, z)``. The union's edges into class ``z ≠ y`` find
nothing: their target's row in block ``(y, z)`` is empty. Every triangle is found once, in
the round of its lowest edge's block and its highest vertex's class.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cache
from typing import Any

from dtri.kernels.csr import CSR, sources
from dtri.kernels.dispatch import array_module
from dtri.kernels.intersect import intersect, vertex_credits
from dtri.kernels.wire import pack_rows, row_offsets, unpack_rows

ROW_SHIFT = 32
"""Where a row index sits in the packed keys that merge two blocks' rows (ranks and rows
are below 2**31)."""


def class_rows(low: int, high: int, r: int, q: int) -> tuple[int, int]:
    """The compact rows ``[first, last)`` of the ranks ``≡ r`` (mod ``q``) in ``[low, high)``:
    rank ``r + q·i`` for each row ``i``."""
    first = max(0, -(-(low - r) // q))
    last = max(first, -(-(high - r) // q))
    return first, last


def cyclic_pieces(part: CSR, q: int, fmt: str = "raw") -> dict[int, Any]:
    """A sorted partition cut into its ``q²`` pieces, keyed ``r·q + s``: per compact row of
    class ``r`` in the partition's range, its out-degree in class ``s`` (int32), and those
    targets as local ids ``c // q`` (int32, in order), packed in the wire format ``fmt``
    (:func:`~dtri.kernels.wire.pack_rows`). The pieces of the partitions, in partition
    order, make the blocks (:func:`cyclic_block`)."""
    xp = array_module(part.offsets)
    src = sources(part)
    row_class = src % q
    col_class = part.dst % q
    pieces = {}
    for r in range(q):
        first, last = class_rows(part.low, part.high, r, q)
        in_row = row_class == r
        for s in range(q):
            keep = in_row & (col_class == s)
            rows = src[keep] // q - first
            degree = (xp.bincount(rows, minlength=last - first) if rows.shape[0]
                      else xp.zeros(last - first, dtype=xp.int64))
            pieces[r * q + s] = pack_rows(degree.astype(xp.int32), part.dst[keep] // q, fmt)
    return pieces


def cyclic_block(fmt: str, *pieces: Any) -> Any:
    """One block from its pieces of every partition, in partition order (ascending ranks),
    packed in the wire format ``fmt``: as it is stored on its home and shifted."""
    rows = [unpack_rows(piece) for piece in pieces]
    xp = array_module(rows[0][1])
    return pack_rows(xp.concatenate([degree for degree, _ in rows]),
                     xp.concatenate([local for _, local in rows]), fmt)


def unpacked_block(block: Any, s: int, q: int) -> tuple[Any, Any]:
    """A stored block of column class ``s`` (:func:`cyclic_block`) as ``(dst, offsets)``:
    int32 targets (ranks ``s + q·j`` again), int64 offsets over its compact rows."""
    degree, local = unpack_rows(block)
    xp = array_module(local)
    dst = (local.astype(xp.int64) * q + s).astype(xp.int32)
    return dst, row_offsets(degree)


def spread(block: tuple[Any, Any], r: int, q: int, vertices: int) -> CSR:
    """A compact block of row class ``r`` as a CSR over every rank ``[0, vertices)``: the
    ranks of other classes get empty rows (the kernel indexes rows by rank)."""
    dst, offsets = block
    if q == 1:
        return CSR(dst, offsets, 0)
    xp = array_module(offsets)
    at = (xp.arange(vertices + 1, dtype=xp.int64) - r + q - 1) // q
    xp.clip(at, 0, offsets.shape[0] - 1, out=at)
    return CSR(dst, offsets[at], 0)


def merged(first: tuple[Any, Any], second: tuple[Any, Any]) -> tuple[Any, Any]:
    """Two blocks of the same row class as one: each row the union of its two lists, sorted.
    The lists are disjoint (their targets lie in different column classes), and each block's
    packed keys ``(row << 32) | target`` ascend already, so each key's place in the union is
    its own index plus the other block's keys below it: two searches, no sort."""
    union, _ = merged_with_places(first, second)
    return union


def merged_with_places(first: tuple[Any, Any], second: tuple[Any, Any],
                       ) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """:func:`merged`, and where each block's edges went in the union (int64 positions, in
    each block's own order)."""
    xp = array_module(first[1])
    keys = [(sources(CSR(dst, offsets, 0)) << ROW_SHIFT) | dst.astype(xp.int64)
            for dst, offsets in (first, second)]
    dst = xp.empty(keys[0].shape[0] + keys[1].shape[0], dtype=xp.int32)
    places = []
    for mine, other, block in ((keys[0], keys[1], first), (keys[1], keys[0], second)):
        place = xp.arange(mine.shape[0], dtype=xp.int64) + xp.searchsorted(other, mine)
        dst[place] = block[0]
        places.append(place)
    degree = (first[1][1:] - first[1][:-1]) + (second[1][1:] - second[1][:-1])
    offsets = xp.zeros(degree.shape[0] + 1, dtype=xp.int64)
    xp.cumsum(degree, out=offsets[1:])
    return (dst, offsets), (places[0], places[1])


Round = tuple[int, int, int]
"""``(x, y, z)``: the edges of block ``(x, y)`` closed by the members of class ``z``, from
blocks ``(x, z)`` and ``(y, z)``."""


def round_blocks(x: int, y: int, z: int, q: int) -> set[int]:
    """The blocks a round reads, as grid indices ``r·q + s``."""
    return {x * q + y, x * q + z, y * q + z}


def pulled_blocks(rounds: Sequence[Round], worker: int, q: int) -> set[int]:
    """The blocks a grid worker running ``rounds`` pulls: those they read, less its own."""
    wanted: set[int] = set()
    for x, y, z in rounds:
        wanted |= round_blocks(x, y, z, q)
    wanted.discard(worker)
    return wanted


@cache
def round_assignment(q: int) -> tuple[tuple[Round, ...], ...]:
    """The ``q`` rounds each grid worker runs. Cannon's order gives worker ``(x, y)`` the
    rounds ``(x, y, z)``, ``z = (x + y + t) mod q``: it reads rows ``x`` and ``y``, so one off
    the diagonal pulls ``2q − 1`` blocks and one on it ``q − 1``. Swapping rounds between
    workers while that lowers the sum of squared pulls evens them out (on 2 x 2: 2 blocks
    each, where Cannon's order pulls 3 off the diagonal); each worker keeps ``q`` rounds, of
    about equal work on blocks of about equal size."""
    grid = range(q * q)
    work = [[(g // q, g % q, (g // q + g % q + t) % q) for t in range(q)] for g in grid]
    cost = [len(pulled_blocks(work[g], g, q)) for g in grid]
    improved = True
    while improved:
        improved = False
        for a in sorted(grid, key=lambda g: -cost[g]):
            for b in (b for b in grid if b != a):
                for i, j in itertools.product(range(q), repeat=2):
                    mine, theirs = list(work[a]), list(work[b])
                    mine[i], theirs[j] = theirs[j], mine[i]
                    ca, cb = len(pulled_blocks(mine, a, q)), len(pulled_blocks(theirs, b, q))
                    if ca * ca + cb * cb < cost[a] ** 2 + cost[b] ** 2:
                        work[a], work[b], cost[a], cost[b] = mine, theirs, ca, cb
                        improved = True
    return tuple(tuple(sorted(rounds)) for rounds in work)


def round_inputs(arrived: tuple[tuple, tuple, tuple], x: int, y: int, z: int, q: int,
                 vertices: int) -> tuple[CSR, CSR]:
    """The kernel's two CSRs for round ``(x, y, z)`` from its blocks ``(x, y)``, ``(x, z)``
    and ``(y, z)``: the union of the first two, and the third."""
    own, rows_block, lists_block = (unpacked_block(block, s, q) for block, s in
                                    zip(arrived, (y, z, z), strict=True))
    part = own if z == y else merged(own, rows_block)
    return spread(part, x, q, vertices), spread(lists_block, y, q, vertices)


def round_triangles(arrived: tuple[tuple, tuple, tuple], x: int, y: int, z: int, q: int,
                    vertices: int, kernel: str = "hash") -> int:
    """Triangles found in round ``(x, y, z)``, from its blocks once they arrived, by the
    fused join's ``kernel`` (on the CPU, :func:`~dtri.kernels.strategy.cpu_kernel`'s)."""
    part, group = round_inputs(arrived, x, y, z, q, vertices)
    return intersect(part, group, kernel=kernel).triangles


def round_vertex_triangles(arrived: tuple[tuple, tuple, tuple], x: int, y: int, z: int, q: int,
                           vertices: int, before: Any = None, kernel: str = "hash") -> Any:
    """The triangles at each rank found in round ``(x, y, z)`` (int64, one per rank), added
    to ``before`` (the worker's earlier rounds) where given."""
    part, group = round_inputs(arrived, x, y, z, q, vertices)
    found = intersect(part, group, credits=True, kernel=kernel)
    xp = array_module(part.offsets)
    out = xp.zeros(vertices, dtype=xp.int64) if before is None else before.copy()
    return vertex_credits(part, found.uv, found.uw, vertices, out=out)


def round_edge_credits(arrived: tuple[Any, Any, Any], x: int, y: int, z: int, q: int,
                       vertices: int, before: dict[int, Any] | None = None,
                       kernel: str = "hash") -> dict[int, Any]:
    """The triangles on each edge found in round ``(x, y, z)``, by the block that holds the
    edge (keyed ``r·q + s``: int64, one per edge of the block, in its order), added to
    ``before`` (the worker's earlier rounds, whose arrays are added to in place).

    Each triangle ``a < b < c`` found at edge ``(a, b)`` of block ``(x, y)`` is credited to
    its three edges: ``(a, b)`` there, ``(a, c)`` in block ``(x, z)`` and ``(b, c)`` in block
    ``(y, z)`` (:func:`~dtri.kernels.intersect.intersect`'s ``uv``, ``uw`` and ``vw``)."""
    own, rows_block, lists_block = (unpacked_block(block, s, q) for block, s in
                                    zip(arrived, (y, z, z), strict=True))
    union, places = (own, None) if z == y else merged_with_places(own, rows_block)
    found = intersect(spread(union, x, q, vertices), spread(lists_block, y, q, vertices),
                      credits=True, group_credits=True, kernel=kernel)
    xp = array_module(union[1])
    credits = found.uv.astype(xp.int64) + found.uw
    out = {} if before is None else before

    def add(block: int, values: Any) -> None:
        if block in out:
            out[block] += values
        else:
            out[block] = values.astype(xp.int64)

    if places is None:
        add(x * q + y, credits)
    else:
        add(x * q + y, credits[places[0]])
        add(x * q + z, credits[places[1]])
    add(y * q + z, found.vw)
    return out


def class_of_edges(part: CSR, q: int) -> Any:
    """The block ``r·q + s`` of each edge of a sorted partition (its source's class ``r``,
    its target's ``s``), in the partition's order."""
    return (sources(part) % q) * q + part.dst % q


def block_segments(values: Any, counts: Sequence[int]) -> dict[int, Any]:
    """A block's per-edge values cut into the segments of its pieces, one per sorted
    partition of ``counts[p]`` edges each (the block is its pieces in partition order)."""
    out, start = {}, 0
    for p, count in enumerate(counts):
        out[p] = values[start: start + count]
        start += count
    return out


def partition_values(part: CSR, q: int, segments: dict[int, Any]) -> Any:
    """A sorted partition's per-edge values (int64, in its order) from its segment of every
    block (``segments[b]``: the values of its edges of class ``b``, in its order)."""
    xp = array_module(part.offsets)
    classes = class_of_edges(part, q)
    out = xp.zeros(part.edges, dtype=xp.int64)
    for block, values in segments.items():
        out[classes == block] = values
    return out

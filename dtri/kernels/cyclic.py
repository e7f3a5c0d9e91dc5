"""The 2D cyclic decomposition of the oriented adjacency (Tom & Karypis): blocks, and the
intersection of one Cannon round. Array code only; :mod:`dtri.analytics.cannon` builds the
tasks.

On a ``q × q`` grid, block ``(r, s)`` holds the oriented edges ``(a, c)`` with ``a ≡ r`` and
``c ≡ s`` (mod ``q``). A block is stored *compact*: its rows are the ranks ``r, r + q, r +
2q, ...`` only, so a row index ``i`` is the rank ``r + q·i``, and the targets keep their
ranks. Stored as a plain tuple ``(dst, offsets)`` (int32 targets, int64 offsets, one more
than the rows), as every stored CSR is (:func:`dtri.kernels.csr.stored`).

Worker ``(x, y)`` owns the tasks of block ``(x, y)``: each edge ``(a, b)`` there closes the
triangles ``a < b < c`` with ``c`` in ``N+(a) ∩ N+(b)``. In round ``z`` it sees only the
members ``c ≡ z``: those of row ``a`` in block ``(x, z)`` and of row ``b`` in block ``(y,
z)``. The fused intersection kernel (:func:`dtri.kernels.intersect.intersect`) takes a
partition whose rows hold both the edges it closes and their members, so the round gives it
the union of blocks ``(x, y)`` and ``(x, z)`` (:func:`merged`) against block ``(y, z)``. The
union's edges into class ``z ≠ y`` find nothing: their target's row in block ``(y, z)`` is
empty. Every triangle is found once, by the worker of its lowest edge, in the round of its
highest vertex's class.
"""

from __future__ import annotations

from typing import Any

from dtri.kernels.csr import CSR, sources
from dtri.kernels.dispatch import array_module
from dtri.kernels.intersect import intersect, vertex_credits

ROW_SHIFT = 32
"""Where a row index sits in the packed keys that merge two blocks' rows (ranks and rows
are below 2**31)."""


def class_rows(low: int, high: int, r: int, q: int) -> tuple[int, int]:
    """The compact rows ``[first, last)`` of the ranks ``≡ r`` (mod ``q``) in ``[low, high)``:
    rank ``r + q·i`` for each row ``i``."""
    first = max(0, -(-(low - r) // q))
    last = max(first, -(-(high - r) // q))
    return first, last


def block_rows(vertices: int, r: int, q: int) -> int:
    """The rows of a block of row class ``r`` over the ranks ``[0, vertices)``."""
    return class_rows(0, vertices, r, q)[1]


def cyclic_pieces(part: CSR, q: int) -> dict[int, tuple[Any, Any]]:
    """A sorted partition cut into its ``q²`` pieces, keyed ``r·q + s``: per compact row of
    class ``r`` in the partition's range, its out-degree in class ``s`` (int32), and those
    targets (int32, in order). The pieces of the partitions, in partition order, make the
    blocks (:func:`cyclic_block`)."""
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
            pieces[r * q + s] = (degree.astype(xp.int32), part.dst[keep])
    return pieces


def cyclic_block(*pieces: tuple[Any, Any]) -> tuple[Any, Any]:
    """One block from its pieces of every partition, in partition order (ascending ranks)."""
    xp = array_module(pieces[0][1])
    degree = xp.concatenate([p[0] for p in pieces]).astype(xp.int64)
    offsets = xp.zeros(degree.shape[0] + 1, dtype=xp.int64)
    xp.cumsum(degree, out=offsets[1:])
    return xp.concatenate([p[1] for p in pieces]), offsets


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
    xp = array_module(first[1])
    keys = [(sources(CSR(dst, offsets, 0)) << ROW_SHIFT) | dst.astype(xp.int64)
            for dst, offsets in (first, second)]
    dst = xp.empty(keys[0].shape[0] + keys[1].shape[0], dtype=xp.int32)
    for mine, other, block in ((keys[0], keys[1], first), (keys[1], keys[0], second)):
        place = xp.arange(mine.shape[0], dtype=xp.int64) + xp.searchsorted(other, mine)
        dst[place] = block[0]
    degree = (first[1][1:] - first[1][:-1]) + (second[1][1:] - second[1][:-1])
    offsets = xp.zeros(degree.shape[0] + 1, dtype=xp.int64)
    xp.cumsum(degree, out=offsets[1:])
    return dst, offsets


def round_inputs(own: tuple[Any, Any], rows_block: tuple[Any, Any],
                 lists_block: tuple[Any, Any], x: int, y: int, z: int, q: int,
                 vertices: int) -> tuple[CSR, CSR]:
    """The kernel's two CSRs for round ``z`` of worker ``(x, y)``: the union of its own block
    ``(x, y)`` and ``rows_block`` ``(x, z)``, and ``lists_block`` ``(y, z)``."""
    part = own if z == y else merged(own, rows_block)
    return spread(part, x, q, vertices), spread(lists_block, y, q, vertices)


def round_triangles(own: tuple[Any, Any], arrived: tuple[tuple, tuple], x: int, y: int,
                    z: int, q: int, vertices: int) -> int:
    """Triangles found by worker ``(x, y)`` in round ``z``, from the blocks that arrived for it
    (``(x, z)`` and ``(y, z)``)."""
    part, group = round_inputs(own, *arrived, x, y, z, q, vertices)
    return intersect(part, group).triangles


def round_vertex_triangles(own: tuple[Any, Any], arrived: tuple[tuple, tuple], x: int,
                           y: int, z: int, q: int, vertices: int, before: Any = None) -> Any:
    """The triangles at each rank found by worker ``(x, y)`` in round ``z`` (int64, one per
    rank), added to ``before`` (the worker's earlier rounds) where given."""
    part, group = round_inputs(own, *arrived, x, y, z, q, vertices)
    found = intersect(part, group, credits=True)
    xp = array_module(part.offsets)
    out = xp.zeros(vertices, dtype=xp.int64) if before is None else before.copy()
    return vertex_credits(part, found.uv, found.uw, vertices, out=out)

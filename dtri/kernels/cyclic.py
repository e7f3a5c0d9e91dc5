"""The 2D cyclic decomposition of the oriented adjacency (Tom & Karypis): blocks, and the
intersection of one Cannon round. Array code only; :mod:`dtri.analytics.cannon` builds the
tasks.

On a ``q × q`` grid, block ``(r, s)`` holds the oriented edges ``(a, c)`` with ``a ≡ r`` and
``c ≡ s`` (mod ``q``). A block is stored *compact*: its rows are the ranks ``r, r + q, r +
2q, ...`` only, so a row index ``i`` is the rank ``r + q·i``, and the targets keep their
ranks. Stored as a plain tuple ``(dst, offsets)`` (int32 targets, int64 offsets, one more
than the rows), as every stored CSR is (:func:`dtri.kernels.csr.stored`). Its *transpose*
(:func:`transposed`) holds the same edges by target: rows of class ``s``, each listing the
sources ``a`` of its in-edges, ascending.

Worker ``(x, y)`` owns the edges of block ``(x, y)``: each edge ``(a, c)`` there is the
longest edge of the triangles ``a < b < c`` with ``b`` in ``N+(a) ∩ N−(c)``. In round ``z``
it sees only the middles ``b ≡ z``: those of row ``a`` in block ``(x, z)`` and of row ``c``
in the transpose of block ``(z, y)``. So a worker needs row blocks ``x`` and column blocks
``y``, ``2(q − 1)`` blocks it does not hold, whichever worker it is: Cannon's balance (a
worker that met ``N+(a) ∩ N+(b)`` would need row blocks ``x`` and ``y``, ``2q − 1`` blocks
off the diagonal and ``q − 1`` on it).

The fused intersection kernel (:func:`dtri.kernels.intersect.intersect`) intersects, for each
edge ``(u, v)`` of a partition, ``u``'s members *after* ``v`` with ``v``'s list in a second
CSR. A round gives it the union (:func:`merged`) of block ``(x, y)`` and block ``(x, z)``
with the middles' ids raised by the vertex count ``n`` (:func:`raised`), against the
transpose of block ``(z, y)`` raised alike: every raised middle lies after every edge's
target, the transpose's lists hold only ``b < c``, and the raised entries, as edges, point
past the second CSR's rows and close nothing. Every triangle is found once, by the worker of
its longest edge, in the round of its middle vertex's class.
"""

from __future__ import annotations

from typing import Any

from dtri.kernels.csr import CSR, sources
from dtri.kernels.dispatch import array_module, sort_keys
from dtri.kernels.intersect import intersect, vertex_credits

ROW_SHIFT = 32
"""Where a row index sits in the packed keys that merge two blocks' rows or transpose one
(ranks and rows are below 2**31)."""
ROW_MASK = (1 << ROW_SHIFT) - 1
LARGEST_RAISED = 2**31 - 1
"""Raised ids (:func:`raised`) are int32: the 2D join takes graphs of fewer than 2**30
vertices."""


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


def transposed(block: tuple[Any, Any], r: int, s: int, q: int,
               vertices: int) -> tuple[Any, Any]:
    """Block ``(r, s)`` by target: compact rows of class ``s`` over the ranks ``[0,
    vertices)``, row ``j`` (rank ``s + q·j``) listing the sources of its in-edges (ranks of
    class ``r``), ascending."""
    dst, offsets = block
    xp = array_module(offsets)
    rows = sources(CSR(dst, offsets, 0))
    keys = sort_keys(((dst.astype(xp.int64) // q) << ROW_SHIFT) | rows)
    members = (r + q * (keys & ROW_MASK)).astype(xp.int32)
    columns = keys >> ROW_SHIFT
    degree = (xp.bincount(columns, minlength=block_rows(vertices, s, q)) if columns.shape[0]
              else xp.zeros(block_rows(vertices, s, q), dtype=xp.int64))
    out = xp.zeros(degree.shape[0] + 1, dtype=xp.int64)
    xp.cumsum(degree, out=out[1:])
    return members, out


def raised(block: tuple[Any, Any], vertices: int) -> tuple[Any, Any]:
    """A block with every target raised by ``vertices``, past every rank."""
    dst, offsets = block
    if 2 * vertices > LARGEST_RAISED:
        raise ValueError(f"the 2D join takes graphs of fewer than 2**30 vertices, not "
                         f"{vertices}")
    return dst + array_module(offsets).int32(vertices), offsets


def lowered(dst: Any, vertices: int) -> Any:
    """Targets with the raised ones (:func:`raised`) back at their ranks."""
    xp = array_module(dst)
    return xp.where(dst >= vertices, dst - xp.int32(vertices), dst)


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
    The lists are disjoint (their targets lie in different column classes, or the second's
    are raised), and each block's packed keys ``(row << 32) | target`` ascend already, so
    each key's place in the union is its own index plus the other block's keys below it: two
    searches, no sort."""
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


def round_blocks(x: int, y: int, t: int, q: int) -> tuple[int, int, int]:
    """Round ``t`` of worker ``(x, y)``: the middles' class ``z``, the block of rows ``(x,
    z)`` and the block ``(z, y)`` whose transpose it needs (as grid indices ``r·q + s``)."""
    z = (x + y + t) % q
    return z, x * q + z, z * q + y


def round_inputs(own: tuple[Any, Any], rows_block: tuple[Any, Any],
                 columns_block: tuple[Any, Any], x: int, y: int, q: int,
                 vertices: int) -> tuple[CSR, CSR]:
    """The kernel's two CSRs for a round of worker ``(x, y)``: the union of its own block
    ``(x, y)`` and the raised ``rows_block`` ``(x, z)``, and ``columns_block``, the
    transpose of block ``(z, y)``, raised."""
    part = merged(own, raised(rows_block, vertices))
    return (spread(part, x, q, vertices),
            spread(raised(columns_block, vertices), y, q, vertices))


def round_triangles(own: tuple[Any, Any], arrived: tuple[tuple, tuple], x: int, y: int,
                    q: int, vertices: int) -> int:
    """Triangles found by worker ``(x, y)`` in a round, from the blocks that arrived for it
    (block ``(x, z)`` and the transpose of ``(z, y)``)."""
    part, group = round_inputs(own, *arrived, x, y, q, vertices)
    return intersect(part, group).triangles


def round_vertex_triangles(own: tuple[Any, Any], arrived: tuple[tuple, tuple], x: int,
                           y: int, q: int, vertices: int, before: Any = None) -> Any:
    """The triangles at each rank found by worker ``(x, y)`` in a round (int64, one per
    rank), added to ``before`` (the worker's earlier rounds) where given."""
    part, group = round_inputs(own, *arrived, x, y, q, vertices)
    found = intersect(part, group, credits=True)
    xp = array_module(part.offsets)
    out = xp.zeros(vertices, dtype=xp.int64) if before is None else before.copy()
    ranks = CSR(lowered(part.dst, vertices), part.offsets, part.low)
    return vertex_credits(ranks, found.uv, found.uw, vertices, out=out)

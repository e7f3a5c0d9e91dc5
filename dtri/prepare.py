"""Canonicalize + rank + orient + sort in one task, for a graph held in one partition.

The DataFrame stages (:mod:`dtri.canonicalize`, :mod:`dtri.orient`, :mod:`dtri.sort`) spread
the work over partitions with shuffles, merges and a distributed sort; when the whole edge
list fits one partition (one GPU, or a small graph) the same four steps are a handful of
array operations on NumPy or CuPy, without any exchange:

1. ``(min, max)`` per edge; the distinct ids of both columns, ascending, are the vertices
   (self-loop-only vertices included), and ``searchsorted`` turns ids into dense ids;
2. self-loops dropped, edges packed into 64-bit keys and made unique (duplicates and both
   directions merge);
3. degrees by ``bincount``; ranks by a stable argsort of degree over the id-ordered vertices,
   which is the (degree, id) order (or the id order itself for ``orientation="id"``);
4. each edge oriented from lower to higher rank, packed and sorted: the partition the wedge
   and join stages expect, sorted by (src, dst) with whole adjacency lists.
"""

from __future__ import annotations

from typing import Any

from dtri.bins import key_bits
from dtri.canonicalize import canonical_pairs
from dtri.dispatch import array_module, column_to_array, frame_from_arrays


def sorted_unique(values: Any) -> Any:
    """Distinct values, ascending, by sort and adjacent compare (NumPy's hash-based ``unique``
    is several times slower on integer keys; CuPy's is the same sort)."""
    xp = array_module(values)
    ordered = xp.sort(values)
    if ordered.shape[0] < 2:
        return ordered
    keep = xp.empty(ordered.shape[0], dtype=bool)
    keep[0] = True
    xp.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def prepare_partition(frame: Any, orientation: str) -> tuple[Any, int]:
    """Oriented edges sorted by (src, dst), rank ids, and the number of vertices."""
    pairs = canonical_pairs(frame)
    low, high = column_to_array(pairs["src"]), column_to_array(pairs["dst"])
    xp = array_module(low)
    vertices = sorted_unique(xp.concatenate([low, high]))
    n = int(vertices.shape[0])
    bits = key_bits(n)
    low = xp.searchsorted(vertices, low)
    high = xp.searchsorted(vertices, high)
    del vertices
    simple = low != high
    keys = sorted_unique((low[simple] << bits) | high[simple])
    low, high = keys >> bits, keys & ((1 << bits) - 1)
    if orientation == "degree":
        degree = xp.bincount(xp.concatenate([low, high]), minlength=n)
        order = xp.argsort(degree, kind="stable")  # ids ascend already: (degree, id) order
        rank = xp.empty(n, dtype=xp.int64)
        rank[order] = xp.arange(n, dtype=xp.int64)
        low, high = rank[low], rank[high]
        del degree, order, rank
    # id orientation: dense ids are ranks already, and low < high holds
    keys = xp.sort((xp.minimum(low, high) << bits) | xp.maximum(low, high))
    src, dst = keys >> bits, keys & ((1 << bits) - 1)
    return frame_from_arrays(frame, {"src": src, "dst": dst}), n

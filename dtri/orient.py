"""Rank + orient: rank every vertex and point each edge from lower to higher rank.

Ranks are dense ids ``0 .. n-1`` in the order of (degree, id) for the default ``degree``
orientation, or of id for ``id``. Degrees come from ``bincount`` per partition, summed over
partitions. Orienting ``u -> v`` when ``rank(u) < rank(v)`` is then a plain ``min``/``max``;
degree orientation bounds every out-degree by ``sqrt(2m)``, which is what keeps the wedge count
(the sum of C(out-degree, 2)) small.

The out-degrees, summed the same way, give the wedges per source before any wedge exists;
their prefix sums cut the sources into ranges of equal estimated work (edges + wedges), one per
receiving partition of the sort, so no worker holds most of the wedges.
"""

from __future__ import annotations

from typing import Any

from dtri.bins import checked_key_bits, pack_edges, split_by_bounds, unpack_keys
from dtri.dispatch import array_module

ORIENTATIONS = ("degree", "id")


def degree_counts(keys: Any, vertices: int) -> Any:
    """Degree of every vertex within one partition's distinct edge keys."""
    xp = array_module(keys)
    src, dst = unpack_keys(keys, checked_key_bits(vertices))
    return xp.bincount(src, minlength=vertices) + xp.bincount(dst, minlength=vertices)


def add_counts(*counts: Any) -> Any:
    """Element-wise sum of per-partition count arrays of equal length."""
    total = counts[0].copy()
    for more in counts[1:]:
        total += more
    return total


def vertex_ranks(degree: Any, orientation: str) -> Any | None:
    """Rank of every dense vertex: its position in (degree, id) order; ``None`` for the id
    orientation, where dense ids are the ranks already."""
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {orientation!r}")
    if orientation == "id":
        return None
    xp = array_module(degree)
    order = xp.argsort(degree, kind="stable")  # ids ascend already: (degree, id) order
    rank = xp.empty(degree.shape[0], dtype=xp.int64)
    rank[order] = xp.arange(degree.shape[0], dtype=xp.int64)
    return rank


def orient_keys(keys: Any, rank: Any | None, vertices: int) -> Any:
    """Packed keys ``(src << bits) | dst`` of the edges pointed from lower to higher rank."""
    if rank is None:
        return keys  # id orientation: low < high already
    xp = array_module(keys)
    bits = checked_key_bits(vertices)
    src, dst = unpack_keys(keys, bits)
    low, high = rank[src], rank[dst]
    return pack_edges(xp.minimum(low, high), xp.maximum(low, high), bits)


def out_degree_counts(oriented: Any, vertices: int) -> Any:
    """Out-degree of every rank within one partition's oriented keys."""
    xp = array_module(oriented)
    return xp.bincount(oriented >> checked_key_bits(vertices), minlength=vertices)


def source_bounds(out_degree: Any, parts: int) -> list[int]:
    """Cut the sources (ranks ``0 .. n-1``) into ``parts`` ranges of equal estimated work,
    edges plus wedges (C(d+, 2)), by the prefix sums of the out-degrees."""
    xp = array_module(out_degree)
    n = int(out_degree.shape[0])
    if parts == 1 or n == 0:
        return [0] + [n] * parts
    work = xp.cumsum(out_degree + out_degree * (out_degree - 1) // 2)
    total = int(work[-1])
    targets = xp.asarray([total * j // parts for j in range(1, parts)], dtype=work.dtype)
    inner = xp.searchsorted(work, targets, side="right").tolist()
    return [0, *(min(int(b), n) for b in inner), n]


def split_by_source(oriented: Any, bounds: list[int], vertices: int) -> dict[int, Any]:
    """Oriented keys cut by source rank range (piece ``j`` goes to receiver ``j``)."""
    return split_by_bounds(oriented, oriented >> checked_key_bits(vertices), bounds)

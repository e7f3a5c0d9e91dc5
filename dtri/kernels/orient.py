"""Rank + orient: rank every vertex and point each edge from lower to higher rank.

Ranks are dense ids ``0 .. n-1`` in the order of (degree, id) for the default ``degree``
orientation, or of id for ``id``. Degrees come from ``bincount`` per partition, summed over
partitions. Orienting ``u -> v`` when ``rank(u) < rank(v)`` is then a plain ``min``/``max``;
degree orientation bounds every out-degree by ``sqrt(2m)``, which is what keeps the wedge count
(the sum of C(out-degree, 2)) small.

The out-degrees, summed the same way, give each source's counting work before any wedge
exists: edges + C(d+, 2) for the wedges join, which writes every wedge, or, for the fused
intersection join, edges + the shorter list of each of its edges (:func:`intersection_work`).
Their prefix sums cut the sources into ranges of equal estimated work, one per receiving
partition of the sort, so that no worker holds most of the work.
"""

from __future__ import annotations

from typing import Any

from dtri.kernels.bins import checked_key_bits, pack_edges, split_by_bounds, unpack_keys
from dtri.kernels.dispatch import array_module

ORIENTATIONS = ("degree", "id")


def degree_counts(keys: Any, vertices: int) -> Any:
    """Degree of every vertex within one partition's distinct edge keys."""
    src, dst = unpack_keys(keys, checked_key_bits(vertices))
    counts = id_counts(src, vertices)
    counts += id_counts(dst, vertices)
    return counts


def id_counts(ids: Any, vertices: int) -> Any:
    """How often each id ``0 .. vertices - 1`` occurs (int64). CuPy's ``bincount`` runs CUB's
    histogram, whose scratch grows with the number of bins (207 MiB for 174 k vertices, more
    than a 128 MiB pool), so the GPU adds with atomics into the counts instead."""
    xp = array_module(ids)
    if xp.__name__ != "cupy":
        return xp.bincount(ids, minlength=vertices).astype(xp.int64, copy=False)
    import cupyx

    counts = xp.zeros(vertices, dtype=xp.uint64)
    cupyx.scatter_add(counts, ids, xp.ones(1, dtype=xp.uint64)[0])
    return counts.view(xp.int64)


def weighted_counts(ids: Any, weights: Any, vertices: int) -> Any:
    """``Σ weights`` per id ``0 .. vertices - 1``, exact (int64): numba's loop on the CPU
    (NumPy's ``bincount`` adds weights in float64), 64-bit atomics on the GPU (like
    :func:`id_counts`)."""
    xp = array_module(ids)
    if xp.__name__ != "cupy":
        from dtri.kernels.cpu import scatter_add

        return scatter_add(ids, weights, vertices)
    import cupyx

    counts = xp.zeros(vertices, dtype=xp.uint64)
    cupyx.scatter_add(counts, ids, weights.astype(xp.uint64))
    return counts.view(xp.int64)


def add_counts(*counts: Any) -> Any:
    """Element-wise sum of per-partition count arrays of equal length, in the widest of their
    dtypes (CuPy's ``bincount`` of an empty partition returns ints even with float weights)."""
    total = counts[0].astype(array_module(counts[0]).result_type(*counts))
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


def rank_and_order(degree: Any, orientation: str) -> tuple[Any | None, Any | None]:
    """The rank of every dense vertex (:func:`vertex_ranks`) and its inverse, the dense vertex
    of every rank (``None`` for both with the id orientation: dense ids are the ranks)."""
    rank = vertex_ranks(degree, orientation)
    if rank is None:
        return None, None
    xp = array_module(rank)
    order = xp.empty_like(rank)
    order[rank] = xp.arange(rank.shape[0], dtype=rank.dtype)
    return rank, order


def by_rank(values: Any, order: Any | None) -> Any:
    """A vertex-wide array indexed by dense id, reindexed by rank (``order`` from
    :func:`rank_and_order`; ``None``: dense ids are the ranks)."""
    return values if order is None else values[order]


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
    return id_counts(oriented >> checked_key_bits(vertices), vertices)


WORK_MODELS = ("wedges", "intersect")
"""What a source's counting work is proportional to: its wedges (the wedges join writes each
one) or its lists' intersections (the fused join walks the shorter list of each edge)."""


def wedge_work(out_degree: Any) -> Any:
    """Work per source for the wedges join: its edges plus its wedges, C(d+, 2)."""
    return out_degree + out_degree * (out_degree - 1) // 2


INTERSECT_EDGE_COST = 1024
"""Work of one edge in the fused join apart from its intersection, in units of one step of
binary search (shorter list × log2(longer list)). Fitted on an H200 (RMAT 25, one partition's
source ranges timed alone): an edge costs 0.94 ns of passes over the edge arrays, a search step
0.00085 ns (examples/benchmarks/intersect-balance-h200.jsonl)."""


def intersection_work(oriented: Any, out_degree: Any, vertices: int) -> Any:
    """Work per source for the fused join, within one partition's oriented keys: for each
    edge ``u -> v``, :data:`INTERSECT_EDGE_COST` plus shorter × log2(longer + 1) of the lists
    it intersects, taking ``u``'s later siblings as ``(d+(u) - 1) / 2`` (their mean; the sort
    has not happened yet) against ``d+(v)``. Hubs have many wedges but short intersections, so
    this, not C(d+, 2), balances the fused join's partitions (within a few per cent on RMAT,
    where edges alone or wedges alone leave 1.2-2× imbalances)."""
    xp = array_module(oriented)
    src, dst = unpack_keys(oriented, checked_key_bits(vertices))
    later, target = (out_degree[src] - 1) / 2, out_degree[dst]
    steps = xp.minimum(later, target) * xp.log2(xp.maximum(later, target) + 1)
    return xp.bincount(src, weights=steps + INTERSECT_EDGE_COST, minlength=vertices)


def source_bounds(work: Any, parts: int) -> list[int]:
    """Cut the sources (ranks ``0 .. n-1``) into ``parts`` ranges of equal estimated work,
    by the prefix sums of ``work`` (one value per source: :func:`wedge_work` or the summed
    :func:`intersection_work`)."""
    xp = array_module(work)
    n = int(work.shape[0])
    if parts == 1 or n == 0:
        return [0] + [n] * parts
    prefix = xp.concatenate([xp.zeros(1, dtype=work.dtype), xp.cumsum(work)])
    total = prefix[-1].item()
    targets = xp.asarray([total * j / parts for j in range(1, parts)], dtype=xp.float64)
    below = xp.searchsorted(prefix, targets, side="right") - 1  # prefix[below] <= target
    above = xp.minimum(below + 1, n)
    nearer = xp.where(targets - prefix[below] <= prefix[above] - targets, below, above)
    return [0, *(int(b) for b in nearer.tolist()), n]


def split_by_source(oriented: Any, bounds: list[int], vertices: int) -> dict[int, Any]:
    """Oriented keys cut by source rank range (piece ``j`` goes to receiver ``j``)."""
    return split_by_bounds(oriented, oriented >> checked_key_bits(vertices), bounds)


# Orientation happens on the fly: the oriented keys are never stored, since keeping them would
# hold every edge twice (and, under host staging, move it to host memory and back once more);
# each task that needs them orients its partition's canonical keys again from the ranks.

def oriented_out_degree(keys: Any, rank: Any | None, vertices: int) -> Any:
    """:func:`out_degree_counts` of a partition's canonical keys, oriented first."""
    return out_degree_counts(orient_keys(keys, rank, vertices), vertices)


def oriented_intersection_work(keys: Any, rank: Any | None, out_degree: Any,
                               vertices: int) -> Any:
    """:func:`intersection_work` of a partition's canonical keys, oriented first."""
    return intersection_work(orient_keys(keys, rank, vertices), out_degree, vertices)


def oriented_split(keys: Any, rank: Any | None, bounds: list[int], vertices: int,
                   ) -> dict[int, Any]:
    """:func:`split_by_source` of a partition's canonical keys, oriented first."""
    return split_by_source(orient_keys(keys, rank, vertices), bounds, vertices)

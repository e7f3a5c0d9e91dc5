"""Rank + orient: rank every vertex and point each edge from lower to higher rank.

Ranks are dense ids ``0 .. n-1`` in the order of (degree, id) for the ``degree``
orientation, of id for ``id``, or of (level, remaining degree, degree, id) of an approximate
degeneracy peeling for ``adirection`` (:func:`peel_round`). Degrees come from ``bincount`` per
partition, summed over partitions. Orienting ``u -> v`` when ``rank(u) < rank(v)`` is then a
plain ``min``/``max``; degree orientation bounds every out-degree by ``sqrt(2m)``, which is what
keeps the wedge count (the sum of C(out-degree, 2)) small, and ``adirection`` bounds each
vertex's out-degree by its remaining degree when peeled, at most ``(1 + epsilon)`` times the
mean of its round, which keeps hubs' out-lists short where degree order leaves them long.
``auto`` is resolved before ranking (:func:`auto_orientation`).

The out-degrees, summed the same way, give each source's counting work before any wedge
exists: edges + C(d+, 2) for the wedges join, which writes every wedge, or, for the fused
intersection join, edges + the shorter list of each of its edges (:func:`intersection_work`).
Their prefix sums cut the sources into ranges of equal estimated work, one per receiving
partition of the sort, so that no worker holds most of the work.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, NamedTuple

from dtri.kernels.bins import checked_key_bits, pack_edges, split_by_bounds, unpack_keys
from dtri.kernels.counting import id_counts
from dtri.kernels.dispatch import array_module, is_device_object
from dtri.kernels.strategy import cpu_kernel

ORIENTATIONS = ("degree", "id", "adirection")
"""The orientations a rank function implements (``auto`` is resolved to one of them first)."""

PEEL_ROUNDS = 256
"""Most rounds of the ``adirection`` peeling; the last one peels every vertex left."""


def fused_prepare() -> bool:
    """Whether the GPU runs the fused passes of :mod:`dtri.kernels.prepare.cuda`
    (``dtri.fused-prepare`` in ``dask.config``)."""
    import dask

    return bool(dask.config.get("dtri.fused-prepare"))


def degree_counts(keys: Any, vertices: int) -> Any:
    """Degree of every vertex within one partition's distinct edge keys."""
    src, dst = unpack_keys(keys, checked_key_bits(vertices))
    counts = id_counts(src, vertices)
    counts += id_counts(dst, vertices)
    return counts


def vertex_ranks(degree: Any, orientation: str, peeling: Peeling | None = None) -> Any | None:
    """Rank of every dense vertex: its position in (degree, id) order, or for ``adirection``
    in the order of ``peeling`` (:func:`peel_ranks`); ``None`` for the id orientation, where
    dense ids are the ranks already."""
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {orientation!r}")
    if orientation == "id":
        return None
    if orientation == "adirection":
        if peeling is None:
            raise ValueError("the adirection orientation ranks by a peeling: give peeling")
        return peel_ranks(peeling, degree)
    xp = array_module(degree)
    order = xp.argsort(degree, kind="stable")  # ids ascend already: (degree, id) order
    kind = rank_dtype(xp, degree.shape[0])
    rank = xp.empty(degree.shape[0], dtype=kind)
    rank[order] = xp.arange(degree.shape[0], dtype=kind)
    return rank


def rank_dtype(xp: Any, vertices: int) -> Any:
    """The dtype of ranks ``0 .. vertices - 1``: int32 where they fit, which halves the bytes
    of the ranks sent to every sender, else int64."""
    return xp.int32 if vertices <= 2**31 else xp.int64


def rank_and_order(degree: Any, orientation: str, peeling: Peeling | None = None,
                   ) -> tuple[Any | None, Any | None]:
    """The rank of every dense vertex (:func:`vertex_ranks`) and its inverse, the dense vertex
    of every rank (``None`` for both with the id orientation: dense ids are the ranks)."""
    rank = vertex_ranks(degree, orientation, peeling)
    if rank is None:
        return None, None
    xp = array_module(rank)
    order = xp.empty_like(rank)
    order[rank] = xp.arange(rank.shape[0], dtype=rank.dtype)
    return rank, order


# ------------------------------------------------------------------ adirection and auto

class Peeling(NamedTuple):
    """The state of the ``adirection`` peeling after some rounds (vertex-wide arrays by dense
    id)."""

    level: Any
    """The round in which each vertex was peeled (int64; ``-1`` while alive)."""
    remaining: Any
    """Each peeled vertex's remaining degree (edges to vertices alive) when peeled (int64)."""
    alive: int
    """Vertices not peeled yet."""
    rounds: int
    """Rounds run."""


def adirection_epsilon() -> float:
    """The slack of the peeling: a round peels the alive vertices of remaining degree at most
    ``(1 + epsilon)`` times their mean (``dtri.adirection-epsilon`` in ``dask.config``). Smaller
    values peel fewer vertices a round: shorter out-lists, more rounds."""
    import math

    import dask

    from dtri.errors import ConfigurationError

    value = dask.config.get("dtri.adirection-epsilon")
    try:
        epsilon = float(value)
    except (TypeError, ValueError):
        epsilon = math.nan
    if not math.isfinite(epsilon) or epsilon < 0:
        raise ConfigurationError(f"dtri.adirection-epsilon must be a number >= 0, got {value!r}")
    return epsilon


def alive_keys(keys: Any, level: Any, vertices: int) -> Any:
    """The edge keys whose both ends are still alive (``level < 0``)."""
    src, dst = unpack_keys(keys, checked_key_bits(vertices))
    return keys[(level[src] < 0) & (level[dst] < 0)]


def remaining_counts(keys: Any, level: Any, vertices: int) -> Any:
    """Remaining degree of every vertex within one partition's distinct edge keys: its edges
    whose both ends are alive (0 for the vertices peeled)."""
    return degree_counts(alive_keys(keys, level, vertices), vertices)


def peel_round(state: Peeling | None, remaining: Any, round_: int, epsilon: float,
               last: bool = False) -> Peeling:
    """Round ``round_`` of the peeling (``state``: the rounds before, ``None`` for round 0;
    ``remaining``: every vertex's remaining degree, 0 for the vertices peeled). Peels every
    alive vertex whose remaining degree is at most ``(1 + epsilon)`` times the mean remaining
    degree of the alive vertices, in exact integer arithmetic (at least the one of least
    degree: the minimum is at most the mean), or every one left in the ``last`` round, and
    records its level and remaining degree."""
    xp = array_module(remaining)
    vertices = int(remaining.shape[0])
    if state is None:
        level = xp.full(vertices, -1, dtype=xp.int64)
        at_peel = xp.zeros(vertices, dtype=xp.int64)
    elif not state.alive:
        return state
    else:
        level, at_peel = state.level.copy(), state.remaining.copy()
    alive = level < 0
    count = int(alive.sum().item())
    if not count:
        return Peeling(level, at_peel, 0, round_ + 1)
    remaining = remaining.astype(xp.int64, copy=False) * alive
    total = int(remaining.sum().item())
    threshold = (Fraction(epsilon) + 1) * total // count  # floor((1 + ε) mean), exactly
    peel = alive if last else alive & (remaining <= threshold)
    level[peel] = round_
    at_peel[peel] = remaining[peel]
    return Peeling(level, at_peel, count - int(peel.sum().item()), round_ + 1)


def peel_levels(keys: Any, degree: Any, vertices: int, epsilon: float,
                rounds: int = PEEL_ROUNDS) -> Peeling:
    """The whole peeling of a graph whose edge keys are all here (one task): round after
    round, the edges kept to those between alive vertices, so each round passes over what is
    left."""
    state, remaining = None, degree  # round 0: every vertex alive, every edge counts
    for r in range(rounds):
        state = peel_round(state, remaining, r, epsilon, last=r == rounds - 1)
        if not state.alive:
            break
        keys = alive_keys(keys, state.level, vertices)
        remaining = degree_counts(keys, vertices)
    assert state is not None
    return state


def peel_ranks(peeling: Peeling, degree: Any) -> Any:
    """Rank of every dense vertex for ``adirection``: its position in (level, remaining degree
    when peeled, degree, dense id) order. A vertex's later neighbours were all alive when it
    was peeled, so its out-degree is at most its remaining degree then."""
    xp = array_module(degree)
    vertices = int(degree.shape[0])
    ids = xp.arange(vertices, dtype=xp.int64)
    if not vertices:
        return ids
    order = xp.lexsort(xp.stack([ids, degree.astype(xp.int64, copy=False),
                                 peeling.remaining, peeling.level]))
    rank = xp.empty(vertices, dtype=rank_dtype(xp, vertices))
    rank[order] = ids
    return rank


def longest_out_list(out_degree: Any) -> int:
    """The largest out-degree (0 without vertices)."""
    return int(out_degree.max().item()) if out_degree.shape[0] else 0


def hash_list_limit() -> int:
    """The longest list the intersection's hash tables hold
    (:func:`dtri.kernels.strategy.hash_max_members` of a count), read when asked."""
    from dtri.kernels.strategy import hash_max_members

    return hash_max_members(False)


def auto_orientation(longest: int, limit: int) -> str:
    """What ``auto`` resolves to: ``degree``, unless its longest out-list (``longest``) is
    longer than ``limit`` (:func:`hash_list_limit`): then ``adirection``, which bounds it."""
    return "degree" if longest <= limit else "adirection"


def orientation_reason(orientation: str, longest: int | None = None, limit: int | None = None,
                       rounds: int | None = None) -> str:
    """One line on the orientation used: as given, or how ``auto`` chose it (``longest``,
    ``limit``: the degree orientation's longest out-list and the limit), with the peeling's
    ``rounds`` for ``adirection``."""
    if longest is None:
        head, details = orientation, ["as given"]
    else:
        head = f"auto: {orientation}"
        details = [f"longest out-list {longest} \u2264 {limit}" if orientation == "degree"
                   else f"longest degree out-list {longest} > {limit}"]
    if rounds is not None:
        details.append(f"{rounds} peeling round{'' if rounds == 1 else 's'}")
    return f"{head} ({'; '.join(details)})"


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
    if is_device_object(keys) and fused_prepare():
        from dtri.kernels.prepare.cuda import oriented_keys  # one fused pass

        return oriented_keys(keys, rank, bits)
    src, dst = unpack_keys(keys, bits)
    low, high = rank[src], rank[dst]
    return pack_edges(xp.minimum(low, high), xp.maximum(low, high), bits)


def out_degree_counts(oriented: Any, vertices: int) -> Any:
    """Out-degree of every rank within one partition's oriented keys."""
    return id_counts(oriented >> checked_key_bits(vertices), vertices)


WORK_MODELS = ("wedges", "intersect", "edges")
"""What a source's counting work is proportional to: its wedges (the wedges join writes each
one), its lists' intersections (the fused join walks the shorter list of each edge), or its
edges alone (what a partition holds: its bytes)."""


def edge_work(out_degree: Any) -> Any:
    """Work per source by its edges alone: its out-degree (int64, from out-degrees of any
    integer type)."""
    return out_degree.astype(array_module(out_degree).int64, copy=False)


def wedge_work(out_degree: Any) -> Any:
    """Work per source for the wedges join: its edges plus its wedges, C(d+, 2) (int64, from
    out-degrees of any integer type)."""
    degree = out_degree.astype(array_module(out_degree).int64, copy=False)
    return degree + degree * (degree - 1) // 2


JOIN_EDGE_COST = {"gpu": 2800.0, "cpu": 73.0, "marks": 4096.0}
"""The work of one edge in the fused join apart from its intersection, in steps of binary
search (shorter list × log2(longer list)), by which the sort's ranges balance the join: on the
GPU (an H200), on the CPU's hash and search kernels (``cpu``: one thread, R-MAT 21), and on its
marks kernel (one thread, R-MAT 20), as fitted by
``examples/benchmarks/probes/intersect_balance.py`` (``join-edge-cost-gpu`` and so on)."""


def join_edge_kernel(device: bool, vertices: int) -> str:
    """The entry of :data:`JOIN_EDGE_COST` that a fused join over ``vertices`` ranks reads:
    ``gpu`` (``device``), else that of the CPU kernel it takes
    (:func:`dtri.kernels.strategy.cpu_kernel`)."""
    return "gpu" if device else ("marks" if cpu_kernel(vertices) == "marks" else "cpu")


def join_edge_cost(device: bool, vertices: int) -> float:
    """The fused join's cost of one edge on the GPU (``device``) or the CPU, over ``vertices``
    ranks (:func:`join_edge_kernel`)."""
    from dtri.kernels.tuning import tuned

    kernel = join_edge_kernel(device, vertices)
    return tuned(f"join-edge-cost-{kernel}", JOIN_EDGE_COST[kernel])


def intersection_work(oriented: Any, out_degree: Any, vertices: int) -> Any:
    """Work per source for the fused join, within one partition's oriented keys: for each
    edge ``u -> v``, :func:`join_edge_cost` plus shorter × log2(longer + 1) of the lists
    it intersects, taking ``u``'s later siblings as ``(d+(u) - 1) / 2`` (their mean; the sort
    has not happened yet) against ``d+(v)``. Hubs have many wedges but short intersections, so
    this, not C(d+, 2), balances the fused join's partitions (within a few per cent on RMAT,
    where edges alone or wedges alone leave 1.2-2× imbalances)."""
    xp = array_module(oriented)
    src, dst = unpack_keys(oriented, checked_key_bits(vertices))
    later, target = (out_degree[src] - 1) / 2, out_degree[dst]
    steps = xp.minimum(later, target) * xp.log2(xp.maximum(later, target) + 1)
    steps += join_edge_cost(is_device_object(oriented), vertices)
    return xp.bincount(src, weights=steps, minlength=vertices)


def source_bounds(work: Any, parts: int) -> list[int]:
    """Cut the sources (ranks ``0 .. n-1``) into ``parts`` ranges of equal estimated work,
    by the prefix sums of ``work`` (one value per source: :func:`wedge_work` or the summed
    :func:`intersection_work`)."""
    xp = array_module(work)
    n = int(work.shape[0])
    if parts == 1 or n == 0:
        return [0] + [n] * parts
    if work.dtype == xp.float32:  # summed in float64: a float32 running sum drifts
        work = work.astype(xp.float64)
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

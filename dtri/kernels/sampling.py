"""Stratified samples of a prepared graph's wedges, and whether each is closed (array code).

The oriented graph's wedges are the pairs of out-neighbours of a source: a list of ``d``
targets holds ``C(d, 2)`` of them, and the prefix sums of ``C(d, 2)`` over the sources (what the
planner sizes the wedge join by, :func:`dtri.kernels.csr.wedge_profile`) number them, partition
after partition. Every triangle ``a < b < c`` (by rank) is exactly one closed wedge, the pair
``(b, c)`` of ``a``'s list closed by the edge ``b → c``; so the closed share of wedges drawn
uniformly estimates ``triangles / wedges`` without bias (:mod:`dtri.analytics.estimate`).

A sample of ``k`` wedges cuts the ``W`` numbers into ``k`` equal strata and draws one wedge in
each: number ``floor((t + u_t) W / k)`` for stratum ``t``, ``u_t`` uniform in ``[0, 1)`` from a
counter-based hash of the seed and ``t`` (:func:`dtri.kernels.hashing.edge_hash`, the same
bits on NumPy and CuPy). The closed share's variance is then ``Σ p_t (1 - p_t) / k²``, at most
the binomial ``p (1 - p) / k`` that the intervals use, so they cover at least as often as they
say. A partition computes only the strata that reach its wedges.

A wedge is found by its number: the source whose prefix sum passes it, then the pair
``(i, j)``, ``i < j``, of that list by the pair's index ``q = j (j - 1) / 2 + i``. Its
closing edge ``v → w`` (``v < w``: lists ascend) lives in ``v``'s partition, where a binary
search of ``w`` in ``v``'s list decides it (:func:`contains`, :func:`closed_counts`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dtri.kernels.csr import CSR, as_csr, degrees
from dtri.kernels.dispatch import array_module
from dtri.kernels.hashing import edge_hash

WEDGE_STREAM = 0x57454447  # "WEDG": the wedge samples' hash stream


def seeds(seed: int, *path: int) -> int:
    """A 32-bit seed for the stream ``path`` under ``seed`` (independent streams for each
    partition and phase, the same ones on every run of that seed)."""
    return int(np.random.SeedSequence([seed, *path]).generate_state(1)[0])


def uniform(xp: Any, seed: int, count: int) -> Any:
    """``count`` uniform floats in ``[0, 1)`` from ``seed``, made by the array's library (the
    GPU's own generator on CuPy arrays)."""
    return xp.random.RandomState(seed).random_sample(count)


def segment_of(xp: Any, lengths: Any) -> Any:
    """For each of ``sum(lengths)`` consecutive slots, the segment that holds it (segment
    ``k`` has ``lengths[k]`` slots): NumPy's ``repeat(arange, lengths)`` with the lengths on
    the device."""
    ends = xp.cumsum(lengths)
    total = int(ends[-1]) if lengths.shape[0] else 0
    return xp.searchsorted(ends, xp.arange(total, dtype=xp.int64), side="right")


def pair_of_index(xp: Any, q: Any) -> tuple[Any, Any]:
    """The pair ``(i, j)``, ``0 <= i < j``, numbered ``q = j (j - 1) / 2 + i`` (int64)."""
    j = xp.floor((1.0 + xp.sqrt(1.0 + 8.0 * q.astype(xp.float64))) / 2.0).astype(xp.int64)
    j -= (j * (j - 1) // 2 > q)  # the float square root may be one off either way
    j += ((j + 1) * j // 2 <= q)
    return q - j * (j - 1) // 2, j


def stratum_draws(xp: Any, count: int, seed: int, phase: int, total: int, first: int,
                  last: int) -> Any:
    """The wedge numbers that a sample of ``count`` draws among ``total`` wedges (seed ``seed``,
    phase ``phase``) lands in ``[first, last)``: one draw in each of ``count`` equal strata,
    ``floor((t + u_t) total / count)``, computed for the strata that reach that range only."""
    step = total / count
    low = max(0, int(first / step) - 1)
    high = min(count, int(last / step) + 2)
    strata = xp.arange(low, high, dtype=xp.int64)
    bits = edge_hash(xp, strata.astype(xp.uint64), seed, WEDGE_STREAM, phase)
    u = (bits >> xp.uint64(11)).astype(xp.float64) * (1.0 / (1 << 53))
    number = xp.minimum(xp.floor((strata + u) * step).astype(xp.int64), total - 1)
    return number[(number >= first) & (number < last)]


def sample_wedges(part: tuple, counts: tuple[int, ...], phases: tuple[int, ...], seed: int,
                  offset: int, total: int, bounds: tuple[int, ...]) -> dict:
    """This partition's draws of stratified samples of the graph's ``total`` wedges (see the
    module docstring): sample ``s`` draws ``counts[s]`` wedges over the whole graph, from
    ``seed``'s stream of phase ``phases[s]``; this partition's wedges are numbered from
    ``offset``. Each wedge drawn here as ``(s, v, w)``: its sample and its closing edge
    ``v → w``, split by the partition that holds ``v``'s list (:func:`by_owner`):
    ``{partition: (sample, v, w)}``."""
    csr = as_csr(part)
    xp = array_module(csr.offsets)
    degree = degrees(csr)
    pairs = degree * (degree - 1) // 2
    passed = xp.cumsum(pairs)
    own = int(passed[-1]) if passed.shape[0] else 0
    drawn = [(s, stratum_draws(xp, count, seed, phase, total, offset, offset + own) - offset)
             for s, (count, phase) in enumerate(zip(counts, phases, strict=True))
             if count and own]
    if not drawn:
        return by_owner(xp, xp.zeros(0, dtype=xp.int32), xp.zeros(0, dtype=xp.int64),
                        xp.zeros(0, dtype=xp.int64), bounds)
    sample = xp.concatenate([xp.full(numbers.shape[0], s, dtype=xp.int32)
                             for s, numbers in drawn])
    number = xp.concatenate([numbers for _, numbers in drawn])
    row = xp.searchsorted(passed, number, side="right")
    i, j = pair_of_index(xp, number - (passed[row] - pairs[row]))
    start = csr.offsets[row]
    return by_owner(xp, sample, csr.dst[start + i].astype(xp.int64),
                    csr.dst[start + j].astype(xp.int64), bounds)


def by_owner(xp: Any, sample: Any, v: Any, w: Any, bounds: tuple[int, ...]) -> dict:
    """Closing edges ``v → w`` (``v < w``) and their samples, split by the partition that holds
    ``v``'s list (``bounds``: the partitions' rank ranges): ``{partition: (sample, v, w)}``."""
    parts = len(bounds) - 1
    if parts == 1:
        return {0: (sample, v, w)}
    owner = xp.searchsorted(xp.asarray(bounds[1:-1], dtype=xp.int64), v, side="right")
    order = xp.argsort(owner, kind="stable")
    columns = [column[order] for column in (sample, v, w)]
    cuts = xp.searchsorted(owner[order], xp.arange(len(bounds), dtype=owner.dtype)).tolist()
    return {p: tuple(column[cuts[p]: cuts[p + 1]] for column in columns) for p in range(parts)}


def sample_vertices(degree: Any, present: Any, count: int, stream: int) -> tuple:
    """``count`` vertices drawn uniformly, with replacement, from those of degree 2 or more
    (and present), each with a pair of distinct neighbour positions ``0 <= i, j < d``, also
    uniform: ``(eligible, vertices, i, j)``, ``eligible`` the number of such vertices."""
    xp = array_module(degree)
    able = degree >= 2
    if present is not None:
        able &= present
    ranks = xp.flatnonzero(able)
    if ranks.shape[0] == 0 or count == 0:
        empty = xp.zeros(0, dtype=xp.int64)
        return int(ranks.shape[0]), empty, empty, empty
    drawn = uniform(xp, stream, 3 * count).reshape(3, count)
    x = ranks[xp.minimum((drawn[0] * ranks.shape[0]).astype(xp.int64), ranks.shape[0] - 1)]
    d = degree[x].astype(xp.int64)
    i = xp.minimum((drawn[1] * d).astype(xp.int64), d - 1)
    j = xp.minimum((drawn[2] * (d - 1)).astype(xp.int64), d - 2)
    j += j >= i  # the other d - 1 positions
    return int(ranks.shape[0]), x, i, j


def incident(part: tuple, vertices: Any) -> tuple:
    """A stored partition's edges at the ascending distinct ranks ``vertices``: their
    out-lists ``(x, neighbour)`` for those among its sources (in list order), and
    ``(x, source)`` for its edges that end at one of them (by source, ascending)."""
    csr = as_csr(part)
    xp = array_module(csr.offsets)
    mine = vertices[(vertices >= csr.low) & (vertices < csr.high)]
    starts = csr.offsets[mine - csr.low]
    lengths = csr.offsets[mine - csr.low + 1] - starts
    list_of = segment_of(xp, lengths)  # the list each gathered target comes from
    within = xp.arange(list_of.shape[0], dtype=xp.int64) - (xp.cumsum(lengths) - lengths)[list_of]
    out_x = mine[list_of]
    out_n = csr.dst[starts[list_of] + within].astype(xp.int64)
    if csr.edges == 0 or vertices.shape[0] == 0:
        empty = xp.zeros(0, dtype=xp.int64)
        return out_x, out_n, empty, empty
    wanted = xp.zeros(int(vertices[-1]) + 1, dtype=bool)  # a table, not a search per edge
    wanted[vertices] = True
    edge = xp.flatnonzero(wanted[xp.minimum(csr.dst, wanted.shape[0] - 1)]
                          & (csr.dst <= vertices[-1]))
    in_x = csr.dst[edge].astype(xp.int64)
    in_u = xp.searchsorted(csr.offsets, edge, side="right") - 1 + csr.low
    return out_x, out_n, in_x, in_u


def neighbour_pairs(samples: tuple, sample_id: int, bounds: tuple[int, ...],
                    *incidents: tuple) -> dict:
    """The pairs of neighbours that :func:`sample_vertices` picked (``samples``), as closing
    edges ``(min, max)`` split by owner (:func:`by_owner`), all of sample ``sample_id``.
    ``incidents``: :func:`incident` of every partition, in partition order; a vertex's
    neighbours are its out-list followed by its in-list (by source), so position ``i`` of a
    vertex of out-degree ``k`` is its out-list's ``i``-th target if ``i < k``, else the
    ``(i - k)``-th source of its in-list."""
    _, x, i, j = samples
    xp = array_module(x)
    owners = xp.concatenate([piece[0] for piece in incidents] + [piece[2] for piece in incidents])
    others = xp.concatenate([piece[1] for piece in incidents] + [piece[3] for piece in incidents])
    order = xp.argsort(owners, kind="stable")  # by vertex: out-list, then in-list by source
    owners, others = owners[order], others[order]
    start = xp.searchsorted(owners, x)
    a, b = others[start + i], others[start + j]
    return by_owner(xp, xp.full(x.shape[0], sample_id, dtype=xp.int32), xp.minimum(a, b),
                    xp.maximum(a, b), bounds)


def contains(csr: CSR, v: Any, w: Any) -> Any:
    """Whether each edge ``v → w`` is in ``csr`` (``v`` among its sources): a binary search of
    ``w`` in ``v``'s list, every search stepping together (as many steps as the longest list
    needs)."""
    xp = array_module(csr.offsets)
    if v.shape[0] == 0 or csr.edges == 0:
        return xp.zeros(v.shape[0], dtype=bool)
    row = v - csr.low
    lo, end = csr.offsets[row], csr.offsets[row + 1]
    hi = end
    last = csr.edges - 1
    for _ in range(max(1, int((hi - lo).max())).bit_length()):  # a lower bound of w
        searching = lo < hi
        mid = (lo + hi) >> 1
        less = csr.dst[xp.minimum(mid, last)] < w
        lo = xp.where(searching & less, mid + 1, lo)
        hi = xp.where(searching & ~less, mid, hi)
    return (lo < end) & (csr.dst[xp.minimum(lo, last)] == w)


def closed_counts(part: tuple, samples: int, *pieces: tuple) -> list[int]:
    """Per sample ``0 .. samples - 1``, how many of the closing edges ``pieces``
    (``(sample, v, w)`` arrays whose ``v`` are sources of this stored partition) are edges of
    it."""
    csr = as_csr(part)
    xp = array_module(csr.offsets)
    closed = xp.zeros(samples, dtype=xp.int64)
    for sample, v, w in pieces:
        if v.shape[0]:
            closed += xp.bincount(sample[contains(csr, v, w)], minlength=samples)
    return closed.tolist()

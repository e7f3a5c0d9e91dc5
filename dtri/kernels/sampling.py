"""Uniform samples of a prepared graph's wedges, and whether each is closed (array code).

The oriented graph's wedges are the pairs of out-neighbours of a source: a list of ``d``
targets holds ``C(d, 2)`` of them, and the prefix sums of ``C(d, 2)`` over the sources (what the
planner sizes the wedge join by, :func:`dtri.kernels.csr.wedge_profile`) number them. Every
triangle ``a < b < c`` (by rank) is exactly one closed wedge, the pair ``(b, c)`` of ``a``'s
list closed by the edge ``b → c``; so the closed share of uniformly drawn wedges estimates
``triangles / wedges`` without bias, a binomial proportion
(:mod:`dtri.analytics.estimate`).

A wedge is drawn by its number: the source whose prefix sum passes it, then the pair
``(i, j)``, ``i < j``, of that list by the pair's index ``q = j (j - 1) / 2 + i``. Its
closing edge ``v → w`` (``v < w``: lists ascend) lives in ``v``'s partition, where a binary
search of ``w`` in ``v``'s list decides it (:func:`closed_count`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dtri.kernels.csr import CSR, as_csr
from dtri.kernels.dispatch import array_module


def seeds(seed: int, *path: int) -> int:
    """A 32-bit seed for the stream ``path`` under ``seed`` (independent streams for each
    partition and phase, the same ones on every run of that seed)."""
    return int(np.random.SeedSequence([seed, *path]).generate_state(1)[0])


def uniform(xp: Any, seed: int, count: int) -> Any:
    """``count`` uniform floats in ``[0, 1)`` from ``seed``, made by the array's library (the
    GPU's own generator on CuPy arrays)."""
    return xp.random.RandomState(seed).random_sample(count)


def pair_of_index(xp: Any, q: Any) -> tuple[Any, Any]:
    """The pair ``(i, j)``, ``0 <= i < j``, numbered ``q = j (j - 1) / 2 + i`` (int64)."""
    j = xp.floor((1.0 + xp.sqrt(1.0 + 8.0 * q.astype(xp.float64))) / 2.0).astype(xp.int64)
    j -= (j * (j - 1) // 2 > q)  # the float square root may be one off either way
    j += ((j + 1) * j // 2 <= q)
    return q - j * (j - 1) // 2, j


def sample_wedges(part: tuple, count: int, seed: int, bounds: tuple[int, ...]) -> dict:
    """``count`` wedges drawn uniformly, with replacement, from a stored partition's wedges,
    as ``(a, v, w)``: the source ``a`` and the closing edge ``v → w``, split by the partition
    that holds ``v``'s list (``bounds``: the partitions' rank ranges):
    ``{partition: (a, v, w)}``, int64 arrays."""
    csr = as_csr(part)
    xp = array_module(csr.offsets)
    pieces = {p: tuple(xp.zeros(0, dtype=xp.int64) for _ in range(3))
              for p in range(len(bounds) - 1)}
    if count == 0:
        return pieces
    degree = csr.offsets[1:] - csr.offsets[:-1]
    pairs = degree * (degree - 1) // 2
    passed = xp.cumsum(pairs)
    total = int(passed[-1])
    if total == 0:
        raise ValueError("a partition without wedges cannot be sampled")
    number = xp.minimum((uniform(xp, seed, count) * total).astype(xp.int64), total - 1)
    row = xp.searchsorted(passed, number, side="right")
    i, j = pair_of_index(xp, number - (passed[row] - pairs[row]))
    start = csr.offsets[row]
    v = csr.dst[start + i].astype(xp.int64)
    w = csr.dst[start + j].astype(xp.int64)
    a = row + csr.low
    if len(bounds) == 2:
        pieces[0] = (a, v, w)
        return pieces
    owner = xp.searchsorted(xp.asarray(bounds[1:-1], dtype=xp.int64), v, side="right")
    order = xp.argsort(owner, kind="stable")
    a, v, w, owner = a[order], v[order], w[order], owner[order]
    cuts = xp.searchsorted(owner, xp.arange(len(bounds), dtype=owner.dtype)).tolist()
    for p in range(len(bounds) - 1):
        pieces[p] = (a[cuts[p]: cuts[p + 1]], v[cuts[p]: cuts[p + 1]], w[cuts[p]: cuts[p + 1]])
    return pieces


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


def closed_sums(part: tuple, degree: Any, *pieces: tuple[Any, Any, Any]) -> tuple:
    """Over the sampled wedges ``pieces`` (``(a, v, w)`` arrays whose ``v`` are sources of this
    stored partition): how many are closed, and the sum and sum of squares of each wedge's
    share of the average clustering, ``closed × Σ 1 / C(d, 2)`` over its three vertices
    (``degree``: every rank's degree)."""
    csr = as_csr(part)
    closed, total, squares = 0, 0.0, 0.0
    for a, v, w in pieces:
        if not v.shape[0]:
            continue
        xp = array_module(v)
        hit = contains(csr, v, w)
        closed += int(hit.sum())
        a, v, w = a[hit], v[hit], w[hit]
        share = xp.zeros(a.shape[0], dtype=xp.float64)
        for ends in (a, v, w):
            d = degree[ends].astype(xp.float64)
            share += 2.0 / (d * (d - 1.0))
        total += float(share.sum())
        squares += float((share * share).sum())
    return closed, total, squares

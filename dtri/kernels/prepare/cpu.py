"""The CPU side of the preparation's kernels: numba's one-pass preparation of a graph whose ids
are few enough to mark (:func:`prepare_marked`, run by
:func:`dtri.prepared.local.prepare_marked_on_cpu`). Imported only where it runs; compiled on
first use and cached on disk by numba."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from dtri.kernels.compiled import watch_numba
from dtri.kernels.sort.cpu import radix_sort

watch_numba()  # its compiles and cache loads are reported apart from the stages


@numba.njit(nogil=True, cache=True)
def prepare_marked(src: Any, dst: Any, largest: int, by_degree: bool) -> tuple:
    """The whole preparation of a graph whose ids ``0 .. largest`` are few enough to mark
    (:func:`dtri.kernels.canonicalize.partition_vertices` holds them as marks), in one pass
    of each kind, where the NumPy path takes thirty-odd array calls: dense ids, the distinct
    simple edges as sorted packed keys, the degrees, the ranks (by a counting sort of the
    degrees where ``by_degree``) and the oriented CSR over every rank. The same ranks and CSR
    as :func:`dtri.prepared.local.prepare_partition`'s NumPy path. Returns ``(dst, offsets,
    vertices, input id by rank, degree by rank, longest out-list)``."""
    m = src.shape[0]
    marks = np.zeros(largest + 1, dtype=np.uint8)
    for i in range(m):
        marks[src[i]] = 1
        marks[dst[i]] = 1
    table = np.empty(largest + 1, dtype=np.int64)  # read only where marked
    n = 0
    for v in range(largest + 1):
        if marks[v]:
            table[v] = n
            n += 1
    ids = np.empty(n, dtype=np.int64)
    for v in range(largest + 1):
        if marks[v]:
            ids[table[v]] = v
    bits = 1
    while (1 << bits) < n:
        bits += 1
    keys = np.empty(m, dtype=np.int64)
    k = 0
    for i in range(m):
        a = table[src[i]]
        b = table[dst[i]]
        if a < b:
            keys[k] = (a << bits) | b
            k += 1
        elif b < a:
            keys[k] = (b << bits) | a
            k += 1
    keys = radix_sort(keys[:k])
    mask = (1 << bits) - 1
    degree = np.zeros(n, dtype=np.int64)
    edges = 0
    for i in range(k):
        if i and keys[i] == keys[i - 1]:
            continue
        keys[edges] = keys[i]
        edges += 1
        degree[keys[i] >> bits] += 1
        degree[keys[i] & mask] += 1
    rank = np.arange(n)
    order = np.arange(n)
    if by_degree:
        top = 0
        for v in range(n):
            top = max(top, degree[v])
        starts = np.zeros(top + 2, dtype=np.int64)
        for v in range(n):
            starts[degree[v] + 1] += 1
        for d in range(top + 1):
            starts[d + 1] += starts[d]
        for v in range(n):
            r = starts[degree[v]]
            starts[degree[v]] += 1
            rank[v] = r
            order[r] = v
    offsets = np.zeros(n + 1, dtype=np.int64)
    into = np.zeros(n + 1, dtype=np.int64)
    for i in range(edges):
        a = rank[keys[i] >> bits]
        b = rank[keys[i] & mask]
        offsets[min(a, b) + 1] += 1
        into[max(a, b) + 1] += 1
    longest = 0
    for r in range(n):
        longest = max(longest, offsets[r + 1])
        offsets[r + 1] += offsets[r]
        into[r + 1] += into[r]
    by_target = np.empty(edges, dtype=np.int64)
    fill = into[:n].copy()
    for i in range(edges):
        a = rank[keys[i] >> bits]
        b = rank[keys[i] & mask]
        t = max(a, b)
        by_target[fill[t]] = min(a, b)
        fill[t] += 1
    out = np.empty(edges, dtype=np.int32)
    fill = offsets[:n].copy()
    for t in range(n):
        for j in range(into[t], into[t + 1]):
            s = by_target[j]
            out[fill[s]] = t
            fill[s] += 1
    ids_by_rank = np.empty(n, dtype=np.int64)
    degree_by_rank = np.empty(n, dtype=np.int64)
    for r in range(n):
        ids_by_rank[r] = ids[order[r]]
        degree_by_rank[r] = degree[order[r]]
    return out, offsets, n, ids_by_rank, degree_by_rank, longest


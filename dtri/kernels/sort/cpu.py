"""The CPU side of the key sort: numba's radix sort of int64 keys, which
:func:`dtri.kernels.dispatch.sort_keys` takes for long NumPy arrays (the rule is in
:mod:`dtri.kernels.backends`). Imported only where it runs; compiled on first use and cached on
disk by numba."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from dtri.kernels.compiled import watch_numba

watch_numba()  # its compiles and cache loads are reported apart from the stages


RADIX_BITS = 11
"""Bits per pass of :func:`radix_sort` (2048 counters: they stay in the L1 cache)."""


@numba.njit(nogil=True, cache=True)
def radix_sort(keys: Any) -> Any:
    """int64 keys, ascending: a least-significant-digit radix sort, one pass per
    :data:`RADIX_BITS` bits of the largest key (three for the packed edges of a graph of
    2**16 vertices, where NumPy's comparison sort takes several times longer); NumPy's sort
    where a key is negative."""
    n = keys.shape[0]
    top = 0
    for i in range(n):
        if keys[i] > top:
            top = keys[i]
        elif keys[i] < 0:
            return np.sort(keys)  # not for negative keys: their digits do not order them
    source = keys.copy()
    target = np.empty_like(keys)
    buckets = 1 << RADIX_BITS
    mask = buckets - 1
    counts = np.empty(buckets, dtype=np.int64)
    shift = 0
    while shift == 0 or (top >> shift) > 0:
        counts[:] = 0
        for i in range(n):
            counts[(source[i] >> shift) & mask] += 1
        total = 0
        for b in range(buckets):
            c = counts[b]
            counts[b] = total
            total += c
        for i in range(n):
            d = (source[i] >> shift) & mask
            target[counts[d]] = source[i]
            counts[d] += 1
        source, target = target, source
        shift += RADIX_BITS
    return source


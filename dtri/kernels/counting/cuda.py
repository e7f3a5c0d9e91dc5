"""The CUDA side of the exact counts (:mod:`dtri.kernels.counting`): 64-bit atomic adds in
CuPy. CuPy's ``bincount`` runs CUB's histogram, whose scratch grows with the number of bins
(207 MiB for 174 k vertices, more than a 128 MiB pool), so the GPU adds with atomics into the
counts instead."""

from __future__ import annotations

from typing import Any

import cupy


def id_counts_cuda(ids: Any, vertices: int) -> Any:
    """:func:`dtri.kernels.counting.id_counts` on the GPU."""
    counts = cupy.zeros(vertices, dtype=cupy.uint64)
    cupy.add.at(counts, ids, cupy.ones(1, dtype=cupy.uint64)[0])
    return counts.view(cupy.int64)


def weighted_counts_cuda(ids: Any, weights: Any, vertices: int, out: Any = None) -> Any:
    """:func:`dtri.kernels.counting.weighted_counts` on the GPU."""
    counts = cupy.zeros(vertices, dtype=cupy.uint64) if out is None else out.view(cupy.uint64)
    # int64 weights as they are (two's complement adds alike), no copy of a per-edge array
    cupy.add.at(counts, ids, weights.view(cupy.uint64) if weights.dtype == cupy.int64
                else weights.astype(cupy.uint64))
    return counts.view(cupy.int64)

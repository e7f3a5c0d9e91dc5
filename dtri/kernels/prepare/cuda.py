"""Fused CUDA passes of the preparation (CuPy elementwise kernels), for the GPU branches of
:mod:`dtri.kernels.canonicalize` and :mod:`dtri.kernels.orient` (``dtri.fused-prepare`` in
``dask.config`` turns them off).

Each replaces a chain of whole-array CuPy operations (unpack, gather, compare, pack, mask)
by one pass over the edges (R-MAT 24 on one H200: the dense keys 55 ms as a chain, 14 ms
fused; examples/benchmarks/results/kernel-probe-h200.jsonl).
"""

from __future__ import annotations

from typing import Any

import cupy

from dtri.kernels.compiled import first_use

_used: set[tuple[str, int]] = set()
"""The kernels used so far on each device (their first use compiles them: counted apart)."""

_dense_keys = cupy.ElementwiseKernel(
    "int64 src, int64 dst, raw int64 table, int32 bits", "int64 key",
    """
    const long long a = table[src], b = table[dst];
    key = a == b ? -1 : (a < b ? (a << bits) | b : (b << bits) | a);
    """, "dtri_dense_keys")

_oriented = cupy.ElementwiseKernel(
    "int64 key, raw R rank, int32 bits", "int64 out",
    """
    const long long a = rank[key >> bits], b = rank[key & ((1LL << bits) - 1)];
    out = a < b ? (a << bits) | b : (b << bits) | a;
    """, "dtri_oriented")


def dense_edge_keys(src: Any, dst: Any, table: Any, bits: int) -> Any:
    """Packed keys ``(low << bits) | high`` of the dense ids ``table[src]``, ``table[dst]``,
    self-loops dropped."""
    with first_use(_used, ("dense_keys", cupy.cuda.runtime.getDevice())):
        keys = _dense_keys(src, dst, table, cupy.int32(bits))
    return keys[keys >= 0]


def oriented_keys(keys: Any, rank: Any, bits: int) -> Any:
    """Packed keys re-pointed from lower to higher rank: ``(min << bits) | max`` of the
    ends' ranks (``rank``: int32 or int64)."""
    with first_use(_used, ("oriented", cupy.cuda.runtime.getDevice())):
        return _oriented(keys, rank, cupy.int32(bits))

"""The peeling round as a CUDA kernel (CuPy), for :mod:`dtri.kernels.peel`: a warp per leaving
edge, whose lanes walk the shorter list and binary-search the longer; supports fall by
atomics, and an edge that falls to the threshold minus one is appended to the next round's
edges by one atomic on their count."""

from __future__ import annotations

from typing import Any

import cupy

from dtri.kernels.cuda_source import cuda_module

CUDA_SOURCE = ("dtri.kernels.peel", "peel.cu")
ID_TYPES = {4: "int", 8: "long long"}
"""The edge ids' C type by their size."""
THREADS_PER_BLOCK = 256
MOST_BLOCKS = 65536


def peel_round_cuda(src: Any, dst: Any, graph: Any, state: Any, support: Any, leaving: Any,
                    threshold: int, out: Any) -> int:
    """One round (:mod:`dtri.kernels.peel`); the edges that leave next are written to ``out``,
    and their number returned."""
    name = f"peel_round<{ID_TYPES[graph.edge.dtype.itemsize]}>"
    kernel = cuda_module(*CUDA_SOURCE, name_expressions=tuple(
        f"peel_round<{t}>" for t in ID_TYPES.values())).get_function(name)
    found = cupy.zeros(1, dtype=cupy.uint64)
    warps = leaving.shape[0]
    blocks = max(1, min(MOST_BLOCKS, -(-warps * 32 // THREADS_PER_BLOCK)))
    kernel((blocks,), (THREADS_PER_BLOCK,),
           (graph.offsets, graph.neighbours, graph.edge, src, dst, state, support, leaving,
            cupy.int64(warps), cupy.int32(threshold), out, found))
    return int(found[0])

"""The graphlet kernels as CUDA kernels (CuPy), for :mod:`dtri.kernels.graphlets`.

* ``list_triangles``: a group of ``1..32`` lanes per edge, sized by its shorter list (as the
  intersection's kernels): each lane walks its share of the shorter list and binary-searches
  the longer, and writes each triangle at the edge's next free record (a 64-bit atomic on its
  cursor: records of one edge may come in any order);
* ``clique_counts``: a group of lanes per triangle, sized by the shortest of ``N+(a)`` and
  ``N+(b)`` above ``c`` and ``N+(c)``, walking it and searching the other two;
* ``cycle_records``: a thread per oriented wedge, which finds its edge by a binary search of
  the batch's record starts.
"""

from __future__ import annotations

from typing import Any

import cupy

from dtri.kernels.cuda_source import cuda_module

CUDA_SOURCE = ("dtri.kernels.graphlets", "graphlets.cu")
"""The kernels' CUDA source, beside this module (:mod:`dtri.kernels.cuda_source` loads it)."""
GROUP_SIZES = (1, 2, 4, 8, 16, 32)
THREADS_PER_BLOCK = 256


def kernel(name: str) -> Any:
    """A compiled kernel on the current device (the module compiled once per device)."""
    return cuda_module(*CUDA_SOURCE).get_function(name)


def by_class(lengths: Any) -> list[tuple[Any, int]]:
    """Slots grouped by the lanes their walk gets: ``(slots, lanes)`` per non-empty class."""
    group_class = cupy.minimum(cupy.ceil(cupy.log2(
        cupy.maximum(lengths, 1).astype(cupy.float64))).astype(cupy.int64), 5)
    classes = []
    for level, lanes in enumerate(GROUP_SIZES):
        slots = cupy.flatnonzero((group_class == level) & (lengths > 0))
        if slots.shape[0]:
            classes.append((slots, lanes))
    return classes


def launch(name: str, slots: Any, lanes: int, *args: Any) -> None:
    threads = int(slots.shape[0]) * lanes
    blocks = (threads + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    kernel(name)((blocks,), (THREADS_PER_BLOCK,),
                 (slots, cupy.int64(slots.shape[0]), cupy.int32(lanes), *args))


def list_triangles_cuda(pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int, ghigh: int,
                        first: int, last: int, starts: Any, ab: Any, ac: Any, bc: Any) -> None:
    """:func:`dtri.kernels.graphlets.cpu.list_triangles_cpu` on the GPU."""
    edge = cupy.arange(first, last, dtype=cupy.int64)
    a_stop = poff[cupy.searchsorted(poff, edge, side="right")]
    counts = starts[1:] - starts[:-1]
    target = pdst[first:last].astype(cupy.int64)
    inside = (target >= glow) & (target < ghigh) & (counts > 0)
    local = cupy.where(inside, target - glow, 0)
    shorter = cupy.minimum(a_stop - edge - 1, goff[local + 1] - goff[local])
    cursor = starts[:-1].astype(cupy.uint64)
    for slots, lanes in by_class(cupy.where(inside, shorter, 0)):
        launch("list_triangles", slots, lanes, pdst, a_stop, gdst, goff, cupy.int32(glow),
               cupy.int64(first), cursor, ab, ac, bc)


def clique_counts_cuda(pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int, tdst: Any,
                       toff: Any, tlow: int, thigh: int, ab: Any, ac: Any, bc: Any,
                       per_record: Any, per_edge: Any) -> None:
    """:func:`dtri.kernels.graphlets.cpu.clique_counts_cpu` on the GPU (``per_record``,
    ``per_edge``: int64 zeros, added to by 64-bit atomics)."""
    a_stop = poff[cupy.searchsorted(poff, ab, side="right")]
    c = pdst[ac].astype(cupy.int64)
    b = pdst[ab].astype(cupy.int64)
    inside = (c >= tlow) & (c < thigh)
    top = cupy.where(inside, c - tlow, 0)
    middle = b - glow
    shortest = cupy.minimum(cupy.minimum(a_stop - ac - 1, goff[middle + 1] - bc - 1),
                            toff[top + 1] - toff[top])
    for slots, lanes in by_class(cupy.where(inside, shortest, 0)):
        launch("clique_counts", slots, lanes, ab, ac, bc, a_stop, pdst, gdst, goff,
               cupy.int32(glow), tdst, toff, cupy.int32(tlow), per_record.view(cupy.uint64),
               per_edge.view(cupy.uint64))


def cycle_records_cuda(pdst: Any, poff: Any, plow: int, idst: Any, ioff: Any, first: int,
                       last: int, starts: Any, bits: int, out: Any) -> None:
    """:func:`dtri.kernels.graphlets.cpu.cycle_records_cpu` on the GPU."""
    total = int(out.shape[0])
    edge = cupy.arange(first, last, dtype=cupy.int64)
    rows = cupy.searchsorted(poff, edge, side="right") - 1
    blocks = (total + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    kernel("cycle_records")((blocks,), (THREADS_PER_BLOCK,), (
        cupy.int64(total), starts, cupy.int64(last - first), rows, pdst, poff,
        cupy.int32(plow), idst, ioff, cupy.int64(first), cupy.int32(bits),
        cupy.int32(out.ndim == 1), out))

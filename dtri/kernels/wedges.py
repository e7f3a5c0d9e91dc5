"""Wedges: the candidate closure edges of every oriented adjacency list, sized before written.

A source ``u`` with sorted out-neighbours ``w_0 < w_1 < ... < w_{d-1}`` closes C(d, 2) wedges
``(w_i, w_j)``, ``i < j``. Splitting that count per edge position (position ``i`` owns the
``d - 1 - i`` pairs whose first member it is) turns the per-source prefix sums of C(d, 2)
(Tirpankar & Sundar) into one prefix sum over the edge array. Then

* a partition's wedge total is known before any wedge exists (it plans the batches), and
* any contiguous range ``[first, last)`` of wedge numbers is produced on its own, with one
  ``searchsorted``, so a batch stays inside the memory budget even when a single
  adjacency list holds more wedges than the budget allows;
* a range needs only the rows from its first wedge's edge to the end of its last wedge's
  adjacency list: any window of whole lists that covers them, with the wedge numbers offset
  by the wedges before the window, produces the same keys (:func:`closure_keys`).

Everything here works on NumPy or CuPy arrays alike (``array_module`` picks the library).
"""

from __future__ import annotations

from typing import Any

from dtri.kernels.bins import pack_edges
from dtri.kernels.dispatch import array_module

BYTES_PER_WEDGE = 96
"""Peak working memory per wedge of a batch, an upper bound for NumPy and CuPy alike: wedge
number, edge position, partner, key, bin digit, radix permutation and the binned copy
(about 35 B measured on NumPy; CuPy's radix sort adds double buffers and scratch)."""
BYTES_PER_ROW = 32
"""Memory per row (edge) of the window a batch reads: its ``src`` and ``dst`` (int64; a copy
when the batch runs away from its partition), each row's wedge count and their prefix sums."""


def batch_bytes(rows: int, wedges: int) -> int:
    """Estimated peak memory of a ``dtri-wedges`` task that reads ``rows`` rows of its
    partition and writes ``wedges`` closure keys, radix-split."""
    return BYTES_PER_ROW * rows + BYTES_PER_WEDGE * wedges


def list_bytes(out_degree: int) -> int:
    """The least memory a ``dtri-wedges`` task over a list of ``out_degree`` targets needs:
    the whole list and one wedge."""
    return batch_bytes(out_degree, 1)


def list_ends(src: Any) -> Any:
    """For each edge of a source-sorted edge array, the end of its source's out-list (the
    position after the source's last edge)."""
    return array_module(src).searchsorted(src, src, side="right")


def wedges_per_edge(src: Any) -> Any:
    """For each edge of a source-sorted edge array: how many later edges share its source.

    Summed over a source with out-degree ``d`` this is C(d, 2), its wedge count.
    """
    ends = list_ends(src)
    ends -= 1  # in place: two arrays of the window's length at most
    ends -= array_module(src).arange(src.shape[0], dtype=ends.dtype)
    return ends


def wedge_offsets(src: Any) -> Any:
    """Inclusive prefix sums of :func:`wedges_per_edge` (int64); the last is the wedge total."""
    xp = array_module(src)
    return xp.cumsum(wedges_per_edge(src), dtype=xp.int64)


def count_wedges(src: Any) -> int:
    """Total wedges of a source-sorted edge array: the sum of C(d, 2) over its sources."""
    offsets = wedge_offsets(src)
    return int(offsets[-1]) if offsets.shape[0] else 0


def closure_keys(src: Any, dst: Any, first: int, last: int, bits: int) -> Any:
    """Packed closure keys ``(w_i << bits) | w_j`` of wedges number ``first`` to ``last - 1``.

    ``src``/``dst`` are oriented edges sorted by (src, dst) that end where an adjacency list
    ends (a partition, or a window of its rows cut at list boundaries); wedges are numbered
    from the first row given. ``bits`` is the width of a vertex id in the packed
    key. Memory: :data:`BYTES_PER_ROW` per row given, :data:`BYTES_PER_WEDGE` per wedge.
    """
    xp = array_module(src)
    per_edge = wedges_per_edge(src)
    ends = xp.cumsum(per_edge, dtype=xp.int64)
    wedge = xp.arange(first, last, dtype=xp.int64)
    edge = xp.searchsorted(ends, wedge, side="right")
    start = ends[edge]
    start -= per_edge[edge]  # each wedge's edge's first wedge number
    del ends, per_edge
    wedge -= start  # in place from here on: the wedge's rank among its edge's wedges,
    del start
    wedge += edge + 1  # then its partner edge
    partner = dst[wedge]
    del wedge
    return pack_edges(dst[edge], partner, bits, copy=False)  # dst[edge] is a fresh array


"""Wedges: the candidate closure edges of every oriented adjacency list, sized before written.

A source ``u`` with sorted out-neighbours ``w_0 < w_1 < ... < w_{d-1}`` closes C(d, 2) wedges
``(w_i, w_j)``, ``i < j``. Splitting that count per edge position (position ``i`` owns the
``d - 1 - i`` pairs whose first member it is) turns the per-source prefix sums of C(d, 2)
(Tirpankar & Sundar) into one prefix sum over the edge array. Then

* a partition's wedge total is known before any wedge exists (it plans the batches), and
* any contiguous range ``[first, last)`` of wedge numbers is produced on its own, with one
  ``searchsorted``, so a batch stays inside the memory budget even when a single
  adjacency list holds more wedges than the budget allows.

Everything here works on NumPy or CuPy arrays alike (``array_module`` picks the library).
"""

from __future__ import annotations

from typing import Any

from dtri.bins import pack_edges
from dtri.dispatch import array_module

BYTES_PER_WEDGE = 96
"""Peak working memory per wedge of a batch: wedge number, edge position, partner, two
endpoints, key, bin id, radix permutation and the binned copy (~9 int64 arrays + slack)."""


def list_ends(src: Any) -> Any:
    """For each edge of a source-sorted edge array, the end of its source's out-list (the
    position after the source's last edge)."""
    return array_module(src).searchsorted(src, src, side="right")


def wedges_per_edge(src: Any) -> Any:
    """For each edge of a source-sorted edge array: how many later edges share its source.

    Summed over a source with out-degree ``d`` this is C(d, 2), its wedge count.
    """
    ends = list_ends(src)
    return ends - 1 - array_module(src).arange(src.shape[0], dtype=ends.dtype)


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

    ``src``/``dst`` are one partition's oriented edges sorted by (src, dst), whole adjacency
    lists only; ``bits`` is the width of a vertex id in the packed key.
    """
    xp = array_module(src)
    per_edge = wedges_per_edge(src)
    ends = xp.cumsum(per_edge, dtype=xp.int64)
    wedge = xp.arange(first, last, dtype=xp.int64)
    edge = xp.searchsorted(ends, wedge, side="right")
    partner = edge + 1 + (wedge - (ends[edge] - per_edge[edge]))
    del wedge, ends, per_edge
    return pack_edges(dst[edge], dst[partner], bits)


def batch_ranges(total: int, batch_size: int) -> list[tuple[int, int]]:
    """Split wedge numbers ``[0, total)`` into ranges of at most ``batch_size``."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    return [(first, min(first + batch_size, total)) for first in range(0, total, batch_size)]

"""Sort: each source range's oriented edges ordered by (src, dst).

A receiving partition gets every edge of its source range (:func:`dtri.orient.source_bounds`),
so it holds whole adjacency lists, sorted, which is what the wedge stage needs.
:func:`partition_summary` then measures each partition: edges, wedges (prefix sums of
C(d, 2)), its source range and largest target, all before any wedge is written.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from dtri.bins import checked_key_bits, unpack_keys
from dtri.dispatch import array_module, column_to_array, frame_from_arrays
from dtri.wedges import count_wedges


class PartitionSummary(NamedTuple):
    """What the planner knows of one sorted partition."""

    edges: int
    wedges: int
    first_src: int
    last_src: int
    last_dst: int


def sorted_edges(vertices: int, *pieces: Any) -> Any:
    """One source range's oriented keys as a ``src, dst`` frame sorted by (src, dst)."""
    xp = array_module(pieces[0])
    keys = xp.sort(xp.concatenate(pieces))
    src, dst = unpack_keys(keys, checked_key_bits(vertices))
    return frame_from_arrays(keys, {"src": src, "dst": dst})


def partition_summary(frame: Any) -> PartitionSummary:
    """Edge count, wedge count and first/last source of one sorted partition."""
    src = column_to_array(frame["src"])
    if src.shape[0] == 0:
        return PartitionSummary(0, 0, -1, -1, -1)
    last_dst = int(column_to_array(frame["dst"]).max())
    return PartitionSummary(int(src.shape[0]), count_wedges(src), int(src[0]), int(src[-1]),
                            last_dst)

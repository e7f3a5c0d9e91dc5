"""Sort: oriented edges ordered by (src, dst) and range-partitioned by src.

After the sort each partition holds whole adjacency lists (all edges of a source land in one
partition because partitions are split by source value), sorted, which is what the wedge
stage needs. :func:`partition_summary` then measures each partition: edges, wedges (prefix
sums of C(d, 2)), its source range and largest target, all before any wedge is written.
"""

from __future__ import annotations

from typing import NamedTuple

import dask.dataframe as dd

from dtri.dispatch import column_to_array
from dtri.wedges import count_wedges


class PartitionSummary(NamedTuple):
    """What the planner knows of one sorted partition."""

    edges: int
    wedges: int
    first_src: int
    last_src: int
    last_dst: int


def sort_adjacency(oriented: dd.DataFrame) -> dd.DataFrame:
    """Edges sorted by (src, dst), partitions split by src value (whole adjacency lists)."""
    return oriented.sort_values(["src", "dst"], ignore_index=True)


def partition_summary(frame) -> PartitionSummary:
    """Edge count, wedge count and first/last source of one sorted partition."""
    src = column_to_array(frame["src"])
    if src.shape[0] == 0:
        return PartitionSummary(0, 0, -1, -1, -1)
    last_dst = int(column_to_array(frame["dst"]).max())
    return PartitionSummary(int(src.shape[0]), count_wedges(src), int(src[0]), int(src[-1]),
                            last_dst)

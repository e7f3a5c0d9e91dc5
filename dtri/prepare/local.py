"""Canonicalize → rank → orient → sort of a graph held in one partition, in one task.

Across partitions these stages are joined by exchanges of array pieces
(:func:`dtri.pipeline.prepare_partitions`); when the whole edge list fits one partition (one
GPU, or a small graph) the same array operations run back to back in one ``dtri-prepare`` task,
without any exchange.
"""

from __future__ import annotations

from typing import Any

from dtri.kernels.canonicalize import (
    partition_vertices,
    split_edge_keys,
    unique_edge_keys,
    vertex_count,
)
from dtri.kernels.csr import sorted_edges
from dtri.kernels.orient import degree_counts, orient_keys, vertex_ranks


def prepare_partition(frame: Any, orientation: str) -> tuple[Any, int]:
    """One partition's oriented edges sorted by (src, dst), and the number of vertices."""
    return prepare_partition_with_ids(frame, orientation)[:2]


def prepare_partition_with_ids(frame: Any, orientation: str) -> tuple[Any, int, Any, Any]:
    """:func:`prepare_partition` plus the input id of every dense vertex (ascending) and the
    rank of every dense vertex (``None`` for the id orientation), which name a vertex of the
    sorted edges by its input id (:func:`dtri.kernels.orient.input_id_of_rank`)."""
    vertices = partition_vertices(frame)
    n = vertex_count(vertices)
    keys = unique_edge_keys(split_edge_keys(frame, vertices, 1)[0])
    rank = vertex_ranks(degree_counts(keys, n), orientation)
    return sorted_edges(n, orient_keys(keys, rank, n)), n, vertices, rank

"""Canonicalize → rank → orient → sort of a graph held in one partition, in one task.

Across partitions these stages are joined by exchanges of array pieces
(:mod:`dtri.prepared.distributed`); when the whole edge list fits one partition (one GPU, or a
small graph) the same array operations run back to back in one ``dtri-prepare`` task, without
any exchange.
"""

from __future__ import annotations

from typing import Any

from dtri.kernels.canonicalize import (
    partition_vertices,
    split_edge_keys,
    unique_edge_keys,
    vertex_count,
)
from dtri.kernels.csr import from_keys
from dtri.kernels.orient import by_rank, degree_counts, orient_keys, rank_and_order
from dtri.prepared.inputs import concat_frames


def prepare_partition(frame: Any, orientation: str) -> tuple[tuple, int, Any, Any]:
    """One partition's oriented edges as a CSR over every rank ``[0, n)`` (a plain tuple, as
    partitions are stored: :func:`dtri.kernels.csr.stored`), the number of vertices ``n``,
    and by rank, the input id and the degree of every vertex."""
    vertices = partition_vertices(frame)
    n = vertex_count(vertices)
    keys = unique_edge_keys(split_edge_keys(frame, vertices, 1)[0])
    degree = degree_counts(keys, n)
    rank, order = rank_and_order(degree, orientation)
    csr = from_keys(orient_keys(keys, rank, n), n, 0, n)
    return tuple(csr), n, by_rank(vertices, order), by_rank(degree, order)


def prepare_inputs(orientation: str, *frames: Any) -> tuple[tuple, int, Any, Any]:
    """:func:`prepare_partition` of input partitions taken together."""
    return prepare_partition(concat_frames(*frames), orientation)

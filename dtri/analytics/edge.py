"""Per-edge analytics: the triangles on each edge (its support), and the edges of a graph as
input ids, shared by the k-truss.

Every undirected edge appears once, in the partition of its lower-ranked end, as ``u < v`` by
input id. The supports are summed on the partitions' owners
(:func:`dtri.analytics.credits.edge_totals`) and cached on the graph; nothing per edge is
gathered into one process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from dtri.kernels.csr import as_csr, sources
from dtri.kernels.dispatch import array_module, frame_from_arrays

if TYPE_CHECKING:
    import dask.dataframe as dd

    from dtri.prepared.graph import GraphData


def edge_ids(part: tuple, ids: Any) -> tuple[Any, Any]:
    """The edges of a partition as input ids, ``u < v``."""
    csr = as_csr(part)
    xp = array_module(csr.offsets)
    u, v = ids[sources(csr)], ids[csr.dst.astype(xp.int64)]
    return xp.minimum(u, v), xp.maximum(u, v)


def support_frame(part: tuple, ids: Any, support: Any) -> Any:
    """One partition of :func:`edge_support`: ``u``, ``v``, ``support``."""
    u, v = edge_ids(part, ids)
    return frame_from_arrays(u, {"u": u, "v": v, "support": support})


def support_totals(graph: GraphData) -> list[Any]:
    """Persisted, per partition on its owner: the triangles on each of its edges (int64),
    by the 2D join's rounds where the graph's decomposition is 2D
    (:func:`dtri.analytics.cannon.cannon_edge_support`), else by the 1D credits."""
    from dtri.analytics.cannon import cannon_edge_support, decomposition
    from dtri.analytics.credits import edge_totals, kept_partitions

    def totals() -> list[Any]:
        spread = decomposition(graph)
        if spread.kind == "2d":
            return cannon_edge_support(graph, spread.side)
        return edge_totals(graph, "support")

    return graph.cached("edge_support_totals", lambda: kept_partitions(
        graph, "support", [s.edges for s in graph.summaries], totals))


def edge_frame(graph: GraphData, stage: str, build: Callable[[Any, Any, Any], Any],
               columns: dict[str, str], per_partition: Sequence[Any],
               parts: Sequence[Any] | None = None) -> dd.DataFrame:
    """A Dask DataFrame of one persisted ``build(part, ids, values)`` per partition."""
    parts = graph.parts if parts is None else parts
    persisted = graph.per_partition(stage, build, [(part, graph.ids, per_partition[p])
                                                   for p, part in enumerate(parts)])
    return graph.tasks.collection(persisted, frame_meta(graph, columns), stage)


def result_module(graph: GraphData) -> Any:
    """The array library of a graph's results: CuPy where they stay on GPUs (cuDF frames),
    NumPy otherwise (pandas: the CPU, and host staging)."""
    if graph.staging.in_gpu_memory:
        import cupy

        return cupy
    import numpy

    return numpy


def frame_meta(graph: GraphData, columns: dict[str, str]) -> Any:
    """An empty frame like the partitions (:func:`result_module`)."""
    xp = result_module(graph)
    arrays = {name: xp.zeros(0, dtype=dtype) for name, dtype in columns.items()}
    return frame_from_arrays(next(iter(arrays.values())), arrays)


def edge_support(graph: GraphData) -> dd.DataFrame:
    """Each undirected edge once, ``u < v`` by input id, with the triangles on it."""
    return graph.cached("edge_support", lambda: edge_frame(
        graph, "edge-support", support_frame, {"u": "int64", "v": "int64", "support": "int64"},
        support_totals(graph)))

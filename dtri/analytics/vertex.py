"""Per-vertex analytics: triangles at each vertex, local clustering, average clustering and
transitivity, with NetworkX's definitions.

Each result is a Dask collection with one partition per sorted partition of the graph: the
vertices of its rank range, indexed by their ids in the input. The counts are computed once
(:func:`dtri.analytics.credits.vertex_totals`), persisted on the partitions' owners and cached
on the graph, so clustering, average clustering and transitivity reuse them and the degrees
the preparation kept; nothing per vertex is gathered into one process.

* triangles ``T(v)``: the triangles that ``v`` is a vertex of;
* clustering ``c(v) = 2 T(v) / (d (d - 1))``, 0 where ``d < 2``;
* average clustering: the mean of ``c`` over every vertex, zeros included;
* transitivity: ``3 × triangles / triples = Σ 2 T(v) / Σ d (d - 1)``, computed in Python
  integers and divided once, so it is the correctly rounded value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dtri.kernels.dispatch import array_module, series_from_arrays

if TYPE_CHECKING:
    import dask.dataframe as dd

    from dtri.prepared.graph import GraphData


def vertex_block(ids: Any, degree: Any, present: Any, low: int, high: int) -> tuple:
    """The input ids, degrees and presence of the ranks ``[low, high)`` (a partition's
    vertices), as arrays of their own."""
    return (ids[low:high].copy(), degree[low:high].copy(),
            None if present is None else present[low:high].copy())


def vertex_blocks(graph: GraphData) -> list[Any]:
    """Persisted, per partition on its owner: :func:`vertex_block` of its rank range."""

    def blocks() -> list[Any]:
        tasks, bounds = graph.tasks, graph.bounds
        built = [tasks.task("vertices", vertex_block, graph.ids, graph.degree, graph.present,
                            bounds[p], bounds[p + 1], key=("block", p), on_host=True,
                            at=tasks.owner(p)) for p in range(graph.partitions)]
        return list(graph.timer().submit("vertices", *built))

    return graph.cached("blocks", blocks)


def present_count(block: tuple) -> int:
    """The vertices of a partition's block that belong to the graph."""
    _, degree, present = block
    return int(degree.shape[0] if present is None else present.sum())


def present_vertices(graph: GraphData) -> int:
    """The vertices of the graph (of a k-truss: those with an edge)."""
    if graph.present is None:
        return graph.vertices
    tasks = graph.tasks
    counts = [tasks.task("vertices", present_count, block, key=("present", p), on_host=True)
              for p, block in enumerate(vertex_blocks(graph))]
    (values,) = graph.timer().compute("vertices", counts)
    return sum(values)


def triangle_counts(graph: GraphData) -> list[Any]:
    """Persisted, per partition: the triangles at each of its ranks (int64)."""
    from dtri.analytics.credits import kept_partitions, vertex_totals

    bounds = graph.bounds
    return graph.cached("vertex_triangles", lambda: kept_partitions(
        graph, "triangles", [bounds[p + 1] - bounds[p] for p in range(graph.partitions)],
        lambda: vertex_totals(graph, "triangles")))


def triangles_series(block: tuple, counts: Any) -> Any:
    """One partition of :func:`triangles`: the counts of its vertices, by input id."""
    ids, _, present = block
    if present is not None:
        ids, counts = ids[present], counts[present]
    return series_from_arrays(counts, ids, "triangles", "vertex")


def clustering_values(block: tuple, counts: Any) -> Any:
    """Local clustering of a partition's ranks: ``2 T / (d (d - 1))``, 0 where ``d < 2``."""
    _, degree, _ = block
    xp = array_module(degree)
    pairs = degree * (degree - 1)
    values = xp.zeros(degree.shape[0], dtype=xp.float64)
    some = pairs > 0
    values[some] = (2 * counts[some]) / pairs[some]
    return values


def clustering_series(block: tuple, counts: Any) -> Any:
    """One partition of :func:`clustering`."""
    ids, _, present = block
    values = clustering_values(block, counts)
    if present is not None:
        ids, values = ids[present], values[present]
    return series_from_arrays(values, ids, "clustering", "vertex")


def partition_sums(block: tuple, counts: Any) -> tuple[int, int, float, int]:
    """A partition's ``Σ T``, ``Σ d (d - 1)``, ``Σ c`` and vertex count (its present
    vertices)."""
    _, degree, present = block
    values = clustering_values(block, counts)
    if present is not None:
        degree, counts, values = degree[present], counts[present], values[present]
    return (int(counts.sum()), int((degree * (degree - 1)).sum()), float(values.sum()),
            int(degree.shape[0]))


def _series(graph: GraphData, stage: str, build: Callable[[tuple, Any], Any], name: str,
            dtype: str) -> dd.Series:
    """A Dask Series of one persisted ``build(block, counts)`` per partition."""
    counts, blocks = triangle_counts(graph), vertex_blocks(graph)
    persisted = graph.per_partition(stage, build, [(blocks[p], counts[p])
                                                   for p in range(graph.partitions)])
    return graph.tasks.collection(persisted, _meta(graph, name, dtype), stage)


def _meta(graph: GraphData, name: str, dtype: str) -> Any:
    """An empty Series like the partitions (:func:`dtri.analytics.edge.result_module`)."""
    from dtri.analytics.edge import result_module

    xp = result_module(graph)
    return series_from_arrays(xp.zeros(0, dtype=dtype), xp.zeros(0, dtype="int64"), name,
                              "vertex")


def triangles(graph: GraphData) -> dd.Series:
    """Triangles at each vertex, by input id (cached on the graph)."""
    return graph.cached("triangles", lambda: _series(graph, "vertex-triangles",
                                                     triangles_series, "triangles", "int64"))


def clustering(graph: GraphData) -> dd.Series:
    """Local clustering coefficient of each vertex, by input id (cached on the graph)."""
    return graph.cached("clustering", lambda: _series(graph, "clustering", clustering_series,
                                                      "clustering", "float64"))


def _sums(graph: GraphData) -> tuple[int, int, float, int]:
    """Σ T, Σ d (d - 1), Σ c and the vertex count over the graph (cached)."""

    def sums() -> tuple[int, int, float, int]:
        tasks = graph.tasks
        counts, blocks = triangle_counts(graph), vertex_blocks(graph)
        partials = [tasks.task("vertex-sums", partition_sums, blocks[p], counts[p], key=(p,),
                               on_host=True) for p in range(graph.partitions)]
        (values,) = graph.timer().compute("vertex-sums", partials)
        return (sum(v[0] for v in values), sum(v[1] for v in values),
                math.fsum(v[2] for v in values), sum(v[3] for v in values))

    return graph.cached("sums", sums)


def average_clustering(graph: GraphData) -> float:
    """Mean local clustering over every vertex, zeros included."""
    _, _, total, vertices = _sums(graph)
    return total / vertices if vertices else 0.0


def transitivity(graph: GraphData) -> float:
    """``Σ 2 T(v) / Σ d (d - 1)``, 0 without triangles (NetworkX's)."""
    triangles_at, pairs, _, _ = _sums(graph)
    return 0.0 if triangles_at == 0 else 2 * triangles_at / pairs  # Python ints: rounded once

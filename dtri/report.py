"""What the analytic commands print and write: a short summary of each result (totals and a
top list, computed as Dask reductions on the workers) and, with ``-o``, the whole result as
Parquet through Dask (``to_parquet``: one file per partition, written where each partition
lives) into a temporary folder renamed into place when complete (:mod:`dtri.output`)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from dask.utils import format_bytes

from dtri.output import OutputFolder

if TYPE_CHECKING:
    from dtri import PreparedGraph


def write_parquet(frame: Any, out: OutputFolder | None) -> str | None:
    """``frame`` (a Dask DataFrame) to Parquet at ``out``, if given, renamed into place when
    complete; returns the output's name."""
    return None if out is None else out.write_parquet(frame)


def first_rows(frame: Any, order: list[str], top: int) -> Any:
    """A frame's first ``top`` rows by ``order``: the first column descending, ties broken by
    the others, ascending. Only the rows whose first column reaches its ``top``-th largest
    value are sorted (all of them where fewer are valued: missing values sort last)."""
    first = frame[order[0]]
    largest = first.nlargest(top) if 0 < top < len(frame) else first.iloc[:0]
    if top and len(largest) == top and bool(largest.notna().all()):
        frame = frame[first >= largest.iloc[-1]]
    return frame.sort_values(order, ascending=[False, *[True] * (len(order) - 1)]).head(top)


def plain_records(frame: Any) -> list[dict[str, Any]]:
    """A pandas frame's rows as dicts of plain Python values."""
    return [{name: value.item() if hasattr(value, "item") else value
             for name, value in row.items()} for row in frame.to_dict("records")]


def top_rows(frame: Any, column: str, top: int, ties: tuple[str, ...]) -> list[dict[str, Any]]:
    """The ``top`` rows with the largest ``column`` (ties by ``ties``, ascending), as plain
    Python values."""
    if top == 0:
        return []
    order = [column, *ties]
    # each partition's first rows in that order, then theirs: exact, ties included
    picked = frame.map_partitions(first_rows, order, top).to_backend("pandas").compute()
    return plain_records(first_rows(picked, order, top))


def triangles_summary(graph: PreparedGraph, triangles: Any, out: OutputFolder | None,
                      top: int) -> dict[str, Any]:
    """``dtri triangles``: the total (a third of the per-vertex counts' sum, each triangle
    being at three vertices), the vertices with most triangles, the output."""
    frame = triangles.reset_index()
    at_vertices = int(frame["triangles"].sum().compute())
    return {"vertices": graph.present_vertices(), "edges": graph.edges,
            "triangles": at_vertices // 3, "vertex_sum": at_vertices,
            "top": top_rows(frame, "triangles", top, ("vertex",)),
            "output": write_parquet(frame, out)}


def clustering_summary(graph: PreparedGraph, clustering: Any, out: OutputFolder | None,
                       top: int) -> dict[str, Any]:
    """``dtri clustering``: average clustering, transitivity, the highest, the output."""
    frame = clustering.reset_index()
    return {"vertices": graph.present_vertices(), "edges": graph.edges,
            "average_clustering": graph.average_clustering(),
            "transitivity": graph.transitivity(),
            "top": top_rows(frame, "clustering", top, ("vertex",)),
            "output": write_parquet(frame, out)}


def transitivity_summary(graph: PreparedGraph, transitivity: float, out: None, top: int
                         ) -> dict[str, Any]:
    """``dtri transitivity``: the transitivity and the triangles it counts."""
    return {"vertices": graph.present_vertices(), "edges": graph.edges,
            "triangles": graph.count_triangles(), "transitivity": transitivity}


def support_summary(graph: PreparedGraph, frame: Any, out: OutputFolder | None,
                    top: int) -> dict[str, Any]:
    """``dtri support``: the edges on most triangles, the output."""
    return {"vertices": graph.present_vertices(), "edges": graph.edges,
            "triangles": graph.count_triangles(),
            "top": top_rows(frame, "support", top, ("u", "v")),
            "output": write_parquet(frame, out)}


def ktruss_summary(graph: PreparedGraph, truss: Any, out: OutputFolder | None, top: int,
                   k: int) -> dict[str, Any]:
    """``dtri ktruss K``: the size of the K-truss, its edges as output."""
    summary = {"k": k, "vertices": truss.present_vertices(), "edges": truss.edges,
               "triangles": truss.count_triangles(), "graph_vertices": graph.present_vertices(),
               "graph_edges": graph.edges}
    if out is not None:
        summary["output"] = write_parquet(truss.edge_support()[["u", "v"]], out)
    return summary


def truss_summary(graph: PreparedGraph, frame: Any, out: OutputFolder | None,
                  top: int) -> dict[str, Any]:
    """``dtri truss``: the largest truss number, edges per truss number, the output."""
    levels = frame["truss"].value_counts().to_backend("pandas").compute()
    per_level = {int(k): int(v) for k, v in sorted(levels.items())}
    return {"vertices": graph.present_vertices(), "edges": graph.edges,
            "max_truss": max(per_level, default=2 if graph.edges else 0),
            "edges_per_truss": per_level,
            "top": top_rows(frame, "truss", top, ("u", "v")),
            "output": write_parquet(frame, out)}


def graphlets_summary(graph: PreparedGraph, counted: dict[str, Any], out: OutputFolder | None,
                      top: int, orbits: str, kind: str) -> dict[str, Any]:
    """``dtri graphlets``: the graph's copies of each graphlet and the vertices in most
    4-cliques (triangles for σ0-σ4), ``counted`` by :meth:`dtri.PreparedGraph.graphlet_summary`
    (no Dask DataFrame is built unless written), the output."""
    written = None if out is None else graph.graphlets(orbits=orbits, kind=kind).reset_index()
    return {"vertices": graph.present_vertices(), "edges": graph.edges, "orbits": orbits,
            "kind": kind, **counted, "output": write_parquet(written, out)}


# ------------------------------------------------------------------------------ statistics

def total_moved(moved_bytes: dict[str, dict[str, int]]) -> int:
    """All bytes of a result's ``moved_bytes`` (per stage, per receiving worker)."""
    return sum(sum(workers.values()) for workers in moved_bytes.values())


def most_to_one_worker(moved_bytes: dict[str, dict[str, int]]) -> int:
    """The most bytes that one worker received, over all stages."""
    received: Counter[str] = Counter()
    for workers in moved_bytes.values():
        received.update(workers)
    return max(received.values(), default=0)


def host_memory_line(plan: dict[str, int]) -> str:
    """One line on a worker's host memory plan (the ``host_memory`` of ``--explain``'s plan:
    ``limit``, ``overhead``, ``staging``, ``tasks``, ``stored``)."""
    staging = f" + page-locked pool {format_bytes(plan['staging'])}" if plan["staging"] else ""
    return (f"{format_bytes(plan['limit'])}/worker = overhead {format_bytes(plan['overhead'])}"
            f"{staging} + running tasks {format_bytes(plan['tasks'])} + stored results "
            f"{format_bytes(plan['stored'])} (beyond them, disk)")


def listing_summary(graph: PreparedGraph, out: OutputFolder, limit: int | None,
                    vertices: list[int] | None) -> dict[str, Any]:
    """``dtri list``: the triangles written to ``out`` (as each listing task ends), and how
    they were restricted."""
    listed = graph.write_triangles(out, limit=limit, vertices=vertices)
    return {"vertices": graph.present_vertices(), "edges": graph.edges, "listed": listed,
            "limit": limit, "of_vertices": None if vertices is None else len(set(vertices)),
            "output": out.out}

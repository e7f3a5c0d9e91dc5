"""What the analytic commands print and write: a short summary of each result (totals and a
top list, computed as Dask reductions on the workers) and, with ``-o``, the whole result as
Parquet through Dask (``to_parquet``: one file per partition, written where each partition
lives) into a temporary folder renamed into place when complete (:mod:`dtri.output`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dtri.analytics.vertex import present_vertices
from dtri.kernels.dispatch import host_frame
from dtri.output import OutputFolder

if TYPE_CHECKING:
    from dtri import PreparedGraph


def write_parquet(frame: Any, out: OutputFolder | None) -> str | None:
    """``frame`` (a Dask DataFrame) to Parquet at ``out``, if given, renamed into place when
    complete; returns the output's name."""
    return None if out is None else out.write_parquet(frame)


def first_rows(frame: Any, order: list[str], top: int) -> Any:
    """A frame's first ``top`` rows by ``order``: the first column descending, ties broken by
    the others, ascending."""
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
    picked = host_frame(frame.map_partitions(first_rows, order, top).compute())
    return plain_records(first_rows(picked, order, top))


def triangles_summary(graph: PreparedGraph, out: OutputFolder | None, top: int) -> dict[str, Any]:
    """``dtri triangles``: the total (a third of the per-vertex counts' sum, each triangle
    being at three vertices), the vertices with most triangles, the output."""
    frame = graph.triangles().reset_index()
    at_vertices = int(frame["triangles"].sum().compute())
    summary = {"vertices": present_vertices(graph), "edges": graph.edges,
               "triangles": at_vertices // 3, "vertex_sum": at_vertices,
               "top": top_rows(frame, "triangles", top, ("vertex",))}
    summary["output"] = write_parquet(frame, out)
    return summary


def clustering_summary(graph: PreparedGraph, out: OutputFolder | None, top: int) -> dict[str, Any]:
    """``dtri clustering``: average clustering, transitivity, the highest, the output."""
    frame = graph.clustering().reset_index()
    summary = {"vertices": present_vertices(graph), "edges": graph.edges,
               "average_clustering": graph.average_clustering(),
               "transitivity": graph.transitivity(),
               "top": top_rows(frame, "clustering", top, ("vertex",))}
    summary["output"] = write_parquet(frame, out)
    return summary


def transitivity_summary(graph: PreparedGraph) -> dict[str, Any]:
    """``dtri transitivity``: the transitivity and the triangles it counts."""
    return {"vertices": present_vertices(graph), "edges": graph.edges,
            "triangles": graph.count_triangles(), "transitivity": graph.transitivity()}


def support_summary(graph: PreparedGraph, out: OutputFolder | None, top: int) -> dict[str, Any]:
    """``dtri support``: the edges on most triangles, the output."""
    frame = graph.edge_support()
    summary = {"vertices": present_vertices(graph), "edges": graph.edges,
               "triangles": graph.count_triangles(),
               "top": top_rows(frame, "support", top, ("u", "v"))}
    summary["output"] = write_parquet(frame, out)
    return summary


def ktruss_summary(graph: PreparedGraph, k: int, out: OutputFolder | None) -> dict[str, Any]:
    """``dtri ktruss K``: the size of the K-truss, its edges as output."""
    truss = graph.k_truss(k)
    summary: dict[str, Any] = {"k": k, "vertices": present_vertices(truss), "edges": truss.edges,
               "triangles": truss.count_triangles(), "graph_vertices": present_vertices(graph),
               "graph_edges": graph.edges}
    if out is not None:
        summary["output"] = write_parquet(truss.edge_support()[["u", "v"]], out)
    return summary


def truss_summary(graph: PreparedGraph, out: OutputFolder | None, top: int) -> dict[str, Any]:
    """``dtri truss``: the largest truss number, edges per truss number, the output."""
    frame = graph.truss_numbers()
    levels = frame["truss"].value_counts().compute()
    levels = host_frame(levels)
    per_level = {int(k): int(v) for k, v in sorted(levels.items())}
    summary = {"vertices": present_vertices(graph), "edges": graph.edges,
               "max_truss": max(per_level, default=2 if graph.edges else 0),
               "edges_per_truss": per_level,
               "top": top_rows(frame, "truss", top, ("u", "v"))}
    summary["output"] = write_parquet(frame, out)
    return summary


def frame_sums(frame: Any) -> list[int]:
    """Column sums of one partition, as Python ints."""
    return [int(v) for v in frame.sum().to_numpy().tolist()]


def frame_top(frame: Any, columns: list[str], order: list[str], top: int) -> Any:
    """One partition's first ``top`` rows by ``order`` (:func:`first_rows`), its index a
    column, of ``columns``, in host memory."""
    return host_frame(first_rows(frame.reset_index()[columns], order, top))


def graphlets_summary(graph: PreparedGraph, out: OutputFolder | None, top: int, orbits: str,
                      kind: str) -> dict[str, Any]:
    """``dtri graphlets``: the graph's copies of each graphlet (from the orbit sums), the
    vertices in most 4-cliques (triangles for σ0-σ4), the output. The sums and the top rows
    are taken per partition where it lives; no Dask DataFrame is built unless written."""
    import pandas

    from dtri.analytics.graphlets import graphlet_frames
    from dtri.kernels.graphlets import BASIC_ORBITS, COLUMNS, GRAPHLETS

    frames = graphlet_frames(graph, orbits, kind)
    shown = BASIC_ORBITS if orbits == "sigma0-4" else len(COLUMNS)
    ranked = "sigma15" if shown > BASIC_ORBITS else "sigma4"
    listed = ["vertex", "sigma1", "sigma4", "sigma12", "sigma15"] if shown > BASIC_ORBITS \
        else ["vertex", *COLUMNS[1:BASIC_ORBITS]]
    tasks = graph.tasks
    sums = [tasks.task("summary", frame_sums, f, key=("sums", p), on_host=True)
            for p, f in enumerate(frames)]
    order = [ranked, "vertex"]
    tops = [tasks.task("summary", frame_top, f, listed, order, top, key=("top", p),
                       on_host=True) for p, f in enumerate(frames)] if top else []
    per_partition, heads = graph.timer().compute("summary", sums, tops)
    totals = [sum(column) for column in zip(*per_partition, strict=True)] if per_partition \
        else [0] * shown
    copies = {name: totals[orbit] // per_copy
              for name, orbit, per_copy in GRAPHLETS if orbit < shown}
    rows = plain_records(first_rows(pandas.concat(heads), order, top)) if heads else []
    summary = {"vertices": present_vertices(graph), "edges": graph.edges, "orbits": orbits,
               "kind": kind, "graphlets": copies, "top": rows}
    summary["output"] = write_parquet(graph.graphlets(orbits=orbits, kind=kind).reset_index(),
                                      out) if out is not None else None
    return summary

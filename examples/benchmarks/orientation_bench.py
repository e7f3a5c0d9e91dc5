"""Orientation × vertex order on the GPU, with work counters, and pylibcugraph in the same run.

For each graph, the edge list is persisted once on one dask-cuda worker; then for every
orientation and order (and ``auto``), ``repeat`` times, dtri prepares and counts it from GPU
memory (the bench's in-memory measurement) and the fastest run is kept: its total seconds,
its stages (``direct`` and ``order`` are A-direction's and the order's own costs; the kernel
is ``wedges_join``), the resolved choices and the work counters of the fused join
(:func:`dtri.kernels.intersect.work_counters`; one-partition graphs). pylibcugraph counts the
same deduplicated edges afterwards. One JSON line per graph, in the schema of ``schema.py``
(family ``orientation``: ``seconds`` and ``stage_seconds`` are the ``auto`` run's, every run
in ``detail.runs``).

    python examples/benchmarks/orientation_bench.py rmat:22 rmat:24 rmat:26 FILE.txt.gz ... \\
        [--orientations degree adirection id] [--orders rank degree aorder] [--repeat 3] \\
        [--memory-budget 48GiB]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from schema import command_line, commit, emit, to_schema

ORIENTATIONS = ("degree", "adirection")
ORDERS = ("rank", "degree", "aorder")


def counters_of(part: tuple) -> dict[str, int]:
    """Work counters of a one-partition graph (the partition against itself)."""
    from dtri.kernels.csr import as_csr
    from dtri.kernels.intersect import work_counters

    csr = as_csr(part)
    return work_counters(csr, csr)


def published_count(path: str) -> int | None:
    """The published triangle count of a shared SNAP graph (MANIFEST.tsv beside it)."""
    import csv
    from pathlib import Path

    manifest = Path(path).parent / "MANIFEST.tsv"
    if not manifest.exists():
        return None
    with manifest.open() as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            if row["file"] == Path(path).name:
                return int(row["triangles"])
    return None


def run_one(session: Any, edges: Any, orientation: str, order: str, repeat: int,
            ) -> dict[str, Any]:
    """The fastest of ``repeat`` prepare + count runs with these choices."""
    from dtri.api import prepare

    best: dict[str, Any] = {}
    for _ in range(repeat):
        started = time.perf_counter()
        with prepare(edges, session=session, orientation=orientation, order=order) as graph:
            result = graph.count()
            seconds = time.perf_counter() - started
            if not best or seconds < best["seconds"]:
                counters = None
                if graph.partitions == 1:
                    import dask

                    counters = dask.delayed(counters_of)(graph.parts[0]).compute()
                best = {"orientation": orientation, "order": order,
                        "memory_budget": result.memory_budget,
                        "resolved": {"orientation": graph.orientation,
                                     "order": getattr(graph, "order", order),
                                     "why": [graph.orientation_reason,
                                             getattr(graph, "order_reason", "")]},
                        "triangles": result.triangles, "seconds": round(seconds, 6),
                        "kernel_seconds": result.seconds.get("wedges_join"),
                        "stage_seconds": result.seconds, "partitions": graph.partitions,
                        "wedges": result.wedges, "counters": counters}
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--orientations", nargs="+", default=list(ORIENTATIONS))
    parser.add_argument("--orders", nargs="+", default=list(ORDERS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--peer", default="pylibcugraph", help="'none' for no peer")
    parser.add_argument("--memory-budget", default=None,
                        help="a task's memory budget, as --memory-budget takes it")
    args = parser.parse_args()

    from dtri.api import Session
    from dtri.bench import (
        _materialize,
        canonical_edges,
        device_name,
        generated_graph,
        is_spec,
        run_peer,
    )
    from dtri.input.frames import as_edge_frame
    from dtri.kernels.dispatch import column_to_array
    from dtri.options import Options

    with Session(Options(backend="gpu", workers=1,
                         memory_budget=args.memory_budget)) as session:
        for graph in args.graphs:
            source = generated_graph(graph, seed=0) if is_spec(graph) else graph
            persisted = _materialize(as_edge_frame(source, "gpu"), session.runtime)
            runs = [run_one(session, persisted, "auto", "auto", args.repeat)]
            for orientation in args.orientations:
                for order in args.orders:
                    runs.append(run_one(session, persisted, orientation, order, args.repeat))
            counts = {run["triangles"] for run in runs}
            record: dict[str, Any] = {
                "graph": graph, "device": device_name("gpu"), "commit": commit(),
                "repeat": args.repeat, "triangles": runs[0]["triangles"],
                "identical_across_runs": len(counts) == 1, "runs": runs, "peers": {}}
            published = published_count(graph)
            if published is not None:
                record["published_triangles"] = published
                record["matches_published"] = published == record["triangles"]
            if args.peer != "none":
                table = persisted.compute()
                persisted = None
                edges = canonical_edges(column_to_array(table["src"]),
                                        column_to_array(table["dst"]))
                del table
                report = run_peer(args.peer, edges, args.repeat)
                report["agrees"] = report.get("triangles") == record["triangles"]
                record["peers"][args.peer] = report
                del edges
            persisted = None
            emit(to_schema("orientation", record, command=command_line()), None)


if __name__ == "__main__":
    main()

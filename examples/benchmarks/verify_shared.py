"""Every analytic of dtri against NetworkX on every shared SNAP graph; one JSON line per graph.

For each graph of ../shared/data/MANIFEST.tsv: the per-vertex triangles (their sum must be 3 ×
the published count, and each vertex's must equal ``networkx.triangles``), the clustering of
every vertex, the average clustering and the transitivity (within 1e-12 of NetworkX's), the
support of every edge (the common neighbours of its ends), and the k-truss for every k from 3
until it is empty: ``dtri``'s ``k_truss(k)``, taken of its own ``(k - 1)``-truss, against
``networkx.k_truss`` taken the same way, edge for edge and vertex for vertex; the truss numbers
must agree with those k-trusses. The CI tests run the same checks on the smaller graphs (the
full k range of NetworkX's k-truss takes minutes on the larger ones); this script runs them on
all of them.

Run from the repository root: ``python examples/benchmarks/verify_shared.py > out.jsonl``
(``--backend gpu`` on a GPU host). Each line in the schema of ``schema.py`` (family
``verify-shared``: ``seconds`` is every check of the graph, NetworkX's included).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import math
import sys
import time
from pathlib import Path

import networkx as nx
from schema import command_line, commit, emit, to_schema

import dtri

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def networkx_graph(path: Path) -> nx.Graph:
    graph = nx.Graph()
    with gzip.open(path, "rt") as handle:
        for line in handle:
            fields = line.split()
            if fields and not fields[0].startswith("#"):
                u, v = int(fields[0]), int(fields[1])
                graph.add_nodes_from((u, v))
                if u != v:
                    graph.add_edge(u, v)
    return graph


def edges_of(frame) -> set[tuple[int, int]]:
    frame = frame.to_pandas() if hasattr(frame, "to_pandas") else frame
    return set(zip(frame["u"].tolist(), frame["v"].tolist(), strict=True))


def check(row: dict[str, str], backend: str) -> dict:
    path = SHARED / row["file"]
    started = time.perf_counter()
    graph = networkx_graph(path)
    report: dict = {"graph": row["name"], "backend": backend, "edges": graph.number_of_edges(),
                    "commit": commit()}
    with dtri.prepare(path, backend=backend, scheduler="synchronous") as g:
        triangles = g.triangles().compute()
        triangles = triangles.to_pandas() if hasattr(triangles, "to_pandas") else triangles
        expected = nx.triangles(graph)
        report["triangles_sum_is_3x_published"] = int(triangles.sum()) == 3 * int(
            row["triangles"])
        report["triangles_equal"] = triangles.to_dict() == expected
        clustering = g.clustering().compute()
        clustering = clustering.to_pandas() if hasattr(clustering, "to_pandas") else clustering
        theirs = nx.clustering(graph)
        report["clustering_max_difference"] = max(abs(clustering[v] - c)
                                                  for v, c in theirs.items())
        report["average_clustering_difference"] = abs(g.average_clustering()
                                                      - nx.average_clustering(graph))
        report["transitivity_difference"] = abs(g.transitivity() - nx.transitivity(graph))
        support = g.edge_support().compute()
        support = support.to_pandas() if hasattr(support, "to_pandas") else support
        report["support_equal"] = all(
            s == len(set(graph[u]) & set(graph[v]))
            for u, v, s in zip(support.u.tolist(), support.v.tolist(), support.support.tolist(),
                               strict=True)) and len(support) == graph.number_of_edges()
        numbers = g.truss_numbers().compute()
        numbers = numbers.to_pandas() if hasattr(numbers, "to_pandas") else numbers
        truss_of = {(u, v): t for u, v, t in zip(numbers.u.tolist(), numbers.v.tolist(),
                                                  numbers.truss.tolist(), strict=True)}
        ours, theirs_k, k, agree = g, graph, 3, True
        while True:
            theirs_k = nx.k_truss(theirs_k, k)
            ours = ours.k_truss(k)
            mine = edges_of(ours.edge_support().compute())
            expected_edges = {(min(u, v), max(u, v)) for u, v in theirs_k.edges()}
            vertices = set(ours.triangles().compute().index.to_numpy().tolist())
            agree &= mine == expected_edges and vertices == set(theirs_k.nodes())
            agree &= mine == {e for e, t in truss_of.items() if t >= k}
            if not expected_edges:
                break
            k += 1
        report["k_truss_equal_for_every_k"] = bool(agree)
        report["k_max"] = k - 1
    report["seconds"] = round(time.perf_counter() - started, 3)
    report["exact"] = bool(report["triangles_sum_is_3x_published"] and report["triangles_equal"]
                           and report["support_equal"] and report["k_truss_equal_for_every_k"]
                           and max(report["clustering_max_difference"],
                                   report["average_clustering_difference"],
                                   report["transitivity_difference"]) <= 1e-12)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("graphs", nargs="*", help="names from MANIFEST.tsv (default: all)")
    args = parser.parse_args()
    with (SHARED / "MANIFEST.tsv").open() as handle:
        rows = [r for r in csv.DictReader(handle, delimiter="\t")
                if not args.graphs or r["name"] in args.graphs]
    failed = False
    for row in rows:
        report = check(row, args.backend)
        failed |= not report["exact"]
        emit(to_schema("verify-shared", {k: (v if not isinstance(v, float) or math.isfinite(v)
                                             else None) for k, v in report.items()},
                       command=command_line()), None)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

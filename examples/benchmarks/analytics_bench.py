"""dtri's analytics against peers, same run, same edges; one JSON line per graph (and k).

What is timed, best of ``--repeat``, from the same simple edge list (dense ids, ``u < v``, no
duplicates) already on the workers for dtri and in device (or host) memory for the peers:

* ``count``: ``dtri.prepare`` + ``count_triangles()``; ``triangles``: ``dtri.prepare`` +
  ``triangles()`` (the per-vertex counts persisted on the workers); ``clustering`` likewise;
  ``support``: ``dtri.prepare`` + ``edge_support()``;
* ``reuse``: on one prepared graph, after ``triangles()``: ``clustering()``,
  ``transitivity()`` and ``edge_support()`` alone, each against a fresh prepare plus itself;
* ``ktruss`` (``--k``): ``dtri.prepare`` + ``k_truss(k)``;
* peers: ``pylibcugraph`` (``SGGraph`` build + ``triangle_count``, per vertex; build +
  ``k_truss_subgraph``) on the GPU, ``networkit`` (``Graph.addEdges`` +
  ``LocalClusteringCoefficient``, on every core) on the CPU. Each peer's result is compared
  with dtri's: the per-vertex counts, the clustering coefficients (within 1e-12), the k-truss
  edge for edge.

Run from the repository root, e.g.
``python examples/benchmarks/analytics_bench.py --backend gpu rmat:24``,
``python examples/benchmarks/analytics_bench.py --backend gpu --k 3 8 32 rmat:22`` or
``python examples/benchmarks/analytics_bench.py --backend cpu --workers 2 rmat:18``.
Each line in the schema of ``schema.py`` (family ``analytics``: ``seconds`` is the per-vertex
triangles'; with ``--k``, ``k-truss``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import dask
import numpy as np
from schema import command_line, commit, emit, to_schema

import dtri
from dtri.bench import canonical_edges, device_name
from dtri.input.generate import from_spec
from dtri.kernels.dispatch import column_to_array, to_host


def best(repeat: int, work: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of ``repeat`` runs of ``work`` and the last run's value."""
    fastest, value = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        value = work()
        fastest = min(fastest, time.perf_counter() - started)
    return round(fastest, 6), value


def host_frame(frame: Any) -> Any:
    return frame.to_pandas() if hasattr(frame, "to_pandas") else frame


def edge_frame(edges: Any, backend: str) -> Any:
    """The canonical edges as a Dask frame of the backend's partitions, persisted."""
    import dask.dataframe as dd
    import pandas as pd

    frame = pd.DataFrame({"src": to_host(edges.src), "dst": to_host(edges.dst)})
    parts = max(1, len(frame) // (1 << 24))
    collection = dd.from_pandas(frame, npartitions=parts, sort=False)
    if backend == "gpu":
        collection = collection.to_backend("cudf")
    (persisted,) = dask.persist(collection)
    from distributed import default_client, wait

    wait(persisted)
    del frame
    default_client()  # the session's
    return persisted


# ------------------------------------------------------------------------------------ peers

def plc_graph(edges: Any) -> tuple[Any, Any]:
    import cudf  # noqa: F401  (cuDF first: it loads the CUDA libraries pylibcugraph expects)
    import cupy
    import pylibcugraph as plc

    src = cupy.asarray(edges.src).astype(cupy.int32)
    dst = cupy.asarray(edges.dst).astype(cupy.int32)
    both_src, both_dst = cupy.concatenate([src, dst]), cupy.concatenate([dst, src])
    handle = plc.ResourceHandle()
    properties = plc.GraphProperties(is_symmetric=True, is_multigraph=False)
    return handle, plc.SGGraph(handle, properties, both_src, both_dst, weight_array=None,
                               store_transposed=False, renumber=True, do_expensive_check=False)


def plc_triangles(edges: Any) -> Any:
    """pylibcugraph: build + per-vertex triangle counts, ordered by vertex."""
    import cupy
    import pylibcugraph as plc

    handle, graph = plc_graph(edges)
    vertices, counts = plc.triangle_count(handle, graph, None, False)
    order = cupy.argsort(vertices)
    result = counts[order].astype(cupy.int64), vertices[order]
    cupy.cuda.runtime.deviceSynchronize()
    return result


def plc_ktruss(edges: Any, k: int) -> Any:
    """pylibcugraph: build + the k-truss's edges as sorted keys ``u << 32 | v``, ``u < v``."""
    import cupy
    import pylibcugraph as plc

    handle, graph = plc_graph(edges)
    src, dst, _, _ = plc.k_truss_subgraph(handle, graph, k, False)
    src, dst = src.astype(cupy.int64), dst.astype(cupy.int64)
    keep = src < dst
    keys = cupy.sort((src[keep] << 32) | dst[keep])
    cupy.cuda.runtime.deviceSynchronize()
    return keys


def networkit_clustering(edges: Any) -> Any:
    """NetworKit: build + local clustering coefficients (turbo), on every core."""
    import networkit

    src, dst = edges.host()
    graph = networkit.graph.Graph(edges.vertices)
    graph.addEdges((src.astype(np.uint64), dst.astype(np.uint64)))
    clustering = networkit.centrality.LocalClusteringCoefficient(graph, turbo=True)
    clustering.run()
    return np.asarray(clustering.scores())


# ------------------------------------------------------------------------------------ dtri

def run_graph(spec: str, args: argparse.Namespace, session: Any) -> list[dict[str, Any]]:
    backend = session.runtime.backend
    generated = from_spec(spec, seed=args.seed, backend=backend).compute()
    edges = canonical_edges(column_to_array(generated["src"]), column_to_array(generated["dst"]))
    del generated
    frame = edge_frame(edges, backend)
    base = {"graph": spec, "seed": args.seed, "n": edges.vertices, "m": edges.edges,
            "device": device_name(backend), "backend": backend,
            "workers": session.runtime.workers, "repeat": args.repeat, "commit": commit()}

    def fresh(analytic: Callable[[Any], Any]) -> Callable[[], Any]:
        """A fresh prepare and ``analytic``; nothing of it is kept (a result held from one
        run would let the next find its tasks' keys computed already)."""
        def run() -> Any:
            with dtri.prepare(frame, session=session) as graph:
                value = analytic(graph)
            return value if isinstance(value, int | float) else None
        return run

    if args.k:
        return [ktruss_record(base, frame, edges, session, k, args) for k in args.k]

    record = dict(base)
    seconds: dict[str, float] = {}
    seconds["count"], triangles = best(args.repeat, fresh(lambda g: g.count_triangles()))
    # timed: the results persisted on the workers; then fetched once, untimed, to check them
    seconds["triangles"], _ = best(args.repeat, fresh(lambda g: g.triangles()))
    seconds["clustering"], _ = best(args.repeat, fresh(lambda g: g.clustering()))
    seconds["support"], _ = best(args.repeat, fresh(lambda g: g.edge_support()))
    with dtri.prepare(frame, session=session) as graph:
        per_vertex = host_frame(graph.triangles().compute()).sort_index()
        clustering = host_frame(graph.clustering().compute()).sort_index()
    seconds["transitivity"], _ = best(args.repeat, fresh(lambda g: g.transitivity()))
    record["triangles"] = triangles
    record["per_vertex_sum_is_3x_count"] = int(per_vertex.sum()) == 3 * triangles
    reuse = {}
    for _ in range(args.repeat):
        with dtri.prepare(frame, session=session) as graph:
            graph.triangles()
            for name, analytic in (("clustering", lambda g: g.clustering()),
                                   ("transitivity", lambda g: g.transitivity()),
                                   ("support", lambda g: g.edge_support())):
                started = time.perf_counter()
                analytic(graph)
                elapsed = time.perf_counter() - started
                reuse[name] = round(min(reuse.get(name, float("inf")), elapsed), 6)
    record["dtri"] = {"seconds": seconds,
                      "triangles_over_count": round(seconds["triangles"] / seconds["count"], 3),
                      "reuse_seconds": reuse,
                      "reuse_over_fresh": {name: round(reuse[name] / seconds[name], 3)
                                           for name in reuse}}
    record["peers"] = {}
    if backend == "gpu" and "pylibcugraph" in args.peers:
        plc_seconds, (counts, vertices) = best(args.repeat, lambda: plc_triangles(edges))
        mine = per_vertex.to_numpy()
        record["peers"]["pylibcugraph"] = {
            "method": "SGGraph build + triangle_count (per vertex)", "seconds": plc_seconds,
            "agrees": bool(to_host(vertices).tolist() == per_vertex.index.tolist()
                           and (to_host(counts) == mine).all()),
            "dtri_triangles_over_peer": round(seconds["triangles"] / plc_seconds, 3)}
    if backend == "cpu" and "networkit" in args.peers:
        nk_seconds, scores = best(args.repeat, lambda: networkit_clustering(edges))
        difference = float(np.max(np.abs(scores[clustering.index.to_numpy()]
                                          - clustering.to_numpy()))) if len(scores) else 0.0
        record["peers"]["networkit"] = {
            "method": "Graph.addEdges + LocalClusteringCoefficient(turbo)",
            "seconds": nk_seconds, "threads": os.cpu_count(),
            "max_clustering_difference": difference, "agrees": difference <= 1e-12,
            "dtri_triangles_over_peer": round(seconds["triangles"] / nk_seconds, 3),
            "dtri_clustering_over_peer": round(seconds["clustering"] / nk_seconds, 3)}
    return [record]


def ktruss_record(base: dict, frame: Any, edges: Any, session: Any, k: int,
                  args: argparse.Namespace) -> dict[str, Any]:
    def run() -> None:
        with dtri.prepare(frame, session=session) as graph:
            graph.k_truss(k)  # persisted on the workers

    seconds, _ = best(args.repeat, run)
    with dtri.prepare(frame, session=session) as graph:  # untimed: its edges, to check
        found = host_frame(graph.k_truss(k).edge_support().compute())
        keys = np.sort((found["u"].to_numpy() << 32) | found["v"].to_numpy())
    record = {**base, "k": k, "truss_edges": len(keys),
              "dtri": {"seconds": {"k_truss": seconds}}, "peers": {}}
    if session.runtime.backend == "gpu" and "pylibcugraph" in args.peers:
        plc_seconds, theirs = best(args.repeat, lambda: plc_ktruss(edges, k))
        record["peers"]["pylibcugraph"] = {
            "method": "SGGraph build + k_truss_subgraph", "seconds": plc_seconds,
            "truss_edges": len(theirs),
            "agrees": bool(len(theirs) == len(keys) and (to_host(theirs) == keys).all()),
            "dtri_over_peer": round(seconds / plc_seconds, 3)}
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("graphs", nargs="+", help="generator specs, e.g. rmat:24")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, nargs="*", help="k-truss of these k instead")
    parser.add_argument("--peers", default="pylibcugraph,networkit")
    args = parser.parse_args()
    failed = False
    with dtri.Session(backend=args.backend, workers=args.workers) as session:
        session.open()  # without --workers: in this process
        for spec in args.graphs:
            for record in run_graph(spec, args, session):
                failed |= any(peer.get("agrees") is False for peer in record["peers"].values())
                failed |= record.get("per_vertex_sum_is_3x_count") is False
                emit(to_schema("analytics", record, command=command_line()), None)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

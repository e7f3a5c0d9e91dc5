"""dtri on the CPU in this process against SuiteSparse:GraphBLAS, graphblas-algorithms and
NetworKit, same process, same arrays (issue 43: dense neighbourhoods).

    python examples/benchmarks/dense_cpu.py --out F.jsonl
    python examples/benchmarks/dense_cpu.py --out F.jsonl --analyses count --graphs rmat:16

For each graph the simple undirected edges (dense ids, ``u < v``, each once: NumPy, untimed)
are an ``(m, 2)`` int64 array that every tool gets; each measurement is the best of
``--repeat`` rounds, and in each round every tool runs once, one after the other, so that a
busy machine slows them alike. The analyses (one JSON line each, ``seconds`` dtri's):

* ``count``: ``dtri.count(edges, backend="cpu")``; ``dtri-before``: the same with the choices
  dtri made before the marks kernel (:func:`dtri_before`); GraphBLAS (python-graphblas):
  ``Matrix.from_coo`` of both directions, ``tril``, ``C<L> = L plus.pair L``, ``reduce``
  (``dtri.bench``'s peer); NetworKit: ``Graph.addEdges`` + ``TriangleEdgeScore`` / 3.
* ``triangles``: ``dtri.prepare(edges, backend="cpu")`` + ``triangles().compute()``;
  graphblas-algorithms: the symmetric ``Matrix.from_coo`` + ``Graph`` + ``triangles``;
  NetworKit: ``Graph.addEdges`` + ``LocalClusteringCoefficient(turbo=True)`` (its triangles
  are inside the coefficients; it has no per-vertex count of its own).
* ``clustering``: ``dtri.prepare`` + ``clustering().compute()``; graphblas-algorithms'
  ``clustering``; NetworKit's ``LocalClusteringCoefficient``. Every result is compared with
  dtri's, vertex by vertex (clustering within 1e-12).
* ``file``: ``dtri count FILE`` in this process (the CLI's ``main``, its printing included),
  against each peer's read of the same plain-text file (pandas ``read_csv``, the ids made
  dense with ``np.unique``) plus its count. The ``.gz`` files are unpacked once, untimed.

Before the first round each tool runs once, and numba's compiled kernels are loaded first (as
in a process that has run any analytic, or whose NumPy join has joined 4 M wedges:
``dtri.analytics.plan.CPU_INTERSECT_MIN_WEDGES``); a fresh process's first count is
``cpu_cold.py``'s. Every line is in the schema of ``schema.py`` (family ``schema``); its
``detail.load_average`` is the machine's one-minute load average before and after the
measurement (above the core count: other processes shared the cores, and the figures are
the best of what they left).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from schema import command_line, emit, record

SHARED = Path(os.environ.get("DTRI_DATA",
                            Path(__file__).resolve().parents[3] / "shared" / "data"))
"""The shared SNAP graphs (``--data``, else ``$DTRI_DATA``, else beside the checkout)."""
GRAPHS = ("facebook_combined", "wiki-Vote", "email-Eu-core", "ca-GrQc", "ca-CondMat",
          "rmat:16", "rmat:18")
"""The issue's table: five shared SNAP graphs and R-MAT 16 and 18 (seed 1)."""
FILES = ("wiki-Vote", "ca-CondMat", "facebook_combined", "p2p-Gnutella24", "ca-HepTh")
"""The five largest shared graphs, by edges."""
ANALYSES = ("count", "triangles", "clustering", "file")


def canonical(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, int]:
    """The simple undirected graph of ``src``, ``dst``: ``(m, 2)`` dense ids ``u < v``, each
    edge once, and the vertex count."""
    ids, dense = np.unique(np.concatenate([src, dst]), return_inverse=True)
    u, v = dense[: src.shape[0]], dense[src.shape[0]:]
    keep = u != v
    keys = np.unique((np.minimum(u, v)[keep] << 32) | np.maximum(u, v)[keep])
    return np.stack([keys >> 32, keys & 0xFFFFFFFF], axis=1).astype(np.int64), len(ids)


def graph_edges(name: str, data: Path) -> tuple[np.ndarray, int]:
    """The canonical edges of a shared graph (by name, in ``data``) or an R-MAT spec (seed
    1)."""
    if name.startswith("rmat:"):
        from dtri.input.generate import from_spec

        frame = from_spec(name, seed=1, backend="cpu").compute()
        return canonical(frame["src"].to_numpy(), frame["dst"].to_numpy())
    pairs = read_pairs(data / f"{name}.txt.gz")
    return canonical(pairs[:, 0], pairs[:, 1])


def read_pairs(path: Path | str) -> np.ndarray:
    """An edge-list text file's first two columns (``#`` comments), as a peer reads it."""
    import pandas as pd

    frame = pd.read_csv(path, sep=r"\s+", comment="#", header=None, usecols=[0, 1],
                        dtype=np.int64)
    return frame.to_numpy()


# ------------------------------------------------------------------------------ the peers

def graphblas_count(edges: np.ndarray, vertices: int) -> int:
    from dtri.bench import PEERS, CanonicalEdges

    peer = PEERS["graphblas"]
    return peer.run(peer.prepare(CanonicalEdges(edges[:, 0], edges[:, 1], vertices)))


def networkit_graph(edges: np.ndarray, vertices: int) -> Any:
    import networkit

    graph = networkit.graph.Graph(vertices)
    graph.addEdges((edges[:, 0].astype(np.uint64), edges[:, 1].astype(np.uint64)))
    return graph


def networkit_count(edges: np.ndarray, vertices: int) -> int:
    import networkit

    graph = networkit_graph(edges, vertices)
    graph.indexEdges()
    score = networkit.sparsification.TriangleEdgeScore(graph)
    score.run()
    return int(sum(score.scores())) // 3


def networkit_clustering(edges: np.ndarray, vertices: int) -> np.ndarray:
    import networkit

    clustering = networkit.centrality.LocalClusteringCoefficient(
        networkit_graph(edges, vertices), turbo=True)
    clustering.run()
    return np.asarray(clustering.scores())


def ga_graph(edges: np.ndarray, vertices: int) -> Any:
    import graphblas
    import graphblas_algorithms as ga

    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    columns = np.concatenate([edges[:, 1], edges[:, 0]])
    return ga.Graph(graphblas.Matrix.from_coo(rows, columns, True, dtype=bool, nrows=vertices,
                                              ncols=vertices))


def dense_vector(vector: Any, vertices: int, dtype: Any) -> np.ndarray:
    """A GraphBLAS vector as a dense NumPy array (absent entries 0)."""
    indices, values = vector.to_coo()
    out = np.zeros(vertices, dtype=dtype)
    out[indices] = values
    return out


def ga_triangles(edges: np.ndarray, vertices: int) -> np.ndarray:
    from graphblas_algorithms.algorithms import triangles

    return dense_vector(triangles(ga_graph(edges, vertices)), vertices, np.int64)


def ga_clustering(edges: np.ndarray, vertices: int) -> np.ndarray:
    from graphblas_algorithms.algorithms import clustering

    return dense_vector(clustering(ga_graph(edges, vertices)), vertices, np.float64)


def file_peer(count: Callable[[np.ndarray, int], int]) -> Callable[[str], int]:
    """A peer end to end: its read of the file, dense ids, its count."""
    def run(path: str) -> int:
        pairs = read_pairs(path)
        edges, vertices = canonical(pairs[:, 0], pairs[:, 1])
        return count(edges, vertices)
    return run


# ------------------------------------------------------------------------------ dtri

def dtri_count(edges: np.ndarray) -> tuple[int, dict]:
    import dtri

    result = dtri.count(edges, backend="cpu")
    return result.triangles, {"seconds": result.seconds, "join": result.join,
                              "kernel": result.plan.get("kernel")}


def dtri_before(edges: np.ndarray) -> Callable[[], int]:
    """dtri's count as it chose before the marks kernel, in the same process: the NumPy
    wedges join up to ``CPU_INTERSECT_MIN_WEDGES`` wedges (a process that had not loaded
    numba's kernels, as no count then did), else the fused join's ``hash`` kernel."""
    import dask

    import dtri
    from dtri.analytics.plan import CPU_INTERSECT_MIN_WEDGES

    wedges = dtri.count(edges, backend="cpu").wedges
    join = "wedges" if wedges <= CPU_INTERSECT_MIN_WEDGES else "intersect"

    def run() -> int:
        with dask.config.set({"dtri.cpu-kernel": "hash"}):
            return dtri.count(edges, backend="cpu", join=join).triangles
    return run


def dtri_per_vertex(analytic: str) -> Callable[[np.ndarray], Any]:
    def run(edges: np.ndarray) -> Any:
        import dtri

        with dtri.prepare(edges, backend="cpu") as graph:
            series = getattr(graph, analytic)().compute()
        return series
    return run


def dtri_file(path: str) -> int:
    """``dtri count PATH`` in this process: the CLI's ``main``, its output captured."""
    from dtri.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["count", "--backend", "cpu", path], standalone_mode=False)
    line = next(row for row in out.getvalue().splitlines() if row.startswith("triangles"))
    return int(line.split()[1].replace(",", ""))


def rounds(tools: dict[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[float, Any]]:
    """Each tool once untimed, then ``repeat`` rounds of each tool once: its best seconds and
    its last result."""
    results = {name: (float("inf"), tool()) for name, tool in tools.items()}
    for _ in range(repeat):
        for name, tool in tools.items():
            started = time.perf_counter()
            value = tool()
            seconds = time.perf_counter() - started
            results[name] = (min(results[name][0], seconds), value)
    return results


def agrees(name: str, analysis: str, ours: Any, theirs: Any, vertices: int) -> bool:
    if analysis in ("count", "file"):
        return int(ours) == int(theirs)
    mine = np.zeros(vertices, dtype=np.float64)
    mine[ours.index.to_numpy()] = ours.to_numpy()
    if analysis == "triangles" and name == "networkit":
        return True  # NetworKit's coefficients, compared under clustering
    return bool(np.allclose(mine, theirs, rtol=0, atol=1e-12))


def measure(graph: str, analysis: str, edges: np.ndarray, vertices: int, repeat: int,
            path: str | None = None) -> dict[str, Any]:
    if analysis == "count":
        tools = {"dtri": lambda: dtri_count(edges),
                 "dtri-before": dtri_before(edges),
                 "graphblas": lambda: graphblas_count(edges, vertices),
                 "networkit": lambda: networkit_count(edges, vertices)}
    elif analysis == "file":
        tools = {"dtri": lambda: dtri_file(path),
                 "graphblas": lambda: file_peer(graphblas_count)(path),
                 "networkit": lambda: file_peer(networkit_count)(path)}
    else:
        peer = ga_triangles if analysis == "triangles" else ga_clustering
        tools = {"dtri": lambda: dtri_per_vertex(analysis)(edges),
                 "graphblas-algorithms": lambda: peer(edges, vertices),
                 "networkit": lambda: networkit_clustering(edges, vertices)}
    load_before = os.getloadavg()[0]
    found = rounds(tools, repeat)
    seconds, ours = found.pop("dtri")
    detail: dict[str, Any] = {"edges": int(edges.shape[0]), "vertices": vertices,
                              "repeat": repeat,
                              "load_average": [round(load_before, 2),
                                               round(os.getloadavg()[0], 2)]}
    triangles = None
    if analysis == "count":
        triangles, detail["dtri"] = ours
        ours = triangles
    elif analysis == "file":
        triangles = ours
        detail["file"] = Path(path).name
    else:
        triangles = int(ours.sum()) // 3 if analysis == "triangles" else None
    peers = {}
    for name, (best, theirs) in found.items():
        peers[name] = {"seconds": round(best, 6), "ratio": round(seconds / best, 3),
                       "agrees": agrees(name, analysis, ours, theirs, vertices)}
        if analysis in ("count", "file"):
            peers[name]["triangles"] = int(theirs)
    return record(benchmark=f"dense-cpu-{analysis}", graph=graph, backend="cpu",
                  command=command_line(), seconds=round(seconds, 6), triangles=triangles,
                  peers=peers, detail=detail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", nargs="+", default=list(GRAPHS))
    parser.add_argument("--files", nargs="+", default=list(FILES))
    parser.add_argument("--analyses", nargs="+", default=list(ANALYSES), choices=ANALYSES)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", type=Path, default=SHARED,
                        help="the folder of the shared SNAP graphs")
    parser.add_argument("--out", help="also append the lines to this file")
    args = parser.parse_args()
    import dtri.kernels.intersect.cpu  # noqa: F401  (numba's kernels loaded: see the docstring)

    for graph in args.graphs:
        edges, vertices = graph_edges(graph, args.data)
        for analysis in args.analyses:
            if analysis != "file":
                emit(measure(graph, analysis, edges, vertices, args.repeat), args.out)
    if "file" in args.analyses:
        folder = Path(tempfile.mkdtemp(prefix="dtri-dense-cpu-"))
        try:
            for name in args.files:
                path = folder / f"{name}.txt"
                with gzip.open(args.data / f"{name}.txt.gz", "rb") as packed, \
                        open(path, "wb") as plain:
                    shutil.copyfileobj(packed, plain)
                edges, vertices = graph_edges(name, args.data)
                emit(measure(name, "file", edges, vertices, args.repeat, str(path)), args.out)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

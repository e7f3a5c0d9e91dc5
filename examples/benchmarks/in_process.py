"""In-process runs (issue 29): what one person on one GPU waits for, with pylibcugraph in the
same process on the same edges.

    python examples/benchmarks/in_process.py cli --out F.jsonl examples/karate.txt
    python examples/benchmarks/in_process.py session --out F.jsonl examples/karate.txt G.txt.gz
    python examples/benchmarks/in_process.py nx --out F.jsonl G.txt.gz
    python examples/benchmarks/in_process.py joins --out F.jsonl examples/karate.txt G.txt.gz
    python examples/benchmarks/in_process.py sizes --out F.jsonl --scales 6-18
    python examples/benchmarks/in_process.py placement --out F.jsonl --runs 2 rmat:24 rmat:26

* ``cli``: ``dtri count --json PATH`` in a new process, per backend: the first process with
  empty kernel caches (``CUPY_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` in a new directory: the
  first run ever on a machine), then ``--runs`` more with the caches it filled.
  ``seconds`` is the command's wall time; ``stage_seconds`` its own, ``compile`` among them.
* ``session``: ``dtri.count`` with every default (the one-liner: ``backend="auto"``, no
  session), then inside one open ``dtri.Session`` on the GPU, the median seconds per call of
  ``dtri.count`` (prepare and count), per-vertex ``triangles`` and ``clustering`` (prepare,
  the analytic, ``.compute()``), from the graph's edges on the device (each undirected edge
  once), and of a count from the file; pylibcugraph from the same edges (both directions, as
  it takes a symmetric graph): its graph build and ``triangle_count``, and for clustering
  the degrees and the division too.
* ``nx``: ``nx.triangles`` and ``nx.clustering`` with ``backend="dtri"`` on the GPU on a
  ``networkx.Graph`` of the file: the first call, then the median of the next ones (NetworkX
  caches the converted graph, dtri the prepared graph and the triangles on it), and the
  same with NetworkX's conversion cache off (every call converts and prepares). Every result
  is compared with NetworkX's own.
* ``joins``: ``dtri.count`` in one GPU session with the wedges join and with the fused one,
  alternated call by call: which ``join="auto"`` should take for small graphs.
* ``sizes``: ``dtri.count`` of an R-MAT edge array in host memory (as a file is read) on the
  CPU and on the GPU, both in this process: where the GPU starts to win decides
  ``dtri.gpu-min-edges`` (``backend="auto"``).
* ``placement``: ``dtri count --generate SPEC --backend gpu --json`` in a new process where
  dtri places it (in this process when the current GPU holds the graph), against the same
  command with ``--workers 1`` (a one-worker local cluster), alternated ``--runs`` times,
  the best wall time of each (``peers.one-worker-cluster``).

Every line has the one schema of ``schema.py``: ``benchmark``, ``graph``, ``device``,
``backend``, ``commit``, ``command``, ``seconds``, ``stage_seconds``, ``triangles``, ``peers``
(each peer's ``seconds``, ``triangles``, ``agrees``) and ``detail`` (what else the line needs).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from schema import emit, record  # this folder's one schema: every script writes its lines so


def synchronize() -> None:
    import cupy

    cupy.cuda.runtime.deviceSynchronize()


def median_seconds(call: Callable[[], Any], repeat: int) -> tuple[float, Any, list[float]]:
    """The median wall seconds of ``repeat`` calls (the GPU's work finished in each), the
    last result and every time."""
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = call()
        synchronize()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result, [round(t, 6) for t in times]


def canonical_edges(path: str) -> np.ndarray:
    """The simple undirected graph of an edge file: each edge once, ``u < v`` (read untimed
    through dtri's own reader, on the CPU)."""
    import dtri

    with dtri.prepare(path, backend="cpu") as graph:
        frame = graph.edge_support().compute()
    return np.stack([frame["u"].to_numpy(), frame["v"].to_numpy()], axis=1).astype(np.int64)


def graph_name(path: str) -> str:
    return Path(path).name.split(".")[0]


# ------------------------------------------------------------------------------- cli

def run_cli(paths: list[str], backends: list[str], runs: int, out: str | None) -> None:
    for backend in backends:
        caches = tempfile.mkdtemp(prefix="dtri-kernel-cache-")
        env = dict(os.environ, CUPY_CACHE_DIR=f"{caches}/cupy", NUMBA_CACHE_DIR=f"{caches}/numba")
        for path in paths:
            for run in range(runs + 1):
                command = ["dtri", "count", "--backend", backend, "--json", path]
                started = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "dtri", *command[1:]], env=env,
                                      capture_output=True, text=True, check=False)
                seconds = time.perf_counter() - started
                result = json.loads(done.stdout) if done.returncode == 0 else {}
                emit(record(benchmark="cli-new-process", graph=graph_name(path),
                            backend=backend, command=" ".join(command),
                            seconds=round(seconds, 4), stage_seconds=result.get("seconds"),
                            triangles=result.get("triangles"),
                            detail={"kernel_cache": "empty" if run == 0 and path == paths[0]
                                    else "filled", "run": run, "rc": done.returncode,
                                    "placement": result.get("placement"),
                                    "dask_config": {k: v for k, v in os.environ.items()
                                                    if k.startswith("DASK_DTRI__")},
                                    "error": done.stderr.strip().splitlines()[-1:]}), out)


# ------------------------------------------------------------------------------- placement

def run_placement(graphs: list[str], runs: int, out: str | None) -> None:
    """``dtri count --generate G --backend gpu --json`` in a new process as dtri places it
    by default (in this process where the current GPU holds the graph), against the same
    command with ``--workers 1`` (a one-worker local cluster), alternated ``runs`` times; the
    best wall time of each."""
    for graph in graphs:
        command = ["dtri", "count", "--generate", graph, "--backend", "gpu", "--json"]
        walls: dict[str, list[tuple[float, dict[str, Any]]]] = {"default": [], "cluster": []}
        for _ in range(runs):
            for name, extra in (("default", []), ("cluster", ["--workers", "1"])):
                started = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "dtri", *command[1:], *extra],
                                      capture_output=True, text=True, check=False)
                seconds = time.perf_counter() - started
                if done.returncode != 0:
                    raise SystemExit(f"{' '.join([*command, *extra])}: "
                                     f"{done.stderr.strip()[-2000:]}")
                walls[name].append((seconds, json.loads(done.stdout)))
        (seconds, ours), (theirs_seconds, theirs) = (min(walls[name], key=lambda w: w[0])
                                                     for name in ("default", "cluster"))
        emit(record(benchmark="placement", graph=graph, backend="gpu",
                    command=" ".join(command), seconds=round(seconds, 4),
                    stage_seconds=ours.get("seconds"), triangles=ours.get("triangles"),
                    peers={"one-worker-cluster": {
                        "seconds": round(theirs_seconds, 4),
                        "triangles": theirs.get("triangles"),
                        "agrees": theirs.get("triangles") == ours.get("triangles"),
                        "stage_seconds": theirs.get("seconds"),
                        "command": " ".join([*command, "--workers", "1"])}},
                    detail={"placement": ours.get("placement"),
                            "peer_placement": theirs.get("placement"), "runs": runs,
                            "ratio": round(seconds / theirs_seconds, 4),
                            "walls": [round(w, 4) for w, _ in walls["default"]],
                            "peer_walls": [round(w, 4) for w, _ in walls["cluster"]]}), out)


# ------------------------------------------------------------------------------- session

def pylibcugraph_peer(src: Any, dst: Any) -> Callable[[str], Any]:
    """pylibcugraph on the symmetric graph of ``src < dst``: ``run("count")``, the per-vertex
    counts, or the clustering coefficients (triangle counts, degrees, division)."""
    import cudf  # noqa: F401  (cuDF first: it loads the CUDA libraries pylibcugraph expects)
    import cupy
    import pylibcugraph as plc

    index = cupy.int32
    sym_src = cupy.concatenate([src, dst]).astype(index)
    sym_dst = cupy.concatenate([dst, src]).astype(index)
    handle = plc.ResourceHandle()
    properties = plc.GraphProperties(is_symmetric=True, is_multigraph=False)

    def run(what: str) -> Any:
        graph = plc.SGGraph(handle, properties, sym_src, sym_dst, weight_array=None,
                            store_transposed=False, renumber=True, do_expensive_check=False)
        vertices, counts = plc.triangle_count(handle, graph, None, False)
        if what == "count":
            return int(counts.sum()) // 3
        if what == "triangles":
            return vertices, counts
        # clustering, as cuGraph's Python layer makes it: 2 T / (d (d - 1)), 0 below degree 2
        degree = cupy.bincount(sym_src)[vertices].astype(cupy.float64)
        pairs = degree * (degree - 1)
        return vertices, cupy.where(pairs > 0, 2 * counts / cupy.maximum(pairs, 1), 0.0)

    return run


def run_session(paths: list[str], repeat: int, out: str | None) -> None:
    for path in paths:
        session_graph(path, repeat, out)


def session_graph(path: str, repeat: int, out: str | None) -> None:
    import cupy

    import dtri

    host = canonical_edges(path)
    auto_counts(path, host, repeat, out)
    edges = cupy.asarray(host)
    src, dst = cupy.ascontiguousarray(edges[:, 0]), cupy.ascontiguousarray(edges[:, 1])
    try:
        peer = pylibcugraph_peer(src, dst)
    except ImportError:
        peer = None
    with dtri.Session(backend="gpu") as session:
        started = time.perf_counter()
        first = dtri.count(edges, session=session)
        first_seconds = time.perf_counter() - started
        calls: dict[str, Callable[[], Any]] = {
            "count": lambda: dtri.count(edges, session=session),
            "count-from-file": lambda: dtri.count(path, session=session),
            "triangles": lambda: _analytic(session, edges, "triangles"),
            "clustering": lambda: _analytic(session, edges, "clustering"),
        }
        for what, call in calls.items():
            call()  # its first call compiles what it needs
            seconds, result, times = median_seconds(call, repeat)
            triangles = (result.triangles if hasattr(result, "triangles")
                         else int(result.sum()) // 3 if what == "triangles" else None)
            peers = {}
            if peer is not None and what != "count-from-file":
                peer(what)  # its first call, likewise
                peer_seconds, peer_result, peer_times = median_seconds(
                    functools.partial(peer, what), repeat)
                peers["pylibcugraph"] = {"seconds": round(peer_seconds, 6),
                                         "times": peer_times,
                                         **_agreement(what, result, peer_result)}
            emit(record(benchmark="session-per-call", graph=graph_name(path),
                        backend="gpu", command=f"dtri.{_call_text(what)} in an open "
                        "dtri.Session(backend='gpu')",
                        seconds=round(seconds, 6),
                        stage_seconds=getattr(result, "seconds", None),
                        triangles=triangles, peers=peers,
                        detail={"analytic": what, "repeat": repeat, "times": times,
                                "edges": int(host.shape[0]),
                                "first_call_seconds": round(first_seconds, 4)
                                if what == "count" else None,
                                "placement": first.placement}), out)


def auto_counts(path: str, host: np.ndarray, repeat: int, out: str | None) -> None:
    """The one-liner a user types first, ``dtri.count(...)`` with every default (``auto``
    backend, no session: each call opens and closes its own), from the edges in host memory
    and from the file."""
    import dtri

    for what, edges in (("count(host edges)", host), ("count(path)", path)):
        call = functools.partial(dtri.count, edges)
        call()  # its first call compiles and loads what it needs
        seconds, result, times = median_seconds(call, repeat)
        emit(record(benchmark="one-liner-per-call", graph=graph_name(path),
                    backend=result.backend, command=f"dtri.{what} (backend auto, no session)",
                    seconds=round(seconds, 6), stage_seconds=result.seconds,
                    triangles=result.triangles,
                    detail={"repeat": repeat, "times": times, "edges": int(host.shape[0]),
                            "placement": result.placement}), out)


def _call_text(what: str) -> str:
    return {"count": "count(edges)", "count-from-file": "count(path)",
            "triangles": "prepare(edges).triangles().compute()",
            "clustering": "prepare(edges).clustering().compute()"}[what]


def _analytic(session: Any, edges: Any, what: str) -> Any:
    with session.prepare(edges) as graph:
        series = getattr(graph, what)().compute()
    return series


def _agreement(what: str, ours: Any, theirs: Any) -> dict[str, Any]:
    """Whether pylibcugraph's result equals dtri's (every vertex for the per-vertex ones)."""
    import cupy

    if what in ("count", "count-from-file"):
        return {"triangles": theirs, "agrees": theirs == ours.triangles}
    vertices, values = theirs
    order = cupy.argsort(vertices)
    mine = cupy.zeros(int(vertices.shape[0]), dtype=ours.dtype)
    mine[cupy.searchsorted(vertices[order], ours.index.values)] = ours.values
    values = cupy.asarray(values)[order]
    if what == "triangles":
        return {"triangles": int(values.sum()) // 3, "agrees": bool((mine == values).all())}
    return {"agrees": bool((mine == values).all()),
            "max_abs_difference": float(cupy.abs(mine - values).max())}


# ------------------------------------------------------------------------------- nx

def run_nx(paths: list[str], repeat: int, out: str | None) -> None:
    import networkx as nx

    nx.config.backends.dtri.backend = "gpu"
    nx.config.warnings_to_ignore.add("cache")  # the graph is not changed between calls
    for path in paths:
        host = canonical_edges(path)
        graph = nx.Graph()
        graph.add_edges_from(host.tolist())
        for what in ("triangles", "clustering"):
            func = getattr(nx, what)
            started = time.perf_counter()
            expected = func(graph)
            nx_seconds = time.perf_counter() - started
            for cached in (True, False):
                nx.config.cache_converted_graphs = cached
                graph.__networkx_cache__.clear()
                started = time.perf_counter()
                first = func(graph, backend="dtri")
                first_seconds = time.perf_counter() - started
                seconds, result, times = median_seconds(
                    functools.partial(func, graph, backend="dtri"), repeat)
                emit(record(benchmark="nx-backend-per-call", graph=graph_name(path),
                            backend="gpu", command=f"nx.{what}(G, backend='dtri'), "
                            f"nx.config.cache_converted_graphs={cached}",
                            seconds=round(seconds, 6),
                            triangles=sum(result.values()) // 3 if what == "triangles"
                            else None,
                            peers={"networkx": {"seconds": round(nx_seconds, 4),
                                                "agrees": result == expected
                                                and first == expected}},
                            detail={"analytic": what, "first_call_seconds":
                                    round(first_seconds, 4), "times": times,
                                    "edges": int(host.shape[0])}), out)
            nx.config.cache_converted_graphs = True


# ------------------------------------------------------------------------------- joins

def run_joins(paths: list[str], repeat: int, out: str | None) -> None:
    """``dtri.count`` in one open GPU session with each join, alternated call by call (the
    machine's drift falls on both alike), from the graph's edges on the device."""
    import cupy

    import dtri

    for path in paths:
        edges = cupy.asarray(canonical_edges(path))
        joins = ("wedges", "intersect")
        with dtri.Session(backend="gpu") as session:
            calls = {join: functools.partial(dtri.count, edges, session=session, join=join)
                     for join in joins}
            times: dict[str, list[float]] = {join: [] for join in joins}
            results = {join: call() for join, call in calls.items()}  # compiled, loaded
            for _ in range(repeat):
                for join, call in calls.items():
                    _, results[join], [seconds] = median_seconds(call, 1)
                    times[join].append(seconds)
        for join in joins:
            other = joins[1 - joins.index(join)]
            emit(record(benchmark="join-per-call", graph=graph_name(path), backend="gpu",
                        command=f"dtri.count(edges, join='{join}') in an open "
                        "dtri.Session(backend='gpu')",
                        seconds=round(statistics.median(times[join]), 6),
                        stage_seconds=results[join].seconds,
                        triangles=results[join].triangles,
                        peers={f"dtri-{other}": {
                            "seconds": round(statistics.median(times[other]), 6),
                            "triangles": results[other].triangles,
                            "agrees": results[other].triangles == results[join].triangles}},
                        detail={"repeat": repeat, "times": times[join],
                                "edges": int(edges.shape[0])}), out)


# ------------------------------------------------------------------------------- sizes

def run_sizes(scales: list[int], repeat: int, out: str | None) -> None:
    import dtri
    from dtri.input.generate import generated

    for scale in scales:
        made = generated(f"rmat:{scale}", seed=1)
        src, dst = made.maker().arrays((0, made.edges))
        edges = np.stack([src, dst], axis=1)
        results = {}
        for backend in ("cpu", "gpu"):
            with dtri.Session(backend=backend) as session:
                dtri.count(edges, session=session)  # its first call compiles
                seconds, result, times = median_seconds(
                    functools.partial(dtri.count, edges, session=session), repeat)
            results[backend] = (seconds, result, times)
        for backend, (seconds, result, times) in results.items():
            other = "gpu" if backend == "cpu" else "cpu"
            emit(record(benchmark="count-by-size", graph=f"rmat:{scale}", backend=backend,
                        command=f"dtri.count(host (m, 2) array, backend='{backend}') in an open "
                        "session", seconds=round(seconds, 6), stage_seconds=result.seconds,
                        triangles=result.triangles,
                        peers={f"dtri-{other}": {"seconds": round(results[other][0], 6),
                                                 "triangles": results[other][1].triangles,
                                                 "agrees": results[other][1].triangles
                                                 == result.triangles}},
                        detail={"edges": int(made.edges), "repeat": repeat, "times": times,
                                "placement": result.placement}), out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("cli", "session", "nx", "joins", "sizes", "placement"))
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--out")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3, help="cli: processes after the first")
    parser.add_argument("--backends", default="gpu,cpu", help="cli: backends to run")
    parser.add_argument("--scales", default="6-18", help="sizes: R-MAT scales FIRST-LAST")
    args = parser.parse_intermixed_args()
    if args.what == "cli":
        run_cli(args.paths, args.backends.split(","), args.runs, args.out)
    elif args.what == "session":
        run_session(args.paths, args.repeat, args.out)
    elif args.what == "nx":
        run_nx(args.paths, args.repeat, args.out)
    elif args.what == "joins":
        run_joins(args.paths, args.repeat, args.out)
    elif args.what == "placement":  # paths: generator specs
        run_placement(args.paths, args.runs, args.out)
    else:
        first, last = (int(s) for s in args.scales.split("-"))
        run_sizes(list(range(first, last + 1)), args.repeat, args.out)


if __name__ == "__main__":
    main()

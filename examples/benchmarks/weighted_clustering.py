"""Weighted and directed clustering, ``dtri.clustering`` against NetworkX's ``nx.clustering``,
each arm in a process of its own (issue 73: equal to 1e-12 on the shared graphs given random
weights and directions).

Usage::

    python examples/benchmarks/weighted_clustering.py ca-CondMat email-Eu-core \\
        [--rounds 2] [--calls 2] [--seed 7] [--data DIR] [--out FILE]

The rows of a shared graph (``DIR/NAME.txt.gz``) are its lines as they are (email-Eu-core is
directed), each of an undirected graph (``ca-*``) turned round with probability 1/2, with
weights uniform in [0, 10) (NumPy's ``default_rng(seed)``): a pandas frame ``src, dst,
weight``. Each kind, ``weighted`` (undirected), ``directed`` and ``directed-weighted``, runs
three arms, each a new Python process that reads the rows, then makes ``--calls`` timed calls:

* ``dtri``: ``dtri.clustering(rows, weight=..., directed=...)`` (the rows' simple undirected
  graph prepared in the process, its triangles listed, the values of each triangle's pairs
  attached by Dask merges, the per-vertex values computed);
* ``dtri-listing``: ``dtri.prepare`` of the rows' ``src, dst`` and the listing's rows counted
  (``list_triangles().map_partitions(len).sum()``): the part of the ``dtri`` arm before the
  merges, so that the merges' share is the difference;
* ``networkx``: a ``nx.Graph`` or ``nx.DiGraph`` built by ``add_weighted_edges_from`` (a later
  row of an edge replaces its weight, as dtri's), then ``nx.clustering(G, weight=...)``
  (``clustering_seconds``: the call alone).

An arm's figure is the best of its calls after the first (``first_call_seconds``: the first,
which loads numba's kernels for dtri), the best over ``--rounds`` rounds, the arms in a
rotating order. One line per graph and kind: ``seconds`` is dtri's, the peers NetworkX's and
the listing's; ``detail.ratio`` dtri over NetworkX, ``detail.merge_share`` the part of dtri's
time past the listing; ``peers.networkx.agrees``: every vertex's clustering within 1e-12
(relative or absolute, as ``pytest.approx(rel=1e-12, abs=1e-12)``), with the largest
difference in ``max_abs_difference``.

Each line is in the schema of ``schema.py`` (family ``weighted-clustering``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # schema.py beside this file
from schema import ROOT, command_line, emit, to_schema

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("DTRI_DATA", ROOT.parent / "shared" / "data"))
KINDS = {"weighted": ("weight", False), "directed": (None, True),
         "directed-weighted": ("weight", True)}
ARMS = ("dtri", "dtri-listing", "networkx")
TOLERANCE = 1e-12


def rows_of(graph: str, data: Path, seed: int) -> Any:
    """The rows of a shared graph: directions at random where it is undirected, random
    weights (module docstring)."""
    import pandas as pd

    pairs = pd.read_csv(data / f"{graph}.txt.gz", sep=r"\s+", comment="#", header=None,
                        usecols=[0, 1], dtype=np.int64).to_numpy()
    rng = np.random.default_rng(seed)
    flip = rng.random(len(pairs)) < 0.5 if graph.startswith("ca-") \
        else np.zeros(len(pairs), dtype=bool)
    pairs[flip] = pairs[flip][:, ::-1]
    return pd.DataFrame({"src": pairs[:, 0], "dst": pairs[:, 1],
                         "weight": rng.random(len(pairs)) * 10})


def one_call(arm: str, rows: Any, weight: str | None, directed: bool
             ) -> tuple[float, Any, float | None]:
    """One timed call: its seconds, its result and (NetworkX) the clustering call's own."""
    started = time.perf_counter()
    if arm == "dtri":
        import dtri

        found = dtri.clustering(rows, weight=weight, directed=directed)["clustering"]
        return time.perf_counter() - started, found.compute(), None
    if arm == "dtri-listing":
        import dtri

        with dtri.prepare(rows[["src", "dst"]]) as graph:
            listed = int(graph.list_triangles().map_partitions(len).sum().compute())
        return time.perf_counter() - started, listed, None
    import networkx as nx

    graph = nx.DiGraph() if directed else nx.Graph()
    graph.add_weighted_edges_from(zip(rows["src"].tolist(), rows["dst"].tolist(),
                                      rows["weight"].tolist(), strict=True))
    built = time.perf_counter()
    found = nx.clustering(graph, weight=weight)
    ended = time.perf_counter()
    return ended - started, found, ended - built


def run_arm(args: argparse.Namespace) -> dict[str, Any]:
    """One arm in this process: its calls, and its values saved to ``--values``."""
    rows = rows_of(args.graphs[0], args.data, args.seed)
    weight, directed = KINDS[args.kind]
    seconds, own = [], []
    for _ in range(args.calls):
        took, found, alone = one_call(args.arm, rows, weight, directed)
        seconds.append(took)
        own.append(alone)
    if args.arm == "dtri":
        np.save(args.values, np.stack([found.index.to_numpy(dtype=np.float64),
                                       found.to_numpy(dtype=np.float64)]))
    elif args.arm == "networkx":
        np.save(args.values, np.array([list(found), list(found.values())], dtype=np.float64))
    return {"seconds": seconds, "clustering_seconds": own, "rows": len(rows),
            "listed": found if args.arm == "dtri-listing" else None}


def arm_process(arm: str, graph: str, kind: str, args: argparse.Namespace, values: Path
                ) -> dict[str, Any]:
    """:func:`run_arm` in a new process."""
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    done = subprocess.run([sys.executable, str(Path(__file__)), graph, "--arm", arm, "--kind",
                           kind, "--calls", str(args.calls), "--seed", str(args.seed),
                           "--data", str(args.data), "--values", str(values)],
                          capture_output=True, text=True, env=environ, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{arm} on {graph} ({kind}) failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compared(ours_file: Path, theirs_file: Path) -> dict[str, Any]:
    """dtri's values against NetworkX's, vertex by vertex."""
    ours, theirs = np.load(ours_file), np.load(theirs_file)
    mine = dict(zip(ours[0].astype(np.int64).tolist(), ours[1].tolist(), strict=True))
    other = dict(zip(theirs[0].astype(np.int64).tolist(), theirs[1].tolist(), strict=True))
    same_vertices = set(mine) == set(other)
    gaps = [abs(mine[v] - c) for v, c in other.items() if v in mine]
    within = all(abs(mine[v] - c) <= max(TOLERANCE, TOLERANCE * abs(c))
                 for v, c in other.items() if v in mine)
    return {"agrees": same_vertices and within, "vertices": len(other),
            "max_abs_difference": max(gaps, default=0.0)}


def figure(seconds: list[float]) -> float:
    return min(seconds[1:] or seconds)


def measure(graph: str, kind: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """The rounds of one graph and kind, as the schema's own dict."""
    rounds = []
    for r in range(args.rounds):
        order = ARMS[r % len(ARMS):] + ARMS[:r % len(ARMS)]
        load = os.getloadavg()[0]
        values = {arm: folder / f"{graph}-{kind}-{arm}-{r}.npy" for arm in ARMS}
        found = {arm: arm_process(arm, graph, kind, args, values[arm]) for arm in order}
        found["check"] = compared(values["dtri"], values["networkx"])
        found["load_average"] = [round(load, 2), round(os.getloadavg()[0], 2)]
        rounds.append(found)
    best = {arm: min(figure(r[arm]["seconds"]) for r in rounds) for arm in ARMS}
    first = {arm: min(r[arm]["seconds"][0] for r in rounds) for arm in ARMS}
    clustering_alone = min(min(r["networkx"]["clustering_seconds"]) for r in rounds)
    weight, directed = KINDS[kind]
    return {
        "graph": graph, "backend": "cpu", "command": command_line(),
        "seconds": round(best["dtri"], 4), "triangles": rounds[0]["dtri-listing"]["listed"],
        "peers": {
            "networkx": {"seconds": round(best["networkx"], 4),
                         "clustering_seconds": round(clustering_alone, 4),
                         "agrees": all(r["check"]["agrees"] for r in rounds),
                         "max_abs_difference": max(r["check"]["max_abs_difference"]
                                                   for r in rounds),
                         "vertices": rounds[0]["check"]["vertices"]},
            "dtri-listing": {"seconds": round(best["dtri-listing"], 4),
                             "listed": rounds[0]["dtri-listing"]["listed"]}},
        "kind": kind, "weight": weight, "directed": directed,
        "ratio": round(best["dtri"] / best["networkx"], 4),
        "ratio_to_clustering_alone": round(best["dtri"] / clustering_alone, 4),
        "merge_share": round(1 - best["dtri-listing"] / best["dtri"], 3),
        "first_call_seconds": {arm: round(first[arm], 4) for arm in ARMS},
        "rows": rounds[0]["dtri"]["rows"], "seed": args.seed, "calls": args.calls,
        "rounds": args.rounds, "tolerance": TOLERANCE,
        "figure": "best of calls 2.. of a fresh process, best over the rounds",
        "calls_seconds": {arm: [[round(s, 4) for s in r[arm]["seconds"]] for r in rounds]
                          for arm in ARMS},
        "load_average": [r["load_average"] for r in rounds],
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+", help="shared graphs' names")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data", type=Path, default=SHARED,
                        help="the folder of the shared SNAP graphs")
    parser.add_argument("--out")
    parser.add_argument("--arm", help=argparse.SUPPRESS)
    parser.add_argument("--kind", help=argparse.SUPPRESS)
    parser.add_argument("--values", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.data = args.data.resolve()
    if args.arm:
        print(json.dumps(run_arm(args)))
        return
    with tempfile.TemporaryDirectory(prefix="dtri-weighted-") as tmp:
        for graph in args.graphs:
            for kind in args.kinds:
                own = measure(graph, kind, args, Path(tmp))
                emit(to_schema("weighted-clustering", own), args.out)


if __name__ == "__main__":
    main()

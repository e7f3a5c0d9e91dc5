"""dtri's CPU count in a fresh process of its own against GraphBLAS, each arm in a process
of its own (issue 71): nothing another arm imports (numba, GraphBLAS) is loaded for it.

    python examples/benchmarks/cpu_fresh.py --out F.jsonl
    python examples/benchmarks/cpu_fresh.py --baseline fc0f982 --rounds 3 --out F.jsonl
    python examples/benchmarks/cpu_fresh.py --numba-cache cold --out F.jsonl

For each graph the simple undirected edges (dense ids, ``u < v``, each once;
``dense_cpu.graph_edges``, untimed) are an ``(m, 2)`` int64 array. Each arm is a new
Python process that builds that array, then makes ``--calls`` calls and times each:

* ``dtri``: ``dtri.count(edges, backend="cpu")``, this checkout (each call's join and CPU
  kernel are kept: the first call takes the NumPy join and starts loading numba's kernels,
  the later ones count with them);
* ``dtri-COMMIT``: the same at another commit (``--baseline``: a ``git archive`` of its
  ``dtri/`` in a folder of its own, first on ``PYTHONPATH`` and the arm's current folder),
  where given;
* ``graphblas-llt`` and ``graphblas-ll`` (python-graphblas, SuiteSparse): ``Matrix.from_coo``
  of both directions, ``tril``, then ``C<L> = L plus.pair Lᵀ`` or ``C<L> = L plus.pair L``,
  ``reduce_scalar`` (the matrix built from the same array in each call, as dtri's count
  builds its graph; ``product_seconds``: the product and its sum alone, the matrix built).

An arm's figure is the best of its calls after the first two (the issue's "from the second
call on, best of the last 6" of 8 calls); its first call is kept too, and dtri's second
(``detail.second_call_ratios``: over the better GraphBLAS figure of the same round).

numba's disk cache (``--numba-cache``): ``warm``, each tree's kernels loaded once before the
rounds (``dtri.kernels.warm``, where the tree has it), as every process after a machine's
first has them; ``cold``, every arm's process given an empty ``NUMBA_CACHE_DIR`` of its own, as
a new install's first process finds it. ``detail.loader``: per round, the seconds of dtri's
load of its kernels (``null``: not done when the process ended) and whether it compiled.
``detail.scipy``: whether SciPy is installed (numba's first load imports it, for its BLAS).

Where the load starts (``--load-at``, this tree's arm only; ``detail.load_at``): ``after`` the
first call, as dtri does; at its ``start``, the first call taking NumPy's join without waiting;
``within`` it, the first call waiting for the load. Both are Python under the GIL, so this
moves the load between the first two calls.
In each of
``--rounds`` rounds every graph runs every arm once, the arms in a rotating order, so that a
busy machine slows them alike; the line's ``seconds`` is dtri's best over the rounds, each
peer's likewise, and ``detail.round_ratios`` dtri's figure over the better GraphBLAS
product's, round by round (the ratio within one round is what counts on a shared machine),
with the one-minute load average before and after each round.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from schema import command_line, emit, record

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED = Path(os.environ.get("DTRI_DATA", ROOT.parent / "shared" / "data"))
GRAPHS = ("ca-CondMat", "ca-GrQc", "ca-HepTh", "p2p-Gnutella24", "email-Eu-core",
          "facebook_combined", "wiki-Vote")
"""The shared SNAP graphs."""
GRAPHBLAS = ("graphblas-llt", "graphblas-ll")
SKIPPED = 2
"""Calls left out of an arm's figure: the first (a fresh process's) and the second (dtri's
waits there for its kernels)."""


def run_arm(arm: str, graph: str, calls: int, data: Path, load_at: str = "after"
            ) -> dict[str, Any]:
    """One arm in this process: ``calls`` timed calls on ``graph``'s edges."""
    from dense_cpu import graph_edges

    edges, vertices = graph_edges(graph, data)
    seconds: list[float] = []
    found: list[int] = []
    kernels: list[str] = []
    products: list[float] = []
    loader: dict[str, Any] = {}
    if arm.startswith("dtri"):
        import dtri

        if load_at != "after":
            if load_at == "start":  # the first call does not wait (read as Dask imports)
                os.environ["DASK_DTRI__KERNEL_LOAD_WAIT"] = "0"
            from dtri.kernels.compiled import LOADER

            LOADER.start()
        for _ in range(calls):
            started = time.perf_counter()
            result = dtri.count(edges, backend="cpu")
            seconds.append(time.perf_counter() - started)
            if load_at == "start" and len(seconds) == 1:
                import dask

                dask.config.set({"dtri.kernel-load-wait": 5})
            found.append(result.triangles)
            kernel = result.plan.get("kernel") or ""
            kernels.append(f"{result.join}:{kernel}" if kernel else result.join)
        from dtri.kernels import compiled

        if hasattr(compiled, "LOADER"):  # a tree before the loader has none
            loader = {"seconds": compiled.LOADER.seconds and round(compiled.LOADER.seconds, 4),
                      "compiling": getattr(compiled.LOADER, "compiling", None)}
    else:
        import graphblas
        import numpy as np

        rows = np.concatenate([edges[:, 0], edges[:, 1]])
        columns = np.concatenate([edges[:, 1], edges[:, 0]])
        plus_pair = graphblas.semiring.plus_pair[graphblas.dtypes.INT64]
        for _ in range(calls):
            started = time.perf_counter()
            adjacency = graphblas.Matrix.from_coo(rows, columns, True, dtype=bool,
                                                  nrows=vertices, ncols=vertices)
            lower = graphblas.select.tril(adjacency, -1).new()
            built = time.perf_counter()
            right = lower.T if arm == "graphblas-llt" else lower
            common = plus_pair(lower @ right).new(mask=lower.S)
            total = common.reduce_scalar(allow_empty=False).new().value
            ended = time.perf_counter()
            seconds.append(ended - started)
            products.append(ended - built)
            found.append(int(total))
    return {"arm": arm, "graph": graph, "edges": int(edges.shape[0]), "seconds": seconds,
            "triangles": found,
            "kernels": kernels, "product_seconds": products,
            "numba_loaded": "numba" in sys.modules, "loader": loader}


def commit_tree(commit: str, folder: Path) -> Path:
    """A copy of ``commit``'s ``dtri/`` (``git archive``) in ``folder``."""
    tree = folder / f"tree-{commit}"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", commit, "dtri"], cwd=ROOT,
                             capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def tree_environ(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(HERE)])}


WARM_TREE = """
import importlib.util
if importlib.util.find_spec("dtri.kernels.warm") is not None:
    from dtri.kernels.warm import warm_count_kernels
    warm_count_kernels()
"""


def warm_tree(tree: Path) -> None:
    """numba's cache of ``tree``'s count kernels written (or read) once, in a process."""
    subprocess.run([sys.executable, "-c", WARM_TREE], env=tree_environ(tree), cwd=tree,
                   check=True)


def arm_process(arm: str, graph: str, calls: int, data: Path, trees: dict[str, Path],
                cold: Path | None = None, load_at: str = "after") -> dict[str, Any]:
    """:func:`run_arm` in a new process, from its tree (``trees``: the baseline's); ``cold``:
    a folder in which the process gets an empty numba cache of its own."""
    tree = trees.get(arm, ROOT)
    environ = tree_environ(tree)
    if cold is not None:
        environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba-", dir=cold)
    done = subprocess.run([sys.executable, str(Path(__file__)), "--arm", arm, "--graphs", graph,
                           "--calls", str(calls), "--data", str(data),
                           "--load-at", load_at if arm == "dtri" else "after"],
                          capture_output=True, text=True, env=environ, cwd=tree)
    if done.returncode != 0:
        raise SystemExit(f"{arm} on {graph} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(args: argparse.Namespace, arms: list[str], trees: dict[str, Path],
            folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Per graph, its rounds: each arm's run, and the load average around the round."""
    runs: dict[str, list[dict[str, Any]]] = {graph: [] for graph in args.graphs}
    cold = folder if args.numba_cache == "cold" else None
    if cold is None:
        for tree in [ROOT, *trees.values()]:
            warm_tree(tree)
    for round_ in range(args.rounds):
        for graph in args.graphs:
            order = arms[round_ % len(arms):] + arms[:round_ % len(arms)]
            load = os.getloadavg()[0]
            found = {arm: arm_process(arm, graph, args.calls, args.data, trees, cold,
                                      args.load_at)
                     for arm in order}
            runs[graph].append({"load_average": [round(load, 2),
                                                 round(os.getloadavg()[0], 2)],
                                "arms": found})
    return runs


def figure(run: dict[str, Any]) -> float:
    return min(run["seconds"][SKIPPED:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", nargs="+", default=list(GRAPHS))
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="a commit to run as the arm dtri-COMMIT")
    parser.add_argument("--data", type=Path, default=SHARED,
                        help="the folder of the shared SNAP graphs")
    parser.add_argument("--numba-cache", choices=("warm", "cold"), default="warm",
                        help="warm: each tree's kernels cached before the rounds; cold: every "
                             "process an empty NUMBA_CACHE_DIR (a new install's first)")
    parser.add_argument("--load-at", choices=("after", "start", "within"), default="after",
                        help="where this tree's arm starts loading numba's kernels: after the "
                             "first call (dtri's way), at its start, or within it (waited for)")
    parser.add_argument("--arm", help=argparse.SUPPRESS)
    parser.add_argument("--out", help="also append the lines to this file")
    args = parser.parse_args()
    args.data = args.data.resolve()  # the arms run from their trees
    if args.arm:
        print(json.dumps(run_arm(args.arm, args.graphs[0], args.calls, args.data,
                                 args.load_at)))
        return
    folder = Path(tempfile.mkdtemp(prefix="dtri-cpu-fresh-"))
    try:
        trees = {f"dtri-{args.baseline}": commit_tree(args.baseline, folder)} \
            if args.baseline else {}
        arms = ["dtri", *trees, *GRAPHBLAS]
        runs = measure(args, arms, trees, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for graph, rounds in runs.items():
        best = {arm: min(figure(r["arms"][arm]) for r in rounds) for arm in arms}
        ours = rounds[0]["arms"]["dtri"]["triangles"][0]
        peers = {}
        for arm in arms[1:]:
            peers[arm] = {"seconds": round(best[arm], 6),
                          "first_call_seconds": round(min(r["arms"][arm]["seconds"][0]
                                                          for r in rounds), 6),
                          "ratio": round(best["dtri"] / best[arm], 3),
                          **({"product_seconds": round(min(
                              min(r["arms"][arm]["product_seconds"][SKIPPED:])
                              for r in rounds), 6)} if arm in GRAPHBLAS else {}),
                          "triangles": rounds[0]["arms"][arm]["triangles"][0],
                          "agrees": all(t == ours for r in rounds
                                        for t in r["arms"][arm]["triangles"])}
        ratios = [round(figure(r["arms"]["dtri"]) / min(figure(r["arms"][arm])
                                                        for arm in GRAPHBLAS), 3)
                  for r in rounds]
        seconds = [round(r["arms"]["dtri"]["seconds"][1] / min(figure(r["arms"][arm])
                                                               for arm in GRAPHBLAS), 2)
                   for r in rounds]
        detail = {"edges": rounds[0]["arms"]["dtri"]["edges"], "calls": args.calls,
                  "rounds": args.rounds,
                  "figure": f"best of calls {SKIPPED + 1}..{args.calls} of a fresh process",
                  "round_ratios": ratios, "worst_round_ratio": max(ratios),
                  "first_call_seconds": [round(r["arms"]["dtri"]["seconds"][0], 4)
                                         for r in rounds],
                  "second_call_seconds": [round(r["arms"]["dtri"]["seconds"][1], 4)
                                          for r in rounds],
                  "second_call_ratios": seconds, "worst_second_call_ratio": max(seconds),
                  "numba_cache": args.numba_cache, "load_at": args.load_at,
                  "loader": [r["arms"]["dtri"]["loader"] for r in rounds],
                  "scipy": importlib.util.find_spec("scipy") is not None,
                  "kernels": rounds[0]["arms"]["dtri"]["kernels"],
                  "load_average": [r["load_average"] for r in rounds],
                  "exact": all(t == ours for r in rounds for t in r["arms"]["dtri"]["triangles"]),
                  "calls_seconds": {arm: [[round(s, 5) for s in r["arms"][arm]["seconds"]]
                                          for r in rounds] for arm in arms}}
        emit(record(benchmark="cpu-fresh-count", graph=graph, backend="cpu",
                    command=command_line(), seconds=round(best["dtri"], 6), triangles=ours,
                    peers=peers, detail=detail), args.out)


if __name__ == "__main__":
    main()

"""Scale-out traffic (issue 68): the bytes each worker moves as the cluster grows, counted
as a user with a Dask cluster counts: ``dtri count FILE --backend cpu --scheduler ADDRESS
--json`` in a new process, against P single-threaded CPU workers started for it.

    python examples/benchmarks/scale_out.py rmat:18 --workers 4,9,16 --baseline 4870299
    python examples/benchmarks/scale_out.py rmat:18 --nodes 1,2,4 --rate 1gbit

Each graph is generated once as a text edge list (``dtri generate SPEC --format snap``: the
read's own exchanges count too). Per worker count, each *arm* runs on a cluster of its own,
started for it in a process of its own: ``dtri`` (this tree, every default), and with
``--baseline COMMIT`` that commit's tree (a git worktree, its cluster and its command run
from it, so that neither arm loads the other's modules), and ``--arms`` settings of this
tree (``1d``: ``--decomposition 1d``; ``raw``: ``dtri.wire-format=raw``). Every count is
checked against every other arm's.

``--workers``: a ``distributed.LocalCluster`` of P worker processes on this machine.
``--nodes``: P workers each in a network namespace of its own behind a link shaped to
``--rate`` (``cluster/netns.py``), and the same workers unshaped, in the same command; the
kernel's count of the bytes each node received is read beside dtri's own.

The figure is the busiest worker's received bytes summed over every stage (dtri's transfer
ledger, ``moved_bytes``), over the graph's edges; and all workers' together. One line per
graph and worker count (and link), in the schema of ``schema.py``: ``seconds`` is the wall
time of the ``dtri`` arm's command, ``peers`` the other arms.
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

from schema import ROOT, command_line, emit, to_schema

FAMILY = "scale-out"
ARMS = {"dtri": {}, "1d": {"args": ["--decomposition", "1d"]},
        "raw": {"env": {"DASK_DTRI__WIRE_FORMAT": "raw"}},
        "1d-raw": {"args": ["--decomposition", "1d"],
                   "env": {"DASK_DTRI__WIRE_FORMAT": "raw"}}}
"""This tree's arms: extra options of ``dtri count``, and ``dask.config`` settings."""


def generate(spec: str, folder: Path) -> Path:
    """The edge list of ``spec`` as one SNAP text file (made once per graph)."""
    out = folder / spec.replace(":", "-")
    if not out.exists():
        subprocess.run([sys.executable, "-m", "dtri", "generate", spec, "-o", str(out),
                        "--format", "snap", "--partitions", "1"], check=True, cwd=ROOT,
                       capture_output=True)
    (text,) = sorted(out.glob("*.txt"))
    return text


def worktree(commit: str, folder: Path) -> Path:
    """A git worktree of ``commit`` (the baseline arm's tree)."""
    tree = folder / f"tree-{commit}"
    if not tree.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree),
                        commit], check=True, capture_output=True)
    return tree


def figures(result: dict[str, Any]) -> dict[str, Any]:
    """The bytes of one ``dtri count --json`` result: per worker summed over the stages,
    per stage the most one worker received, and the predictions."""
    edges = max(int(result["edges"]), 1)
    moved = result.get("moved_bytes") or {}
    per_worker: dict[str, int] = {}
    for workers in moved.values():
        for address, value in workers.items():
            per_worker[address] = per_worker.get(address, 0) + value
    busiest = max(per_worker.values(), default=0)
    plan = result.get("plan", {})
    spread = plan.get("decomposition") or {}
    predicted = dict(plan.get("moved_prepare") or {})
    predicted.update(spread.get("moved_2d" if spread.get("kind") == "2d" else "moved_1d")
                     or {})
    return {
        "edges": result["edges"], "vertices": result["vertices"],
        "decomposition": result.get("decomposition"), "grid_side": spread.get("side"),
        "wire_format": plan.get("wire_format"),
        "busiest_bytes": busiest, "busiest_bytes_per_edge": round(busiest / edges, 4),
        "total_bytes_per_edge": round(sum(per_worker.values()) / edges, 4),
        "stage_most_bytes": {stage: max(workers.values(), default=0)
                             for stage, workers in moved.items()},
        "stage_predicted_bytes": predicted,
        "link_bandwidth": result.get("link_bandwidth"),
    }


def count(graph: Path, address: str, args: list[str], env: dict[str, str], cwd: Path,
          timeout: int) -> tuple[float, dict[str, Any]]:
    """``dtri count`` in a new process against the scheduler at ``address``: its wall seconds
    and its JSON."""
    command = [sys.executable, "-m", "dtri", "count", str(graph), "--backend", "cpu",
               "--scheduler", address, "--json", *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=timeout)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()[-2000:]}")
    return seconds, json.loads(done.stdout)


def arm(graph: Path, workers: int, args: list[str], env: dict[str, str], timeout: int,
        memory_limit: str) -> dict[str, Any]:
    """One arm on a local cluster of its own (run in this process, from the arm's tree)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit=memory_limit) as cluster:
        seconds, result = count(graph, cluster.scheduler_address, args, env, Path.cwd(),
                                timeout)
    return {"seconds": round(seconds, 3), "triangles": result["triangles"], **figures(result)}


def run_arm(graph: Path, workers: int, name: str, tree: Path, timeout: int,
            memory_limit: str) -> dict[str, Any]:
    """An arm in a process of its own, from ``tree`` (this one's modules, or the
    baseline's): ``scale_out.py arm ...`` prints its figures."""
    settings = ARMS.get(name, {})
    command = [sys.executable, str(Path(__file__).resolve()), "arm", str(graph),
               "--workers", str(workers), "--timeout", str(timeout), "--memory-limit",
               memory_limit, "--", *settings.get("args", [])]
    env = {**os.environ, **settings.get("env", {}), "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True,
                          timeout=timeout + 120)
    if done.returncode:
        raise RuntimeError(f"arm {name} at {workers} failed: {done.stderr.strip()[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def on_nodes(graph: Path, nodes: int, rate: str | None, timeout: int,
             memory_limit: str) -> dict[str, Any]:
    """The ``dtri`` arm on ``nodes`` namespaced workers behind links of ``rate``, with the
    bytes each node's link received (the kernel's count, framing included)."""
    sys.path.insert(0, str(ROOT / "cluster"))
    from netns import namespace_cluster

    with namespace_cluster(nodes, rate, memory_limit=memory_limit) as cluster:
        before = cluster.nodes.received_bytes()
        seconds, result = count(graph, cluster.address, [], {}, ROOT, timeout)
        after = cluster.nodes.received_bytes()
    link = {k: after[k] - before.get(k, 0) for k in after}
    own = {"seconds": round(seconds, 3), "triangles": result["triangles"], **figures(result)}
    own["link_received_bytes"] = link
    own["link_busiest_bytes_per_edge"] = round(max(link.values(), default=0)
                                               / max(int(result["edges"]), 1), 4)
    own["stage_seconds"] = result.get("seconds")
    return own


def line(spec: str, workers: int, arms: dict[str, dict[str, Any]], lead: str,
         **extra: Any) -> dict[str, Any]:
    """One line of the schema: the ``lead`` arm's figures, the others as peers."""
    main = arms[lead]
    peers = {name: {"seconds": own["seconds"], "triangles": own["triangles"],
                    "agrees": own["triangles"] == main["triangles"],
                    "busiest_bytes_per_edge": own["busiest_bytes_per_edge"],
                    "total_bytes_per_edge": own["total_bytes_per_edge"],
                    "decomposition": own["decomposition"],
                    **({"link_busiest_bytes_per_edge": own["link_busiest_bytes_per_edge"]}
                       if "link_busiest_bytes_per_edge" in own else {})}
             for name, own in arms.items() if name != lead}
    detail = {key: value for key, value in main.items() if key not in ("seconds", "triangles",
                                                                       "stage_seconds")}
    return to_schema(FAMILY, {"graph": spec, "backend": "cpu", "seconds": main["seconds"],
                              "triangles": main["triangles"],
                              "stage_seconds": main.get("stage_seconds"), "peers": peers,
                              "workers": workers, **extra, **detail},
                     command=command_line())


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "arm":  # one arm, in its own process
        parser = argparse.ArgumentParser()
        parser.add_argument("graph", type=Path)
        parser.add_argument("--workers", type=int, required=True)
        parser.add_argument("--timeout", type=int, default=900)
        parser.add_argument("--memory-limit", default="1.4GiB")
        cut = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)
        args = parser.parse_args(sys.argv[2:cut])
        print(json.dumps(arm(args.graph, args.workers, sys.argv[cut + 1:], {}, args.timeout,
                             args.memory_limit)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="+", help="generator specs, e.g. rmat:18")
    parser.add_argument("--workers", default="", help="worker counts of local clusters: 4,9,16")
    parser.add_argument("--nodes", default="", help="worker counts on namespaced nodes: 1,2,4")
    parser.add_argument("--rate", default="1gbit", help="the nodes' links (tc's rate)")
    parser.add_argument("--arms", default="", help=f"more arms of this tree: {', '.join(ARMS)}")
    parser.add_argument("--baseline", default=None, help="a commit to run as an arm")
    parser.add_argument("--memory-limit", default="1.4GiB", help="per worker")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per command")
    parser.add_argument("--folder", type=Path, default=None, help="for the graphs and trees")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="dtri-scale-out-"))
    folder.mkdir(parents=True, exist_ok=True)
    trees = {"dtri": ROOT}
    trees.update({name: ROOT for name in args.arms.split(",") if name})
    if args.baseline:
        trees[args.baseline] = worktree(args.baseline, folder)
    for spec in args.graphs:
        graph = generate(spec, folder)
        for workers in (int(w) for w in args.workers.split(",") if w):
            arms = {name: run_arm(graph, workers, name, tree, args.timeout, args.memory_limit)
                    for name, tree in trees.items()}
            emit(line(spec, workers, arms, "dtri", cluster="local"), args.out)
        for nodes in (int(w) for w in args.nodes.split(",") if w):
            arms = {f"links {args.rate}": on_nodes(graph, nodes, args.rate, args.timeout,
                                                   args.memory_limit),
                    "unshaped": on_nodes(graph, nodes, None, args.timeout, args.memory_limit)}
            emit(line(spec, nodes, arms, f"links {args.rate}", cluster="namespaces",
                      rate=args.rate), args.out)


if __name__ == "__main__":
    main()

"""Strong scaling over GPUs, by protocol and decomposition, with the bytes each worker pulled.

Usage (on a GPU host)::

    python examples/benchmarks/multi_gpu.py rmat:24 rmat:25 --workers 1,2,auto \\
        --protocols tcp,ucx --decompositions 1d,2d --repeat 2 [--devices 0,1,0,1] [--out FILE]

With ``--cli``, each line is instead the whole command a user types, ``dtri count --generate
GRAPH --backend gpu --workers W --protocol P --decomposition D --json``, in a new process (its
cluster's start, the generation and the imports included), the best wall time of ``--repeat``
(family ``multi-gpu-cli``); its peer is the same command on the first worker count listed.
``--worker-starts forkserver,spawn`` runs each command under each ``dtri.worker-start-gpu``
in turn, alternated, one line each; a line's ``cluster_start_seconds`` is its cluster's start
(from its ``placement``), and a later method's peer is the first method's line.

For each protocol and worker count, one local cluster of dask-cuda workers (``--devices``:
the GPUs of the workers in turn, so ``0,1,0,1`` puts four workers on two GPUs: a 2 x 2 grid
whose bytes are those of four GPUs, though not its speed); ``auto``: no cluster of its own,
dtri starts one for each graph (``--workers auto``: the GPUs its time model predicts fastest)
or runs it in this process where it fits one task. On it, each graph is generated on
the workers and persisted there, then prepared and counted from GPU memory ``--repeat``
times per decomposition, the best run kept: the in-memory seconds of ``dtri bench``. One
JSON line per (graph, protocol, workers, decomposition), in the schema of ``schema.py``
(family ``multi-gpu``): ``seconds`` is that best run's prepare and count, ``stage_seconds``
dtri's; ``peers`` holds the one-worker run of the same protocol and decomposition made in
this process on the same edges (its ``efficiency`` is t1 / (workers x t)); ``detail`` the
workers' measured bytes (``moved_bytes``: per stage, per worker; ``busiest_moved_bytes``),
the planner's prediction (``predicted_moved_bytes``: the busiest worker's bytes per stage
under ``1d`` and ``2d``, and the preparation's, ``prepare``), and the cluster. Every line, with
``--cli`` too, carries ``dtri bench``'s join figures (:func:`dtri.bench.join_figures`): the
bytes the fused join read, its ``wedges_join`` seconds, their quotient and its fraction of the
peak bandwidth of one GPU a worker (with ``--devices`` sharing GPUs, of more than they have).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # schema.py beside this file
from schema import command_line, emit, to_schema

from dtri.bench import join_figures


def cluster(workers: int, protocol: str, devices: str | None,
            device_memory_limit: str | None = None) -> Any:
    """A local dask-cuda cluster of ``workers`` workers over ``protocol``, as dtri starts
    one (UCX over NVLink where asked); with ``devices``, plain Dask workers, one a device of
    the list in turn (dask-cuda gives a GPU one worker only)."""
    if devices:
        from distributed import Nanny, Scheduler, SpecCluster

        specs = {i: {"cls": Nanny, "options": {"nthreads": 1, "protocol": protocol,
                                               "env": {"CUDA_VISIBLE_DEVICES": device}}}
                 for i, device in enumerate(devices.split(","))}
        return SpecCluster(workers=specs, silence_logs=logging.CRITICAL, scheduler={
            "cls": Scheduler, "options": {"dashboard_address": ":0", "protocol": protocol}})
    from dask_cuda import LocalCUDACluster

    from dtri.runtime.caps import DEFAULT_RMM_POOL
    from dtri.runtime.local_cluster import quiet_ucx

    # the RMM pool that dtri gives the workers of a cluster it starts (without one, every
    # allocation is a cudaMalloc and UCX opens a CUDA IPC handle per received buffer)
    extra: dict[str, Any] = {"rmm_pool_size": DEFAULT_RMM_POOL,
                             "rmm_allocator_external_lib_list": ["cupy"]}
    if device_memory_limit:  # dask-cuda spills device data to the host past it
        extra["device_memory_limit"] = device_memory_limit
    if protocol == "ucx":
        extra.update(enable_tcp_over_ucx=True, enable_nvlink=True, enable_infiniband=False)
        quiet_ucx()  # else UCX warns on every worker's standard output, where the lines go
    return LocalCUDACluster(n_workers=workers, protocol=protocol, dashboard_address=":0",
                            silence_logs=logging.CRITICAL, **extra)


def generated_rows(graph: str) -> int:
    """The rows a generator spec makes."""
    from dtri.input.generate import parse_spec

    kind, values = parse_spec(graph)
    return values[1] << values[0] if kind == "rmat" and len(values) > 1 else (
        16 << values[0] if kind == "rmat" else values[1])


def timed_counts(graph: str, decompositions: list[str], repeat: int, seed: int,
                 protocol: str | None = None, bins: int | None = None
                 ) -> dict[str, dict[str, Any]]:
    """Per decomposition, the best of ``repeat`` prepares and counts of the graph persisted
    on the workers of the active client; with ``protocol``, on the cluster that dtri starts
    itself for the graph (``--workers auto``), or in this process where dtri runs it."""
    import dtri
    from dtri.bench import _materialize
    from dtri.errors import OutOfMemoryError
    from dtri.input.frames import as_edge_frame
    from dtri.input.generate import generated

    results: dict[str, dict[str, Any]] = {}
    options = {"protocol": protocol} if protocol else {}
    with dtri.Session(backend="gpu", **options) as session:
        runtime = session.open(input_rows=generated_rows(graph) if protocol else 0)
        persisted = _materialize(as_edge_frame(generated(graph, seed=seed), "gpu"), runtime)
        for decomposition in decompositions:
            best: dict[str, Any] = {}
            for _ in range(repeat):
                started = time.perf_counter()
                try:
                    with dtri.prepare(persisted, session=session, bins=bins,
                                      decomposition=decomposition) as prepared:
                        result = prepared.count()
                except OutOfMemoryError as error:  # the other lines still run
                    print(f"skipped: {graph} {decomposition}: {error}", file=sys.stderr)
                    break
                seconds = time.perf_counter() - started
                if best and best["result"].triangles != result.triangles:
                    raise SystemExit(f"{graph}: {best['result'].triangles} then "
                                     f"{result.triangles} triangles")
                if not best or seconds < best["seconds"]:
                    best = {"seconds": seconds, "result": result}
            if best:
                results[decomposition] = best
    return results


def cli_run(graph: str, workers: int | str, protocol: str, decomposition: str, seed: int,
            timeout: float, worker_start: str | None = None) -> dict[str, Any] | None:
    """``dtri count --generate graph ... --json`` in a new process (``worker_start``: its
    ``dtri.worker-start-gpu``, else dtri's default): its wall seconds and its JSON result;
    ``None`` where it failed (its last line printed)."""
    import json
    import os
    import subprocess

    command = [sys.executable, "-m", "dtri", "count", "--generate", graph, "--seed", str(seed),
               "--backend", "gpu", "--workers", str(workers), "--protocol", protocol,
               "--decomposition", decomposition, "--json"]
    environ = dict(os.environ)
    if worker_start:
        environ["DASK_DTRI__WORKER_START_GPU"] = worker_start
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=False, env=environ)
    except subprocess.TimeoutExpired:
        print(f"skipped: {graph} on {workers} workers: over {timeout:.0f} s", file=sys.stderr)
        return None
    seconds = time.perf_counter() - started
    if done.returncode:
        last = (done.stderr.strip().splitlines() or [""])[-1]
        print(f"skipped: {graph} on {workers} workers: {last}", file=sys.stderr)
        return None
    return {"seconds": seconds, "result": json.loads(done.stdout)}


def cluster_start_seconds(placement: str | None) -> float | None:
    """The seconds a local cluster took to start, from a count's ``placement`` line."""
    import re

    found = re.search(r"the cluster started in ([0-9.]+) s", placement or "")
    return float(found.group(1)) if found else None


def peer_line(peer: dict[str, Any], best: dict[str, Any], **facts: Any) -> dict[str, Any]:
    """A ``--cli`` line's peer: another command's best run, beside this one's."""
    return {**facts, "seconds": round(peer["seconds"], 6),
            "triangles": peer["result"]["triangles"],
            "agrees": peer["result"]["triangles"] == best["result"]["triangles"],
            "ratio": round(best["seconds"] / peer["seconds"], 3)}


def cli_lines(args: argparse.Namespace) -> None:
    """The ``--cli`` lines (see the module docstring)."""
    counts = [w if w == "auto" else int(w) for w in args.workers.split(",")]
    starts = args.worker_starts.split(",") if args.worker_starts else [None]
    for protocol in args.protocols.split(","):
        for decomposition in args.decompositions.split(","):
            for graph in args.graphs:
                firsts: dict[str | None, dict[str, Any]] = {}
                for workers in counts:
                    tried: dict[str | None, list[dict[str, Any]]] = {s: [] for s in starts}
                    for _ in range(args.repeat):  # the start methods alternated
                        for start in starts:
                            run = cli_run(graph, workers, protocol, decomposition, args.seed,
                                          args.timeout, start)
                            if run is not None:
                                tried[start].append(run)
                    bests: dict[str | None, dict[str, Any]] = {}
                    for start, runs in tried.items():
                        if not runs:
                            continue
                        best = bests[start] = min(runs, key=lambda run: run["seconds"])
                        if len({run["result"]["triangles"] for run in runs}) > 1:
                            raise SystemExit(f"{graph}: counts differ between runs")
                        peers = {}
                        if (first := firsts.get(start)) is not None:
                            peers["fewest-workers"] = peer_line(
                                first, best, workers=first["result"]["workers"])
                        if start != starts[0] and starts[0] in bests:
                            peers[f"worker-start-{starts[0]}"] = peer_line(
                                bests[starts[0]], best, worker_start=starts[0])
                        firsts.setdefault(start, best)
                        emit(to_schema("multi-gpu-cli", cli_own(args, graph, workers, start,
                                                                runs, best, peers),
                                       command=command_line()), args.out)


def cli_own(args: argparse.Namespace, graph: str, workers: int | str, start: str | None,
            runs: list[dict[str, Any]], best: dict[str, Any], peers: dict[str, Any]
            ) -> dict[str, Any]:
    """A ``--cli`` line's own fields, before the schema."""
    result = best["result"]
    return {"graph": graph, "seconds": round(best["seconds"], 6),
            "stage_seconds": result["seconds"], "triangles": result["triangles"],
            "peers": peers, "workers": result["workers"], "asked_workers": workers,
            "protocol": result.get("protocol"), "placement": result.get("placement"),
            "worker_start": start or "default",
            "cluster_start_seconds": cluster_start_seconds(result.get("placement")),
            "decomposition": result.get("decomposition"),
            "moved_bytes": result.get("moved_bytes"), "edges": result["edges"],
            "vertices": result["vertices"],
            "runs": [round(run["seconds"], 3) for run in runs], "repeat": args.repeat,
            **join_figures(result.get("join_bytes_read"), result["seconds"],
                           result["workers"], "gpu")}

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--protocols", default="tcp,ucx")
    parser.add_argument("--decompositions", default="1d,2d")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--devices", default=None,
                        help="CUDA_VISIBLE_DEVICES of the workers in turn, e.g. 0,1,0,1")
    parser.add_argument("--device-memory-limit", default=None,
                        help="each dask-cuda worker's spill threshold (default dask-cuda's)")
    parser.add_argument("--bins", type=int, default=None,
                        help="dtri's --bins (default: the planner's)")
    parser.add_argument("--cli", action="store_true",
                        help="time the whole dtri count command in a new process")
    parser.add_argument("--timeout", type=float, default=300,
                        help="--cli: seconds one command may take")
    parser.add_argument("--worker-starts", default=None,
                        help="--cli: dtri.worker-start-gpu values to alternate, e.g. "
                             "forkserver,spawn (default: dtri's own)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.cli:
        cli_lines(args)
        return

    from distributed import Client

    from dtri.report import most_to_one_worker
    from dtri.runtime.resolve import ucx_available

    counts = [w if w == "auto" else int(w) for w in args.workers.split(",")]
    decompositions = args.decompositions.split(",")
    for protocol in args.protocols.split(","):
        if protocol == "ucx" and not ucx_available():
            print("skipped: protocol ucx (distributed-ucxx is not installed)", file=sys.stderr)
            continue
        single: dict[tuple[str, str], dict[str, Any]] = {}
        for workers in counts:
            devices = ",".join(args.devices.split(",")[:workers]) if args.devices and \
                workers != "auto" else None
            with (cluster(workers, protocol, devices, args.device_memory_limit)
                  if workers != "auto" else nullcontext()
                  ) as local, (Client(local) if local is not None else nullcontext()):
                for graph in args.graphs:
                    runs = timed_counts(graph, decompositions, args.repeat, args.seed,
                                        protocol if workers == "auto" else None, args.bins)
                    for decomposition, best in runs.items():
                        result, seconds = best["result"], best["seconds"]
                        if workers == 1:
                            single[graph, decomposition] = best
                        one = single.get((graph, decomposition))
                        peers = {} if one is None or workers == 1 else {"one-worker": {
                            "seconds": round(one["seconds"], 6),
                            "triangles": one["result"].triangles,
                            "agrees": one["result"].triangles == result.triangles,
                            "efficiency": round(one["seconds"] / (result.workers * seconds),
                                                3),
                            "ratio": round(seconds / one["seconds"], 3)}}
                        moved = getattr(result, "moved_bytes", None)
                        spread = result.plan["decomposition"]
                        own = {"graph": graph, "seconds": round(seconds, 6),
                               "stage_seconds": result.seconds, "triangles": result.triangles,
                               "peers": peers, "workers": result.workers,
                               "asked_workers": workers, "protocol": protocol,
                               "placement": result.placement,
                               "workers_choice": result.plan.get("workers_choice"),
                               "devices": devices, "decomposition": result.decomposition,
                               "grid_side": spread["side"], "reason": spread["reason"],
                               "predicted_moved_bytes": {
                                   "1d": spread["moved_1d"], "2d": spread["moved_2d"],
                                   "prepare": result.plan.get("moved_prepare", {})},
                               "moved_bytes": moved,
                               "busiest_moved_bytes": None if moved is None
                               else most_to_one_worker(moved),
                               "link_bandwidth": getattr(result, "link_bandwidth", None),
                               "edges": result.edges, "vertices": result.vertices,
                               "partition_edges": [part["edges"] for part in
                                                   result.plan["partitions"]],
                               "bins": result.bins, "asked_bins": args.bins,
                               "repeat": args.repeat,
                               **join_figures(result.join_bytes_read, result.seconds,
                                              result.workers, "gpu")}
                        emit(to_schema("multi-gpu", own, command=command_line()), args.out)


if __name__ == "__main__":
    main()

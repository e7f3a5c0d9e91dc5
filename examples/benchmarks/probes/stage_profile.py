"""Where a multi-GPU count spends its time: busy seconds per stage and per worker.

Usage (on a GPU host): ``python examples/benchmarks/probes/stage_profile.py rmat:25 1 2 [4 ...]``.
For each worker count, a fresh ``LocalCUDACluster`` (``--protocol auto``: UCX over NVLink
between several GPUs) counts the generated graph from GPU memory three times; the third run
is recorded with Dask's task stream. With ``DTRI_RMM_POOL=4GiB`` the workers get an RMM pool
of that size (host staging), and a path instead of a spec is counted from its files, once.
One JSON line per worker count on stdout, in the schema of ``schema.py`` (family
``stage-profile``: ``seconds`` is the recorded run's wall time, ``stage_seconds`` dtri's; the
rest in ``detail``):

* ``seconds``: dtri's wall seconds per stage (:attr:`dtri.CountResult.seconds`);
* ``busy``: per stage (the ``dtri-<stage>-...`` key prefix), per worker, seconds spent
  computing tasks; ``transfer``: the same for seconds spent receiving their inputs;
* ``windows``: per stage, when its first task started and its last one ended (seconds from
  the run's first task); ``longest``: the twelve longest task computations;
* ``kinds``: per kind of task (``<stage>:<word>`` from the key, e.g. ``canonicalize:pick``),
  its tasks, busiest worker's and total busy seconds, and its window;
* ``transfers``: per stage of the keys moved (each worker's ``transfer_incoming_log`` over the
  recorded run), the transfers, their bytes, their seconds added up, and the shortest and
  median transfer's seconds: what one crossing between workers costs at the least.

The generated graph is persisted as a run reads its input, in one block of partitions a
worker (:func:`dtri.prepared.inputs.spread_persist`); left to the scheduler, most partitions
land on one worker, which then does most of the preparation alone.

A stage whose wall time is well above its busiest worker's busy time is bound by scheduling
or barriers, not by the GPUs; busy times that differ between workers show imbalance.
"""

from __future__ import annotations

import math
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # schema.py, one folder up
from schema import command_line, emit, to_schema


def stage_of(key: str) -> str:
    """``dtri-<stage>-<token>-...`` → ``<stage>``; other keys keep their Dask prefix."""
    match = re.match(r"\(?'?dtri-([a-z-]+?)-[0-9a-f]{32}", key)
    return match.group(1) if match else key.split("-")[0].strip("('")


def kind_of(key: str) -> str:
    """``<stage>:<word>`` for ``dtri-<stage>-<token>-<word>-...`` (``split``, ``pick``,
    ``combine``, ...), ``<stage>`` when the index after the token is a number."""
    match = re.match(r"\(?'?dtri-([a-z-]+?)-[0-9a-f]{32}-([a-z]+)?", key)
    if not match:
        return stage_of(key)
    return f"{match.group(1)}:{match.group(2)}" if match.group(2) else match.group(1)


def incoming_transfers(dask_worker) -> list[dict]:
    """A worker's received transfers (run on the worker): start, stop and bytes per key."""
    return [{"start": e["start"], "stop": e["stop"],
             "keys": {str(k): int(v) for k, v in e["keys"].items()}}
            for e in dask_worker.transfer_incoming_log]


def transfer_summary(logs: dict[str, list[dict]], since: dict[str, float]) -> dict:
    """Per stage of the first key moved, over every worker's transfers that started after
    ``since`` (each worker's clock): transfers, bytes, summed seconds, shortest and median."""
    spans: dict[str, list[tuple[float, int]]] = {}
    for worker, entries in logs.items():
        for entry in entries:
            if entry["start"] < since[worker] or not entry["keys"]:
                continue
            stage = stage_of(next(iter(entry["keys"])))
            spans.setdefault(stage, []).append((entry["stop"] - entry["start"],
                                                sum(entry["keys"].values())))
    summary = {}
    for stage, items in sorted(spans.items()):
        seconds = sorted(s for s, _ in items)
        summary[stage] = {"transfers": len(items), "bytes": sum(b for _, b in items),
                          "seconds": round(sum(seconds), 4), "shortest": round(seconds[0], 5),
                          "median": round(seconds[len(seconds) // 2], 5)}
    return summary


def profile(graph: str, workers: int) -> dict:
    import os

    import dask
    from distributed import Client, get_task_stream, wait

    import dtri
    from dtri.input.generate import from_spec, is_spec
    from dtri.options import Backend
    from dtri.prepared.inputs import spread_persist
    from dtri.runtime.caps import memory_caps, resolve_caps
    from dtri.runtime.local_cluster import _start_local_cluster
    from dtri.runtime.timer import StageTimer

    pool = os.environ.get("DTRI_RMM_POOL")
    caps = resolve_caps(memory_caps(rmm_pool_size=pool), Backend.GPU, None) if pool else None
    cluster = _start_local_cluster(Backend.GPU, workers, "auto", caps)
    with Client(cluster) as client:
        edges = graph
        if is_spec(graph):
            frame = from_spec(graph, seed=0, backend="gpu").optimize()
            workers_at = tuple(sorted(client.scheduler_info()["workers"]))
            if len(workers_at) > 1:
                edges = spread_persist(frame, workers_at, StageTimer(client))
            else:
                (edges,) = dask.persist(frame)
            wait(edges)
            for _ in range(2):  # warm: kernels compiled, UCX endpoints open
                result = dtri.count(edges, backend="gpu", workers=workers)
        started = time.perf_counter()
        since = client.run(time.time)
        with get_task_stream(client) as stream:
            result = dtri.count(edges, backend="gpu", workers=workers)
        wall = time.perf_counter() - started
        protocol = client.scheduler.address.split("://")[0]
        logs = client.run(incoming_transfers)
    transfers = transfer_summary(logs, since)
    cluster.close()
    busy: dict[str, dict[str, float]] = {}
    transfer: dict[str, dict[str, float]] = {}
    origin = min((span["start"] for task in stream.data for span in task.get("startstops", ())),
                 default=0.0)
    windows: dict[str, list[float]] = {}
    longest: list[tuple[float, str, str]] = []
    kinds: dict[str, dict] = {}
    for task in stream.data:
        stage = stage_of(str(task["key"]))
        kind = kinds.setdefault(kind_of(str(task["key"])), {"tasks": 0, "busy": {},
                                                            "window": [math.inf, -math.inf]})
        kind["tasks"] += 1
        for span in task.get("startstops", ()):
            if span["action"] == "compute":
                kind["busy"][task["worker"]] = (kind["busy"].get(task["worker"], 0.0)
                                                + span["stop"] - span["start"])
                kind["window"] = [min(kind["window"][0], span["start"]),
                                  max(kind["window"][1], span["stop"])]
            table = busy if span["action"] == "compute" else transfer
            if span["action"] not in ("compute", "transfer"):
                continue
            per_worker = table.setdefault(stage, {})
            worker = task["worker"]
            per_worker[worker] = per_worker.get(worker, 0.0) + span["stop"] - span["start"]
            window = windows.setdefault(stage, [span["start"], span["stop"]])
            window[0], window[1] = min(window[0], span["start"]), max(window[1], span["stop"])
            if span["action"] == "compute":
                longest.append((span["stop"] - span["start"], str(task["key"])[:60], worker))
    rounded = {name: {stage: {w: round(s, 4) for w, s in sorted(per.items())}
                      for stage, per in sorted(table.items())}
               for name, table in (("busy", busy), ("transfer", transfer))}
    return {"graph": graph, "workers": workers, "protocol": protocol,
            "triangles": result.triangles, "wall_seconds": round(wall, 4),
            "seconds": result.seconds, "partitions": result.partitions, "bins": result.bins,
            "tasks": len(stream.data), **rounded,
            "windows": {stage: [round(a - origin, 4), round(b - origin, 4)]
                        for stage, (a, b) in sorted(windows.items(), key=lambda i: i[1][0])},
            "longest": [[round(t, 4), key, worker] for t, key, worker in sorted(longest)[-12:]],
            "transfers": transfers,
            "kinds": {name: {"tasks": k["tasks"],
                             "busiest": round(max(k["busy"].values(), default=0.0), 4),
                             "busy": round(sum(k["busy"].values()), 4),
                             "window": [round(k["window"][0] - origin, 4),
                                        round(k["window"][1] - origin, 4)]}
                      for name, k in sorted(kinds.items(), key=lambda i: i[1]["window"][0])
                      if k["busy"]}}


if __name__ == "__main__":
    from dtri.runtime.local_cluster import quiet_ucx

    quiet_ucx()  # UCX's warning on every worker's standard output, between the JSON lines
    spec, *counts = sys.argv[1:]
    for count in counts or ["1", "2"]:
        emit(to_schema("stage-profile", profile(spec, int(count)), command=command_line()),
             None)

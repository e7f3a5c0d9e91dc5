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
  its tasks, busiest worker's and total busy seconds, and its window.

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


def profile(graph: str, workers: int) -> dict:
    import os

    import dask
    from distributed import Client, get_task_stream, wait

    import dtri
    from dtri.input.generate import from_spec, is_spec
    from dtri.runtime.session import _start_local_cluster, memory_caps, resolve_caps

    pool = os.environ.get("DTRI_RMM_POOL")
    caps = resolve_caps(memory_caps(rmm_pool_size=pool), "gpu", None) if pool else None
    cluster = _start_local_cluster("gpu", workers, "auto", caps)
    with Client(cluster) as client:
        edges = graph
        if is_spec(graph):
            (edges,) = dask.persist(from_spec(graph, seed=0, backend="gpu").optimize())
            wait(edges)
            for _ in range(2):  # warm: kernels compiled, UCX endpoints open
                result = dtri.count(edges, backend="gpu", workers=workers)
        started = time.perf_counter()
        with get_task_stream(client) as stream:
            result = dtri.count(edges, backend="gpu", workers=workers)
        wall = time.perf_counter() - started
        protocol = client.scheduler.address.split("://")[0]
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
            "kinds": {name: {"tasks": k["tasks"],
                             "busiest": round(max(k["busy"].values(), default=0.0), 4),
                             "busy": round(sum(k["busy"].values()), 4),
                             "window": [round(k["window"][0] - origin, 4),
                                        round(k["window"][1] - origin, 4)]}
                      for name, k in sorted(kinds.items(), key=lambda i: i[1]["window"][0])
                      if k["busy"]}}


if __name__ == "__main__":
    spec, *counts = sys.argv[1:]
    for count in counts or ["1", "2"]:
        emit(to_schema("stage-profile", profile(spec, int(count)), command=command_line()),
             None)

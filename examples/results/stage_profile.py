"""Where a multi-GPU count spends its time: busy seconds per stage and per worker.

Usage (on a GPU host): ``python examples/results/stage_profile.py rmat:25 1 2 [4 ...]``.
For each worker count, a fresh ``LocalCUDACluster`` (``--protocol auto``: UCX over NVLink
between several GPUs) counts the generated graph from GPU memory three times; the third run
is recorded with Dask's task stream. One JSON line per worker count on stdout:

* ``seconds``: dtri's wall seconds per stage (:attr:`dtri.CountResult.seconds`);
* ``busy``: per stage (the ``dtri-<stage>-...`` key prefix), per worker, seconds spent
  computing tasks; ``transfer``: the same for seconds spent receiving their inputs;
* ``windows``: per stage, when its first task started and its last one ended (seconds from
  the run's first task); ``longest``: the twelve longest task computations.

A stage whose wall time is well above its busiest worker's busy time is bound by scheduling
or barriers, not by the GPUs; busy times that differ between workers show imbalance.
"""

from __future__ import annotations

import json
import re
import sys
import time


def stage_of(key: str) -> str:
    """``dtri-<stage>-<token>-...`` → ``<stage>``; other keys keep their Dask prefix."""
    match = re.match(r"\(?'?dtri-([a-z-]+?)-[0-9a-f]{32}", key)
    return match.group(1) if match else key.split("-")[0].strip("('")


def profile(graph: str, workers: int) -> dict:
    import dask
    from distributed import Client, get_task_stream, wait

    import dtri
    from dtri.generate import from_spec
    from dtri.session import _start_local_cluster

    cluster = _start_local_cluster("gpu", workers, "auto")
    with Client(cluster) as client:
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
    for task in stream.data:
        stage = stage_of(str(task["key"]))
        for span in task.get("startstops", ()):
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
            "longest": [[round(t, 4), key, worker] for t, key, worker in sorted(longest)[-12:]]}


if __name__ == "__main__":
    spec, *counts = sys.argv[1:]
    for count in counts or ["1", "2"]:
        print(json.dumps(profile(spec, int(count))), flush=True)

"""Where a multi-GPU count spends its time: busy seconds per stage and per worker.

Usage (on a GPU host): ``python examples/results/stage_profile.py rmat:25 1 2 [4 ...]``.
For each worker count, a fresh ``LocalCUDACluster`` (``--protocol auto``: UCX over NVLink
between several GPUs) counts the generated graph from GPU memory three times; the third run
is recorded with Dask's task stream. One JSON line per worker count on stdout:

* ``seconds``: dtri's wall seconds per stage (:attr:`dtri.CountResult.seconds`);
* ``busy``: per stage (the ``dtri-<stage>-...`` key prefix), per worker, seconds spent
  computing tasks; ``transfer``: the same for seconds spent receiving their inputs.

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
    for task in stream.data:
        stage = stage_of(str(task["key"]))
        for span in task.get("startstops", ()):
            table = busy if span["action"] == "compute" else transfer
            if span["action"] not in ("compute", "transfer"):
                continue
            per_worker = table.setdefault(stage, {})
            worker = task["worker"]
            per_worker[worker] = per_worker.get(worker, 0.0) + span["stop"] - span["start"]
    rounded = {name: {stage: {w: round(s, 4) for w, s in sorted(per.items())}
                      for stage, per in sorted(table.items())}
               for name, table in (("busy", busy), ("transfer", transfer))}
    return {"graph": graph, "workers": workers, "protocol": protocol,
            "triangles": result.triangles, "wall_seconds": round(wall, 4),
            "seconds": result.seconds, "partitions": result.partitions, "bins": result.bins,
            "tasks": len(stream.data), **rounded}


if __name__ == "__main__":
    spec, *counts = sys.argv[1:]
    for count in counts or ["1", "2"]:
        print(json.dumps(profile(spec, int(count))), flush=True)

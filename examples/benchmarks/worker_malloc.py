"""Workers' malloc: a count on a local CPU cluster that dtri starts, its workers with glibc's
adaptive malloc (``dtri.adaptive-malloc``, the default) against Dask's
``MALLOC_TRIM_THRESHOLD_=65536``, alternated, each on a fresh cluster.

    python examples/benchmarks/worker_malloc.py rmat:20 --workers 2 --repeat 2 [--out FILE]

One JSON line per adaptive run, in the schema of ``schema.py`` (family ``worker-malloc``):
``seconds`` is dtri's own total (``seconds.total``: the cluster's start excluded),
``stage_seconds`` its stages, ``peers.dask-malloc`` the run with Dask's setting just before it
(its seconds, stages, ``agrees``, ``ratio`` = adaptive / Dask's), and ``detail`` each run's
largest worker resident memory after the count.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # schema.py beside this file
from schema import command_line, emit, record


def counted(graph: str, workers: int, adaptive: bool) -> dict[str, Any]:
    """One count on a fresh local cluster of ``workers`` CPU workers."""
    import dask
    import psutil

    import dtri

    def resident() -> int:
        return psutil.Process().memory_info().rss

    with dask.config.set({"dtri.adaptive-malloc": adaptive}), \
            dtri.Session(backend="cpu", workers=workers) as session:
        result = dtri.count(dtri.generated(graph), session=session)
        client = session.open().client
        rss = max(client.run(resident).values())
    return {"seconds": result.seconds["total"], "stages": result.seconds,
            "triangles": result.triangles, "worker_rss": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graph")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    for _ in range(args.repeat):
        dasks = counted(args.graph, args.workers, adaptive=False)
        adaptive = counted(args.graph, args.workers, adaptive=True)
        emit(record(benchmark="worker-malloc", graph=args.graph, backend="cpu",
                    command=command_line(), seconds=round(adaptive["seconds"], 6),
                    stage_seconds=adaptive["stages"], triangles=adaptive["triangles"],
                    peers={"dask-malloc": {
                        "seconds": round(dasks["seconds"], 6), "stage_seconds": dasks["stages"],
                        "triangles": dasks["triangles"],
                        "agrees": dasks["triangles"] == adaptive["triangles"],
                        "ratio": round(adaptive["seconds"] / dasks["seconds"], 3)}},
                    detail={"workers": args.workers, "worker_rss": adaptive["worker_rss"],
                            "dask_malloc_worker_rss": dasks["worker_rss"]}), args.out)


if __name__ == "__main__":
    main()

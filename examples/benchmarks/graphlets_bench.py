"""Graphlet degrees (issue 18): dtri against FGlT's C++ (one thread) in the same run, on the
same edges, with the frequencies checked equal vertex by vertex. Prints one JSON line per
graph and tool.

Per graph: dtri's best wall time over ``--repeat`` runs from the edges (prepare + graphlets,
in this process) and of the graphlets alone on the prepared graph; with ``--cold``, the wall
time of ``dtri graphlets FILE`` in a fresh process, beside FGlT's executable on the same file
(its process wall time, and the time it reports for the transform). GRAPH is a SNAP file or
``rmat:SCALE``. Each line in the schema of ``schema.py`` (family ``graphlets``: FGlT's line
holds FGlT as its peer).

    python examples/benchmarks/graphlets_bench.py rmat:16 ../shared/data/*.txt.gz --cold
    python examples/benchmarks/graphlets_bench.py rmat:18 --backend gpu --no-peer
    python examples/benchmarks/graphlets_bench.py rmat:20 --backend gpu --no-peer \
        --rmm-pool-size 8GiB
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fglt_peer import fglt_binary, run_fglt
from schema import command_line, emit, to_schema

import dtri
from dtri.input.generate import generated


def snap_edges(path: str) -> np.ndarray:
    """A SNAP edge list as an ``(m, 2)`` int64 array (comment lines skipped)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as handle:
        return np.loadtxt(handle, dtype=np.int64, comments="#", usecols=(0, 1), ndmin=2)


def edges_of(graph: str) -> tuple[Any, np.ndarray]:
    """What dtri reads (a path or a generated graph) and the same edges as an array."""
    if graph.startswith("rmat:"):
        made = generated(graph)
        src, dst = made.maker().arrays((0, made.edges))
        return made, np.stack([src, dst], axis=1)
    return graph, snap_edges(graph)


def host_frame(frame: Any) -> Any:
    return frame.to_pandas() if hasattr(frame, "to_pandas") else frame


def time_dtri(source: Any, options: dict[str, Any], orbits: str, repeat: int
              ) -> tuple[dict[str, Any], Any]:
    """Best total (prepare + graphlets) and best graphlets-only seconds over ``repeat``."""
    best_total = best_graphlets = float("inf")
    frame = None
    session = dtri.Session(**options)
    with session:
        for _ in range(repeat):
            started = time.perf_counter()
            with session.prepare(source) as graph:
                prepared = time.perf_counter()
                frame = host_frame(graph.graphlets(orbits=orbits).compute())
                done = time.perf_counter()
                edges, vertices = graph.edges, graph.vertices
                triangles = graph.count_triangles()  # by the count's own plan, untimed
            best_total = min(best_total, done - started)
            best_graphlets = min(best_graphlets, done - prepared)
    return {"seconds": round(best_total, 4), "graphlets_seconds": round(best_graphlets, 4),
            "edges": edges, "vertices": vertices, "triangles": triangles,
            "sigma4_sum_is_3_triangles": int(frame["sigma4"].sum()) == 3 * triangles}, frame


def fingerprint(frame: Any) -> dict[str, Any]:
    """The frequencies' column sums and a SHA-256 of them in vertex order: equal results on
    two machines or backends give equal fingerprints."""
    ordered = frame.sort_index()
    values = np.ascontiguousarray(ordered.to_numpy(dtype=np.int64))
    digest = hashlib.sha256(ordered.index.to_numpy(dtype=np.int64).tobytes())
    digest.update(values.tobytes())
    return {"orbit_sums": [int(v) for v in values.sum(axis=0)],
            "sha256": digest.hexdigest()}


def cold_cli(graph: str, orbits: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dtri", "graphlets", graph, "--top", "0",
                           "--orbits", orbits], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(done.stderr)
    return round(seconds, 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--orbits", default="all", choices=("all", "sigma0-4"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cold", action="store_true",
                        help="Also time `dtri graphlets FILE` in a fresh process (files only).")
    parser.add_argument("--no-peer", action="store_true", help="Do not run FGlT.")
    parser.add_argument("--rmm-pool-size", help="GPU: a worker under an RMM pool this size.")
    args = parser.parse_args()
    options: dict[str, Any] = {"backend": args.backend}
    if args.rmm_pool_size:
        options.update(workers=1, rmm_pool_size=args.rmm_pool_size)
    else:
        options.update(scheduler="synchronous")
    machine = {"machine": platform.processor() or platform.machine(),
               "python": platform.python_version()}
    for graph in args.graphs:
        source, edges = edges_of(graph)
        name = Path(graph).name.split(".")[0] if not graph.startswith("rmat:") else graph
        found, frame = time_dtri(source, options, args.orbits, args.repeat)
        record = {"graph": name, "tool": "dtri", "backend": args.backend,
                  "orbits": args.orbits, **found, **fingerprint(frame), **machine,
                  **({"rmm_pool_size": args.rmm_pool_size} if args.rmm_pool_size else {})}
        if args.cold and not graph.startswith("rmat:"):
            record["cold_cli_seconds"] = min(cold_cli(graph, args.orbits)
                                             for _ in range(args.repeat))
        emit(to_schema("graphlets", record, command=command_line()), None)
        if args.no_peer or fglt_binary() is None:
            continue
        ids, inverse = np.unique(edges, return_inverse=True)
        dense = inverse.reshape(-1, 2)
        best: dict[str, Any] | None = None
        with tempfile.TemporaryDirectory() as work:
            for _ in range(args.repeat):
                run = run_fglt(dense[:, 0], dense[:, 1], len(ids), Path(work))
                if best is None or run["seconds"] < best["seconds"]:
                    best = run
        assert best is not None
        columns = 16 if args.orbits == "all" else 5
        ours = frame.reindex(ids).to_numpy()
        same = bool((ours == best["net"][:, :columns]).all())
        emit(to_schema("graphlets", {"graph": name, "tool": "fglt", "threads": 1,
                                     "seconds": round(best["seconds"], 4),
                                     "reported_seconds": best["reported_seconds"],
                                     "frequencies_equal_dtri": same, **machine},
                       command=command_line()), None)
        if not same:
            raise SystemExit(f"{name}: dtri and FGlT disagree")


if __name__ == "__main__":
    main()

"""Probe of one GPU's prepare steps and intersection kernels, outside Dask (issue 20).

For each graph: the one-partition preparation step by step (synchronised timings), then the
fused intersection with the hash probes off (search only) and on under several tunings,
each count checked against the first, with the edges and probes of each class. Prints one
JSON object per line, in the schema of ``schema.py`` (family ``kernel-probe``: a line per
tuning as it is timed, then the graph's line, its preparation as ``stage_seconds``).

    python examples/benchmarks/probes/kernel_probe.py rmat:22 rmat:24 [--orientation degree id]
    python examples/benchmarks/probes/kernel_probe.py rmat:26 --pick 11,1 --rounds 3 [--credits]

``--pick`` runs the tunings of those indexes in ``TUNINGS``, ``--rounds`` times alternated;
``--credits`` times the kernel that also credits each triangle's edges (what per-vertex
triangles run).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import cupy
import dask

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # schema.py, one folder up
from schema import command_line, emit, to_schema

from dtri.input.generate import generated
from dtri.kernels.canonicalize import canonical_keys, partition_vertices, vertex_count
from dtri.kernels.csr import from_keys
from dtri.kernels.intersect import intersect
from dtri.kernels.orient import degree_counts, orient_keys, rank_and_order


def timed(seconds: dict[str, float], name: str, run: Any) -> Any:
    cupy.cuda.Device().synchronize()
    started = time.perf_counter()
    value = run()
    cupy.cuda.Device().synchronize()
    seconds[name] = round(time.perf_counter() - started, 6)
    return value


def prepare(spec: str, orientation: str) -> tuple[Any, dict[str, float]]:
    graph = generated(spec)
    frame = graph.maker("gpu")((0, graph.edges))
    seconds: dict[str, float] = {}
    vertices = timed(seconds, "vertices", lambda: partition_vertices(frame))
    n = vertex_count(vertices)
    keys = timed(seconds, "canonical_keys", lambda: canonical_keys(frame, vertices))
    degree = timed(seconds, "degree", lambda: degree_counts(keys, n))
    rank, _ = timed(seconds, "rank", lambda: rank_and_order(degree, orientation))
    oriented = timed(seconds, "orient", lambda: orient_keys(keys, rank, n))
    keys = None
    csr = timed(seconds, "sort_csr", lambda: from_keys(oriented, n, 0, n))
    seconds["total"] = round(sum(seconds.values()), 6)
    return csr, seconds


def classes(csr: Any) -> dict[str, Any]:
    """Edges and work per class under the current tuning (work counters)."""
    from dtri.kernels.intersect.cuda import (
        COUNT,
        THREADS_PER_BLOCK,
        blocks_for,
        kernel,
        max_table_bits,
    )
    from dtri.kernels.strategy import HASHED, hash_tuning

    tuning = hash_tuning()
    n = csr.edges
    rows = csr.offsets.shape[0] - 1
    row_of = cupy.empty(n, dtype=cupy.int32)
    kernel("edge_rows", COUNT)((blocks_for(rows),), (THREADS_PER_BLOCK,), (
        csr.offsets, cupy.int64(rows), cupy.int64(0), cupy.int64(n), row_of))
    cls = cupy.empty(n, dtype=cupy.uint8)
    dummy = cupy.zeros(1, dtype=cupy.uint8)
    hash_max = 1 << (max_table_bits(COUNT) - 1) if tuning.enabled else 0
    kernel("classify_edges", COUNT)((blocks_for(n),), (THREADS_PER_BLOCK,), (
        cupy.int64(0), cupy.int64(n), row_of, csr.dst, csr.offsets, csr.offsets,
        cupy.int64(0), cupy.int64(rows), dummy, dummy, dummy, cupy.int32(0), cupy.int32(0),
        cupy.int64(tuning.min_members), cupy.int64(hash_max), cupy.float64(tuning.probe_cost),
        cls, cupy.zeros(1, dtype=cupy.uint64)))  # the searched edges' reads, unused here
    e = cupy.arange(n, dtype=cupy.int64)
    a = csr.offsets[row_of.astype(cupy.int64) + 1] - e - 1
    v = csr.dst.astype(cupy.int64)
    b = csr.offsets[v + 1] - csr.offsets[v]
    shorter, longer = cupy.minimum(a, b), cupy.maximum(a, b)
    steps = shorter * cupy.ceil(cupy.log2(longer + 1))
    out = {}
    for c in range(7):
        mask = cls == c
        out["hashed" if c == HASHED else f"search{c}"] = {
            "edges": int(mask.sum()),
            "work": int(a[mask].sum() if c == HASHED else steps[mask].sum())}
    out["search_steps_if_all_searched"] = int(steps[cls != 255].sum())
    out["largest_out_degree"] = int((csr.offsets[1:] - csr.offsets[:-1]).max())
    return out


class LaunchTimer:
    """Synchronised wall time per CUDA kernel name and for the hash pieces' preparation, by
    wrapping :func:`dtri.kernels.intersect.cuda.kernel` and
    :func:`dtri.kernels.intersect.cuda.run_pieces`."""

    def __init__(self) -> None:
        import dtri.kernels.intersect.cuda as cuda

        self.cuda = cuda
        self.seconds: dict[str, float] = {}
        self.kernel, self.run_pieces = cuda.kernel, cuda.run_pieces

    def add(self, name: str, started: float) -> None:
        cupy.cuda.Device().synchronize()
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started

    def __enter__(self) -> LaunchTimer:
        def kernel(name: str, mode: int) -> Any:
            function = self.kernel(name, mode)

            class Timed:
                def __setattr__(inner, key: str, value: Any) -> None:
                    setattr(function, key, value)

                def __call__(inner, *args: Any, **kwargs: Any) -> Any:
                    cupy.cuda.Device().synchronize()
                    started = time.perf_counter()
                    function(*args, **kwargs)
                    self.add(name.split("<")[0], started)

            return Timed()

        def run_pieces(*args: Any) -> Any:
            cupy.cuda.Device().synchronize()
            started = time.perf_counter()
            self.run_pieces(*args)
            self.add("run_pieces_total", started)

        self.cuda.kernel, self.cuda.run_pieces = kernel, run_pieces
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cuda.kernel, self.cuda.run_pieces = self.kernel, self.run_pieces


def stage_seconds(csr: Any) -> dict[str, float]:
    """One count's seconds per kernel, the pieces' preparation and the rest."""
    with LaunchTimer() as timer:
        cupy.cuda.Device().synchronize()
        started = time.perf_counter()
        intersect(csr, csr)
        timer.add("total", started)
    seconds = timer.seconds
    launched = sum(v for k, v in seconds.items() if k not in ("total", "run_pieces_total"))
    pieces = seconds.get("run_pieces_total", 0.0)
    seconds["pieces_prep"] = pieces - sum(seconds.get(k, 0.0) for k in
                                          ("bucket_by_target", "hash_pieces", "hash_warps"))
    seconds["other_prep"] = seconds["total"] - launched - seconds["pieces_prep"]
    return {k: round(v, 6) for k, v in seconds.items()}


def count_timed(csr: Any, repeat: int, credits: bool = False) -> tuple[int, float]:
    best, found = float("inf"), None
    for _ in range(repeat):
        cupy.cuda.Device().synchronize()
        started = time.perf_counter()
        found = intersect(csr, csr, credits=credits).triangles
        cupy.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - started)
    return found, round(best, 6)


TUNINGS = [
    {"dtri.kernel-tuning.hash-probes": False},
    {"dtri.kernel-tuning.hash-probes": True},
    {"dtri.kernel-tuning.hash-warp-table-bits": 0},
    {"dtri.kernel-tuning.hash-warp-table-bits": 7},
    {"dtri.kernel-tuning.hash-warp-table-bits": 10},
    {"dtri.kernel-tuning.hash-piece-probes": 8192},
    {"dtri.kernel-tuning.hash-piece-probes": 131072},
    {"dtri.kernel-tuning.hash-probe-cost": 2.0},
    {"dtri.kernel-tuning.hash-min-members": 2},
    {"dtri.kernel-tuning.hash-slots-per-member": 4},
    {"dtri.kernel-tuning.hash-slots-per-member": 8},
    {"dtri.kernel-tuning.hash-slots-per-member": 2},
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--orientation", nargs="+", default=["degree"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tunings", type=int, default=len(TUNINGS))
    parser.add_argument("--pick", help="the tunings to run, by index in TUNINGS (0,1,9): "
                                       "instead of the first --tunings")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the tunings this many times, alternated")
    parser.add_argument("--credits", action="store_true",
                        help="time the kernel with the credits (per-vertex triangles)")
    args = parser.parse_args()
    chosen = [TUNINGS[int(i)] for i in args.pick.split(",")] if args.pick \
        else TUNINGS[: args.tunings]
    for spec in args.graphs:
        for orientation in args.orientation:
            csr, seconds = prepare(spec, orientation)
            record: dict[str, Any] = {"graph": spec, "orientation": orientation,
                                      "edges": csr.edges, "prepare_seconds": seconds,
                                      "runs": []}
            reference = None
            for tuning in [t for _ in range(args.rounds) for t in chosen]:
                with dask.config.set(tuning):
                    found, best = count_timed(csr, args.repeat, args.credits)
                    work = classes(csr)
                    work["stage_seconds"] = stage_seconds(csr)
                reference = found if reference is None else reference
                record["runs"].append({"tuning": tuning, "triangles": found, "seconds": best,
                                       "agrees": found == reference, "classes": work})
                emit(to_schema("kernel-probe", {"graph": spec, "orientation": orientation,
                                                "tuning": tuning, "seconds": best,
                                                "agrees": found == reference,
                                                "credits": args.credits},
                               command=command_line()), None)
            emit(to_schema("kernel-probe", record, command=command_line()), None)
            del csr
            cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()

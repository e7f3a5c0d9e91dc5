"""The CPU kernel with and without hash probes, in the same process on the same graphs.

For each graph: ``dtri.count`` in this process (synchronous scheduler, numba's kernels on
every core), best of ``--repeat``, with the kernel constant ``hash-probes`` off (search only) and on
(the default), then the per-vertex triangles likewise (the credits kernel); the counts must agree.
One JSON line per graph, in the schema of ``schema.py`` (family ``cpu-hash``: ``seconds`` is
the count with hash probes, the peer ``dtri-search`` the count without).

    python examples/benchmarks/cpu_hash_bench.py rmat:16 rmat:18 FILE.txt.gz ... [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import dask
from schema import command_line, emit, to_schema


def best(run: Any, repeat: int, graph: Any) -> tuple[Any, float]:
    """The fastest of ``repeat`` runs, the graph's cached results cleared before each."""
    seconds, value = float("inf"), None
    for _ in range(repeat):
        graph.cache.clear()
        started = time.perf_counter()
        value = run()
        seconds = min(seconds, time.perf_counter() - started)
    return value, round(seconds, 6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import dtri
    from dtri.bench import cpu_name, generated_graph, input_array, is_spec

    for graph in args.graphs:
        edges = input_array(generated_graph(graph, seed=0) if is_spec(graph) else graph)
        record: dict[str, Any] = {"graph": graph, "device": cpu_name(),
                                  "cores": os.cpu_count(), "repeat": args.repeat}
        for probes in (False, True):
            with dask.config.set({"dtri.kernel-tuning.hash-probes": probes}), \
                    dtri.prepare(edges, backend="cpu", scheduler="synchronous") as prepared:
                count, count_seconds = best(
                    lambda p=prepared: p.count().triangles, args.repeat, prepared)
                triangles, vertex_seconds = best(
                    lambda p=prepared: int(p.triangles().sum().compute()) // 3, args.repeat,
                    prepared)
            record["hash" if probes else "search"] = {
                "triangles": count, "count_seconds": count_seconds,
                "per_vertex_seconds": vertex_seconds, "per_vertex_sum_agrees": triangles == count}
        record["agrees"] = record["hash"]["triangles"] == record["search"]["triangles"]
        emit(to_schema("cpu-hash", record, command=command_line()), None)


if __name__ == "__main__":
    main()

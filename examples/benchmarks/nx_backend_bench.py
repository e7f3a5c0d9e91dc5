"""The NetworkX backend (issue 19): ``nx.triangles(G, backend="dtri")`` against NetworkX's own
``nx.triangles(G)`` on the same ``networkx.Graph``, in the same run. dtri's time includes the
conversion (the graph's conversion cache is cleared before each run); both results are
compared node by node. Prints one JSON line per graph, in the schema of ``schema.py``
(family ``nx-backend``: NetworkX's own as the peer ``networkx``).

    python examples/benchmarks/nx_backend_bench.py rmat:18
    python examples/benchmarks/nx_backend_bench.py rmat:18 --backend gpu --nx-repeat 0
"""

from __future__ import annotations

import argparse
import platform
import time

import networkx as nx
from schema import command_line, emit, to_schema

from dtri.input.generate import generated


def networkx_graph(spec: str) -> nx.Graph:
    """The generated graph as a ``networkx.Graph`` (self-loops dropped), built untimed."""
    made = generated(spec)
    src, dst = made.maker().arrays((0, made.edges))
    keep = src != dst
    graph = nx.Graph()
    graph.add_edges_from(zip(src[keep].tolist(), dst[keep].tolist(), strict=True))
    return graph


def best(call, repeat: int, before=None) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        if before:
            before()
        started = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--backend", default="cpu", choices=("cpu", "gpu"),
                        help="dtri's backend (nx.config.backends.dtri.backend)")
    parser.add_argument("--repeat", type=int, default=3, help="dtri runs (best is kept)")
    parser.add_argument("--nx-repeat", type=int, default=1,
                        help="NetworkX runs (0: do not run NetworkX)")
    args = parser.parse_args()
    nx.config.warnings_to_ignore.add("cache")
    nx.config.backends.dtri.backend = args.backend
    for spec in args.graphs:
        graph = networkx_graph(spec)
        seconds, ours = best(lambda g=graph: nx.triangles(g, backend="dtri"), args.repeat,
                             before=graph.__networkx_cache__.clear)
        record = {"graph": spec, "nodes": graph.number_of_nodes(),
                  "edges": graph.number_of_edges(), "backend": args.backend,
                  "dtri_seconds": round(seconds, 4), "triangles": sum(ours.values()) // 3,
                  "machine": platform.processor() or platform.machine()}
        if args.nx_repeat:
            theirs_seconds, theirs = best(lambda g=graph: nx.triangles(g), args.nx_repeat)
            record.update(networkx_seconds=round(theirs_seconds, 4),
                          ratio=round(seconds / theirs_seconds, 4),
                          equal=ours == theirs)
        emit(to_schema("nx-backend", record, command=command_line()), None)


if __name__ == "__main__":
    main()

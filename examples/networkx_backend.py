"""NetworkX code, run by dtri: the karate club's triangles, clustering and 4-truss through
NetworkX's backend dispatch, each equal to NetworkX's own.

Run from the repository root:  python examples/networkx_backend.py
"""

from pathlib import Path

import networkx as nx

KARATE = Path(__file__).resolve().parent / "karate.txt"


def main() -> None:
    graph = nx.read_edgelist(KARATE, nodetype=int)
    nx.config.warnings_to_ignore.add("cache")  # the graph is not changed between the calls
    # 1. per call: converted once (NetworkX caches the conversion, dtri the prepared graph)
    triangles = nx.triangles(graph, backend="dtri")
    print("triangles at vertex 1:", triangles[1], "(NetworkX:", nx.triangles(graph)[1], ")")
    clustering = nx.clustering(graph, backend="dtri")  # reuses the triangles: no recount
    print("clustering of vertex 1:", clustering[1])
    print("transitivity:", nx.transitivity(graph, backend="dtri"))
    truss = nx.k_truss(graph, 4, backend="dtri")  # a networkx.Graph, attributes kept
    print("4-truss:", truss.number_of_nodes(), "nodes,", truss.number_of_edges(), "edges")
    # 2. dtri's settings: where it runs (a scheduler address runs it on that cluster)
    nx.config.backends.dtri.backend = "cpu"
    print("on the CPU:", sum(nx.triangles(graph, backend="dtri").values()) // 3, "triangles")


if __name__ == "__main__":
    main()

"""Graph conversion between NetworkX and the backend.

:class:`DtriGraph` holds what dtri needs of a NetworkX graph: its node labels in NetworkX's
order, the simple undirected edges as an ``(m, 2)`` array of label positions (self-loops
counted, then dropped), its adjacency rows as they are (each undirected edge once, each arc of
a directed graph, self-loops included) with the weights asked for, its graph attributes and
the NetworkX graph it came from (for the attributes a k-truss keeps). The functions
(:mod:`dtri.nx.backend`) cache their results on it, and NetworkX caches it on the original.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

import networkx as nx
import numpy as np


class DtriGraph:
    """A simple graph (undirected, or directed) converted from NetworkX for dtri."""

    __networkx_backend__ = "dtri"

    def __init__(self, nodes: list[Hashable], edges: np.ndarray, self_loops: int = 0,
                 graph: dict | None = None, source: nx.Graph | None = None,
                 index: dict[Hashable, int] | None = None, directed: bool = False,
                 rows: np.ndarray | None = None, weights: dict[str, np.ndarray] | None = None):
        self.nodes = nodes
        self.directed = directed
        self.rows = edges if rows is None else rows
        """Each undirected edge once, or each arc, self-loops included (label positions)."""
        self.weights = {} if weights is None else weights
        """Per attribute asked for in the conversion: its values along :attr:`rows`."""
        self.index = {v: i for i, v in enumerate(nodes)} if index is None else index
        self.edges = edges
        self.self_loops = self_loops
        self.graph = graph if graph is not None else {}
        self.source = source
        self.cache: dict[str, Any] = {}
        self.__networkx_cache__: dict = {}

    def is_directed(self) -> bool:
        return self.directed

    def is_multigraph(self) -> bool:
        return False

    def number_of_nodes(self) -> int:
        return len(self.nodes)

    def number_of_edges(self) -> int:
        return int(self.edges.shape[0])

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Any:
        return iter(self.nodes)

    def __contains__(self, node: Any) -> bool:
        try:
            return node in self.index
        except TypeError:  # unhashable: a container of nodes, as NetworkX answers
            return False

    def nbunch_iter(self, nbunch: Any) -> Iterable[Hashable]:
        """The nodes of ``nbunch`` that are in the graph (one node, or a container), in
        its order, as :meth:`networkx.Graph.nbunch_iter`."""
        if nbunch is None:
            return iter(self.nodes)
        if nbunch in self:
            return iter([nbunch])
        return (n for n in _iterable(nbunch) if n in self)


def _iterable(nbunch: Any) -> Iterable[Any]:
    try:
        return iter(nbunch)
    except TypeError as error:
        raise nx.NetworkXError(f"nbunch is not a node or a sequence of nodes: {nbunch}") \
            from error


# ----------------------------------------------------------------- conversion

def convert_from_nx(graph: nx.Graph, edge_attrs: Any = None, node_attrs: Any = None,
                    preserve_edge_attrs: bool = False, preserve_node_attrs: bool = False,
                    preserve_graph_attrs: bool = False, name: str | None = None,
                    graph_name: str | None = None) -> DtriGraph:
    """A NetworkX graph as a :class:`DtriGraph`: one dictionary lookup per adjacency entry,
    the rest array code. The weights of ``edge_attrs`` (a dict of attribute to default, as
    NetworkX passes them) are read along the rows; other attributes stay on the original
    (kept by reference)."""
    # a multigraph (taken by MULTIGRAPH_FUNCTIONS alone, none weighted) as its simple graph:
    # each neighbour is one key of a node's adjacency, however many edges join them
    multigraph = graph.is_multigraph()
    nodes = list(graph)
    index = {v: i for i, v in enumerate(nodes)}
    adjacency = graph._adj
    sizes = np.fromiter((len(nbrs) for nbrs in adjacency.values()), dtype=np.int64,
                        count=len(nodes))
    total = int(sizes.sum())
    targets = np.fromiter((index[v] for nbrs in adjacency.values() for v in nbrs),
                          dtype=np.int64, count=total)
    sources = np.repeat(np.arange(len(nodes), dtype=np.int64), sizes)
    self_loops = int(np.count_nonzero(sources == targets))
    directed = graph.is_directed()
    # undirected: each edge is in both lists, keep it once; directed: every arc is a row
    kept = np.ones(total, dtype=bool) if directed else sources <= targets
    rows = np.stack([sources[kept], targets[kept]], axis=1)
    weights = {}
    asked = edge_attrs.items() if isinstance(edge_attrs, dict) and not multigraph else ()
    for attr, default in asked:
        values = np.fromiter((d.get(attr, default) for nbrs in adjacency.values()
                              for d in nbrs.values()), dtype=np.float64, count=total)
        weights[attr] = values[kept]
    once = sources != targets
    edges = np.stack([np.minimum(sources, targets)[once], np.maximum(sources, targets)[once]],
                     axis=1)
    if directed:  # the underlying simple undirected graph: each vertex pair once
        edges = np.unique(edges, axis=0) if edges.shape[0] else edges
    else:
        edges = edges[sources[once] < targets[once]]
    return DtriGraph(nodes, edges, self_loops, dict(graph.graph), graph, index, directed,
                     rows, weights)


def row_weights(graph: DtriGraph, attr: str) -> np.ndarray:
    """The values of ``attr`` along the graph's rows (1 where an edge has none, NetworkX's
    default): from the conversion, or read from the original graph."""
    if attr not in graph.weights:
        if graph.source is None:
            raise NotImplementedError(f"the graph was converted without {attr!r}")
        rows = graph.rows.tolist()
        adjacency = graph.source._adj
        graph.weights[attr] = np.fromiter(
            (adjacency[graph.nodes[u]][graph.nodes[v]].get(attr, 1) for u, v in rows),
            dtype=np.float64, count=len(rows))
    return graph.weights[attr]


def convert_to_nx(obj: Any, *, name: str | None = None) -> Any:
    """A :class:`DtriGraph` as a NetworkX graph: the graph it came from on its nodes and
    edges (attributes and NetworkX's node and adjacency order kept), or a new graph of its
    labels; anything else as it is."""
    if not isinstance(obj, DtriGraph):
        return obj
    pairs = [(obj.nodes[u], obj.nodes[v]) for u, v in obj.edges.tolist()]
    if obj.source is not None:  # as the original's copy() is: its orders and attributes
        source, nodes = obj.source, set(obj.nodes)
        kept = set(pairs) | {(v, u) for u, v in pairs}
        result = source.__class__()
        result.graph.update(source.graph)
        result.add_nodes_from((n, d.copy()) for n, d in source._node.items() if n in nodes)
        result.add_edges_from((u, v, d.copy()) for u, nbrs in source._adj.items() if u in nodes
                              for v, d in nbrs.items() if (u, v) in kept)
        return result
    result = nx.Graph(obj.graph)
    result.add_nodes_from(obj.nodes)
    result.add_edges_from(pairs)
    return result



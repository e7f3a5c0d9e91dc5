"""The NetworkX backend interface (the ``networkx.backends`` entry point): graph conversion,
which calls dtri takes, and the functions themselves.

:class:`DtriGraph` holds what dtri needs of a NetworkX graph: its node labels in NetworkX's
order, the simple undirected edges as an ``(m, 2)`` array of label positions (self-loops
counted, then dropped), its graph attributes and the NetworkX graph it came from (for the
attributes a k-truss keeps). Each function prepares the edges with :func:`dtri.prepare`
(settings from ``nx.config.backends.dtri``), runs the analytic and maps the results back to the
labels; the prepared graph (where it is prepared in this process), the per-vertex triangles
and the degrees are cached on the converted graph, which NetworkX caches on the original, so
``clustering`` after ``triangles`` counts nothing again and ``k_truss`` prepares nothing.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import networkx as nx
import numpy as np

from dtri.nx.info import FUNCTIONS


class DtriGraph:
    """A simple undirected graph converted from NetworkX for dtri."""

    __networkx_backend__ = "dtri"

    def __init__(self, nodes: list[Hashable], edges: np.ndarray, self_loops: int = 0,
                 graph: dict | None = None, source: nx.Graph | None = None,
                 index: dict[Hashable, int] | None = None):
        self.nodes = nodes
        self.index = {v: i for i, v in enumerate(nodes)} if index is None else index
        self.edges = edges
        self.self_loops = self_loops
        self.graph = graph if graph is not None else {}
        self.source = source
        self.cache: dict[str, Any] = {}
        self.__networkx_cache__: dict = {}

    def is_directed(self) -> bool:
        return False

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
    the rest array code. Attributes stay on the original (kept by reference)."""
    if graph.is_directed():
        raise NotImplementedError("dtri takes undirected graphs")
    # a multigraph (taken by MULTIGRAPH_FUNCTIONS alone) as its simple graph: each neighbour
    # is one key of a node's adjacency, however many edges join them
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
    once = sources < targets  # each undirected edge is in both lists: keep it once
    edges = np.stack([sources[once], targets[once]], axis=1)
    return DtriGraph(nodes, edges, self_loops, dict(graph.graph), graph, index)


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


# ----------------------------------------------------------------- which calls dtri takes

def _graph_argument(name: str, args: tuple, kwargs: dict) -> Any:
    func = getattr(nx, name)
    bound = inspect.signature(func).bind_partial(*args, **kwargs)
    return bound.arguments.get("G"), bound.arguments


MULTIGRAPH_FUNCTIONS = ("all_triangles",)
"""The functions whose answer on a multigraph is that of its simple graph: NetworkX's
``all_triangles`` knows a triangle by its nodes, ignoring parallel edges."""


def can_run(name: str, args: tuple, kwargs: dict) -> bool | str:
    """Whether dtri implements this call: undirected simple graphs, no weights."""
    if name not in FUNCTIONS:
        return f"dtri does not implement {name}"
    graph, arguments = _graph_argument(name, args, kwargs)
    if graph is None:
        return "no graph given"
    if graph.is_directed():
        return "dtri counts undirected graphs"
    if graph.is_multigraph() and name not in MULTIGRAPH_FUNCTIONS:
        return "dtri counts simple graphs (no multigraphs)"
    if arguments.get("weight") is not None:
        return "dtri computes unweighted clustering"
    return True


def should_run(name: str, args: tuple, kwargs: dict) -> bool | str:
    """Whether dtri is worth it when NetworkX picks backends by itself: graphs of fewer than
    ``nx.config.backends.dtri.min_edges`` edges stay in NetworkX."""
    graph, _ = _graph_argument(name, args, kwargs)
    smallest = _config().get("min_edges", 0) or 0
    if graph is not None and graph.number_of_edges() < smallest:
        return (f"fewer than {smallest} edges (nx.config.backends.dtri.min_edges): "
                "NetworkX is quicker")
    return True


# ----------------------------------------------------------------- the functions

def _config() -> dict[str, Any]:
    config = nx.config.backends.get("dtri") if hasattr(nx.config, "backends") else None
    return dict(config.items()) if config is not None else {}


def _options() -> dict[str, Any]:
    """dtri's options from ``nx.config.backends.dtri`` (unset ones keep dtri's defaults)."""
    return {key: value for key, value in _config().items()
            if key in ("backend", "scheduler", "workers", "memory_budget") and value is not None}


def _by_node(graph: DtriGraph, series: Any) -> np.ndarray:
    """A dtri per-vertex result (a pandas series indexed by node position) as an array over
    every node (0 for the nodes without an edge)."""
    values = np.zeros(len(graph.nodes), dtype=series.dtype if len(series) else np.int64)
    values[series.index.to_numpy()] = series.to_numpy()
    return values


@contextmanager
def _prepared(graph: DtriGraph) -> Iterator[Any]:
    """The converted graph prepared by dtri. One prepared in this process (no cluster: a
    graph that fits one task) is cached on the converted graph, which NetworkX caches on the
    original, so later calls prepare nothing again (as nx-cugraph keeps its converted graph
    on the GPU); one on a cluster is released after the call, with the cluster it started."""
    prepared = graph.cache.get("prepared")
    if prepared is None or prepared.released:
        import dtri

        prepared = dtri.prepare(graph.edges, **_options())
    try:
        yield prepared
    finally:
        if prepared.runtime.client is None:
            graph.cache["prepared"] = prepared
        else:
            graph.cache.pop("prepared", None)
            prepared.release()


def _triangle_counts(graph: DtriGraph) -> np.ndarray:
    """Triangles at every node (cached on the converted graph)."""
    if "triangles" not in graph.cache:
        if graph.edges.shape[0] == 0:
            graph.cache["triangles"] = np.zeros(len(graph.nodes), dtype=np.int64)
        else:
            with _prepared(graph) as prepared:
                triangles = prepared.triangles().to_backend("pandas").compute()
                graph.cache["triangles"] = _by_node(graph, triangles)
    return graph.cache["triangles"]


def _degrees(graph: DtriGraph) -> np.ndarray:
    """Degrees without self-loops, by node position (cached)."""
    if "degrees" not in graph.cache:
        graph.cache["degrees"] = np.bincount(graph.edges.ravel(), minlength=len(graph.nodes))
    return graph.cache["degrees"]


def triangles(G: DtriGraph, nodes: Any = None) -> dict | int:
    """``networkx.triangles``."""
    counts = _triangle_counts(G)
    if nodes is not None and nodes in G:
        return int(counts[G.index[nodes]])
    chosen = G.nodes if nodes is None else G.nbunch_iter(nodes)
    return {v: int(counts[G.index[v]]) for v in chosen}


def _clustering_values(graph: DtriGraph, chosen: Iterable[Hashable]) -> dict:
    counts, degrees = _triangle_counts(graph), _degrees(graph)
    values = {}
    for v in chosen:
        i = graph.index[v]
        t, d = 2 * int(counts[i]), int(degrees[i])
        values[v] = 0 if t == 0 else t / (d * (d - 1))  # NetworkX's expression and types
    return values


def clustering(G: DtriGraph, nodes: Any = None, weight: Any = None) -> dict | float:
    """``networkx.clustering`` of an undirected graph, unweighted."""
    if weight is not None:
        raise NotImplementedError("dtri computes unweighted clustering")
    if nodes is not None and nodes in G:
        return _clustering_values(G, [nodes])[nodes]
    return _clustering_values(G, G.nodes if nodes is None else G.nbunch_iter(nodes))


def average_clustering(G: DtriGraph, nodes: Any = None, weight: Any = None,
                       count_zeros: bool = True) -> float:
    """``networkx.average_clustering``, summed in the same order as NetworkX."""
    found = clustering(G, nodes, weight=weight)
    c = list(found.values()) if isinstance(found, dict) else [found]
    if not count_zeros:
        c = [v for v in c if abs(v) > 0]
    return sum(c) / len(c)


def transitivity(G: DtriGraph) -> float:
    """``networkx.transitivity``: exact integer sums, divided once."""
    if len(G.nodes) == 0:
        return 0
    degrees = _degrees(G).astype(object)
    triangles_at = 2 * int(_triangle_counts(G).sum())
    pairs = int((degrees * (degrees - 1)).sum())
    return 0 if triangles_at == 0 else triangles_at / pairs


def k_truss(G: DtriGraph, k: int) -> nx.Graph:
    """``networkx.k_truss``: dtri's peeling, returned as a NetworkX graph that keeps the
    graph, node and edge attributes of the graph it came from."""
    if G.self_loops:
        raise nx.NetworkXNotImplemented(
            "Input graph has self loops which is not permitted; "
            "Consider using G.remove_edges_from(nx.selfloop_edges(G)).")
    kept = np.zeros((0, 2), dtype=np.int64)
    if G.edges.shape[0]:
        # NetworkX takes any real k (an edge stays while its support is at least k - 2): below
        # 3 every edge stays, and a fractional k keeps what the next integer does
        with _prepared(G) as prepared, prepared.k_truss(max(math.ceil(k), 0)) as truss:
            support = truss.edge_support().to_backend("pandas").compute()
        kept = np.stack([support["u"].to_numpy(), support["v"].to_numpy()], axis=1)
    present = np.unique(kept)  # the nodes left, in the original's order
    return convert_to_nx(DtriGraph([G.nodes[i] for i in present.tolist()],
                                   np.searchsorted(present, kept), 0, dict(G.graph), G.source))


def all_triangles(G: DtriGraph, nbunch: Any = None) -> Iterator[tuple]:
    """``networkx.all_triangles``: each triangle once (with ``nbunch``, those with a node of
    it), from dtri's listing. Each tuple is in NetworkX's node order: the graph's, or with
    ``nbunch``, its nodes first, then their neighbours."""
    if nbunch is None:
        chosen, order = None, np.arange(len(G.nodes), dtype=np.int64)
    else:
        chosen = list(dict.fromkeys(G.nbunch_iter(nbunch)))
        numbers = _networkx_numbers(G, chosen)
        order = np.full(len(G.nodes), len(G.nodes), dtype=np.int64)
        order[list(numbers)] = list(numbers.values())
    if G.edges.shape[0] == 0 or chosen == []:
        return iter(())
    with _prepared(G) as prepared:
        found = prepared.list_triangles(vertices=None if chosen is None else
                                        [G.index[v] for v in chosen])
        listed = found.to_backend("pandas").compute().to_numpy()
    by_order = np.take_along_axis(listed, np.argsort(order[listed], axis=1), axis=1)
    by_order = by_order[np.lexsort(order[by_order].T[::-1])]
    nodes = G.nodes
    return ((nodes[a], nodes[b], nodes[c]) for a, b, c in by_order.tolist())


def _networkx_numbers(graph: DtriGraph, chosen: list[Hashable]) -> dict[int, int]:
    """The numbers ``all_triangles(G, nbunch)`` gives nodes, by position: the nodes of
    ``nbunch`` in order, then the neighbours of each not in it, in adjacency order (the
    original graph's; without one, by position), a node met again taking the later number,
    as NetworkX's dict of them does."""
    numbers = {graph.index[v]: i for i, v in enumerate(chosen)}
    inside = set(numbers)
    if graph.source is not None:
        adjacency = graph.source._adj
        met = (graph.index[v] for u in chosen for v in adjacency[u])
    else:
        edges = graph.edges
        met = (int(n) for u in inside for n in np.concatenate(
            [edges[edges[:, 0] == u, 1], edges[edges[:, 1] == u, 0]]))
    number = len(numbers)
    for position in met:
        if position not in inside:
            numbers[position] = number
        number += position not in inside
    return numbers


class BackendInterface:
    """What NetworkX loads from the ``networkx.backends`` entry point."""

    convert_from_nx = staticmethod(convert_from_nx)
    convert_to_nx = staticmethod(convert_to_nx)
    can_run = staticmethod(can_run)
    should_run = staticmethod(should_run)
    triangles = staticmethod(triangles)
    clustering = staticmethod(clustering)
    average_clustering = staticmethod(average_clustering)
    transitivity = staticmethod(transitivity)
    k_truss = staticmethod(k_truss)
    all_triangles = staticmethod(all_triangles)


backend_interface = BackendInterface()

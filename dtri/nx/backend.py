"""The NetworkX backend interface (the ``networkx.backends`` entry point): which calls dtri
takes, and the functions themselves.

Each function works on the converted graph (:class:`~dtri.nx.graph.DtriGraph`). The
triangle-count family prepares its edges with :func:`dtri.prepare` (settings from
``nx.config.backends.dtri``), runs the analytic and maps the results back to the labels; the
prepared graph (where it is prepared in this process), the per-vertex triangles, the edge
support and the degrees are cached on the converted graph, which NetworkX caches on the
original, so ``clustering`` after ``triangles`` counts nothing again and ``k_truss`` prepares
nothing. Weighted and directed clustering take the graph's rows with their weights through
:func:`dtri.clustering`: dtri lists the triangles, and merges attach the weights (the
prepared graph keeps none).
"""

from __future__ import annotations

import inspect
import math
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import networkx as nx
import numpy as np

from dtri.nx.graph import DtriGraph, convert_to_nx, row_weights
from dtri.nx.graph import convert_from_nx as convert_from_nx  # the interface names it
from dtri.nx.info import FUNCTIONS, GRAPH_RESULTS

# ----------------------------------------------------------------- which calls dtri takes

def _graph_argument(name: str, args: tuple, kwargs: dict) -> Any:
    func = getattr(nx, name)
    bound = inspect.signature(func).bind_partial(*args, **kwargs)
    return bound.arguments.get("G"), bound.arguments


DIRECTED = ("clustering", "average_clustering", "number_of_selfloops", "isolates")
"""The functions dtri computes on directed graphs too (Fagiolo's clustering)."""

MULTIGRAPH_FUNCTIONS = ("all_triangles",)
"""The functions whose answer on a multigraph is that of its simple graph: NetworkX's
``all_triangles`` knows a triangle by its nodes, ignoring parallel edges."""


def can_run(name: str, args: tuple, kwargs: dict) -> bool | str:
    """Whether dtri implements this call: simple graphs, undirected (directed for
    clustering), weights given as an attribute name."""
    if name not in FUNCTIONS:
        return f"dtri does not implement {name}"
    graph, arguments = _graph_argument(name, args, kwargs)
    if graph is None:
        return "no graph given"
    if graph.is_directed() and name not in DIRECTED:
        return "dtri counts undirected graphs"
    if graph.is_multigraph() and name not in MULTIGRAPH_FUNCTIONS:
        return "dtri counts simple graphs (no multigraphs)"
    weight = arguments.get("weight")
    if weight is not None and not isinstance(weight, str):
        return "dtri takes weights by attribute name"
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


def _general_clustering(graph: DtriGraph, weight: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Weighted or directed clustering at every node, and where its ``t`` is not 0 (cached):
    the graph's rows and weights through :func:`dtri.clustering`, with dtri's settings."""
    key = f"clustering:{weight!r}"
    if key not in graph.cache:
        values = np.zeros(len(graph.nodes), dtype=np.float64)
        some = np.zeros(len(graph.nodes), dtype=bool)
        if graph.rows.shape[0]:
            import pandas as pd

            import dtri

            frame = pd.DataFrame({"src": graph.rows[:, 0], "dst": graph.rows[:, 1]})
            if weight is not None:  # under a name of its own: the attribute may be "src"
                frame["weight"] = row_weights(graph, weight)
            found = dtri.clustering(frame, weight=None if weight is None else "weight",
                                    directed=graph.directed, **_options()).compute()
            at = found.index.to_numpy()
            values[at] = found["clustering"].to_numpy()
            some[at] = found["t"].to_numpy() != 0
        graph.cache[key] = (values, some)
    return graph.cache[key]


def clustering(G: DtriGraph, nodes: Any = None, weight: Any = None) -> dict | float:
    """``networkx.clustering``: unweighted undirected from dtri's triangle counts; weighted
    (geometric mean of the normalised weights) and directed (Fagiolo's) by
    :func:`dtri.clustering`."""
    one = nodes is not None and nodes in G
    chosen = [nodes] if one else G.nodes if nodes is None else G.nbunch_iter(nodes)
    if weight is None and not G.directed:
        found = _clustering_values(G, chosen)
    else:
        values, some = _general_clustering(G, weight)
        found = {v: float(values[G.index[v]]) if some[G.index[v]] else 0 for v in chosen}
    return found[nodes] if one else found


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


def _generalized_degrees(graph: DtriGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node position, its ``(support, edges)`` pairs: node, support and count arrays
    sorted by node (cached), from dtri's edge support."""
    if "generalized_degree" not in graph.cache:
        ends = np.zeros(0, dtype=np.int64)
        supports = np.zeros(0, dtype=np.int64)
        if graph.edges.shape[0]:
            with _prepared(graph) as prepared:
                support = prepared.edge_support().to_backend("pandas").compute()
            ends = np.concatenate([support["u"].to_numpy(), support["v"].to_numpy()])
            supports = np.tile(support["support"].to_numpy(), 2)
        pairs, counts = np.unique(np.stack([ends, supports], axis=1), axis=0, return_counts=True)
        graph.cache["generalized_degree"] = (pairs[:, 0], pairs[:, 1], counts)
    return graph.cache["generalized_degree"]


def generalized_degree(G: DtriGraph, nodes: Any = None) -> dict | Counter:
    """``networkx.generalized_degree``: per node, a ``Counter`` of its edges by the number of
    triangles on them (dtri's edge support)."""
    at, supports, counts = _generalized_degrees(G)
    starts = np.searchsorted(at, np.arange(len(G.nodes) + 1))

    def counter(v: Hashable) -> Counter:
        i = G.index[v]
        first, last = int(starts[i]), int(starts[i + 1])
        return Counter(dict(zip(supports[first:last].tolist(), counts[first:last].tolist(),
                                strict=True)))

    if nodes is not None and nodes in G:
        return counter(nodes)
    return {v: counter(v) for v in (G.nodes if nodes is None else G.nbunch_iter(nodes))}


def number_of_selfloops(G: DtriGraph) -> int:
    """``networkx.number_of_selfloops``: counted by the conversion."""
    return G.self_loops


def isolates(G: DtriGraph) -> Iterator[Hashable]:
    """``networkx.isolates``: the nodes of no edge (a self-loop is an edge), in node order."""
    touched = np.zeros(len(G.nodes), dtype=bool)
    touched[G.rows.ravel()] = True
    return (G.nodes[i] for i in np.flatnonzero(~touched).tolist())


def on_start_tests(items: list) -> None:
    """Under NetworkX's test harness (``NETWORKX_TEST_BACKEND=dtri``): the functions that
    build graphs (generators, ``relabel_nodes``, ``union``, ...) stay NetworkX's, as they do
    outside the harness, since dtri builds no graphs; dtri's own functions that return one
    (``k_truss``) still run on dtri."""
    nx.config.backend_priority.generators = []
    for name in GRAPH_RESULTS:
        nx.config.backend_priority[name] = ["dtri"]


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
    """What NetworkX loads from the ``networkx.backends`` entry point: the conversions, the
    choices, the test harness's hook and every function of :data:`FUNCTIONS`."""


for _name in ("convert_from_nx", "convert_to_nx", "can_run", "should_run", "on_start_tests",
              *FUNCTIONS):
    setattr(BackendInterface, _name, staticmethod(globals()[_name]))

backend_interface = BackendInterface()

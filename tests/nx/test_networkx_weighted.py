"""The backend's weighted and directed clustering and generalized degree against NetworkX:
karate (its own weights, random directions), graphs of any hashable labels with self-loops
and isolated nodes."""

from __future__ import annotations

from collections import Counter

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TOLERANCE = 1e-12


def close(ours: dict, theirs: dict) -> None:
    assert list(ours) == list(theirs)  # NetworkX's order
    for v, c in theirs.items():
        assert ours[v] == pytest.approx(c, rel=TOLERANCE, abs=TOLERANCE), v
        assert type(ours[v]) is type(c) or (ours[v] != 0 and c != 0), v  # int 0 where t is 0


def directed_karate(seed: int) -> nx.DiGraph:
    """Karate with each edge in a random direction, a tenth both ways (another weight back)."""
    rng = np.random.default_rng(seed)
    graph = nx.DiGraph()
    graph.add_nodes_from(nx.karate_club_graph())
    for u, v, w in nx.karate_club_graph().edges(data="weight"):
        a, b = (u, v) if rng.random() < 0.5 else (v, u)
        graph.add_edge(a, b, weight=w)
        if rng.random() < 0.1:
            graph.add_edge(b, a, weight=float(rng.random()))
    return graph


@pytest.mark.parametrize("directed", [False, True])
def test_karate_weighted_and_directed_clustering(directed):
    nx.config.warnings_to_ignore.add("cache")
    graph = directed_karate(5) if directed else nx.karate_club_graph()
    for weight in ("weight", None):
        if weight is None and not directed:
            continue  # the plain call: dtri's triangle counts, checked elsewhere
        close(nx.clustering(graph, weight=weight, backend="dtri"),
              nx.clustering(graph, weight=weight))
        some = [0, 33, 5]
        close(nx.clustering(graph, some, weight=weight, backend="dtri"),
              nx.clustering(graph, some, weight=weight))
        assert nx.clustering(graph, 33, weight=weight, backend="dtri") == pytest.approx(
            nx.clustering(graph, 33, weight=weight), rel=TOLERANCE)
        for zeros in (True, False):
            assert nx.average_clustering(graph, weight=weight, count_zeros=zeros,
                                         backend="dtri") == pytest.approx(
                nx.average_clustering(graph, weight=weight, count_zeros=zeros), rel=TOLERANCE)


def test_a_weight_attribute_of_any_name():
    graph = nx.Graph()
    graph.add_edges_from([(0, 1, {"src": 2.0}), (1, 2, {"src": 5.0}), (0, 2), (2, 3)])
    close(nx.clustering(graph, weight="src", backend="dtri"), nx.clustering(graph, weight="src"))


def test_karate_generalized_degree():
    graph = nx.karate_club_graph()
    ours = nx.generalized_degree(graph, backend="dtri")
    assert ours == nx.generalized_degree(graph)
    assert all(type(c) is Counter and all(type(k) is int and type(n) is int
                                          for k, n in c.items()) for c in ours.values())
    assert nx.generalized_degree(graph, 0, backend="dtri") == nx.generalized_degree(graph, 0)
    assert nx.generalized_degree(graph, [1, 2], backend="dtri") == \
        nx.generalized_degree(graph, [1, 2])


LABELS = st.one_of(st.integers(-50, 50), st.text(max_size=3),
                   st.tuples(st.integers(0, 3), st.text(max_size=1)))


@st.composite
def weighted_graphs(draw) -> nx.Graph:
    """Graphs of any labels, directed or not, with self-loops, isolated nodes and edges
    without a weight (NetworkX's 1); a later edge replaces an earlier one's weight."""
    labels = draw(st.lists(LABELS, min_size=1, max_size=12, unique=True))
    pick = st.sampled_from(labels)
    graph = nx.DiGraph() if draw(st.booleans()) else nx.Graph()
    graph.add_nodes_from(labels)
    weights = st.one_of(st.none(), st.integers(-3, 5), st.floats(0.01, 100))
    for u, v, w in draw(st.lists(st.tuples(pick, pick, weights), max_size=50)):
        graph.add_edge(u, v, **({} if w is None else {"weight": w}))
    return graph


@given(graph=weighted_graphs())
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_labels_give_networkx_weighted_clustering_and_generalized_degree(graph):
    nx.config.warnings_to_ignore.add("cache")
    if max((w for _, _, w in graph.edges(data="weight", default=1)), default=1) != 0:
        close(nx.clustering(graph, weight="weight", backend="dtri"),
              nx.clustering(graph, weight="weight"))
    if graph.is_directed():
        close(nx.clustering(graph, backend="dtri"), nx.clustering(graph))
    else:
        assert nx.generalized_degree(graph, backend="dtri") == nx.generalized_degree(graph)
        first = next(iter(graph))
        assert nx.generalized_degree(graph, first, backend="dtri") == \
            nx.generalized_degree(graph, first)
    assert list(nx.isolates(graph, backend="dtri")) == list(nx.isolates(graph))
    assert nx.number_of_selfloops(graph, backend="dtri") == nx.number_of_selfloops(graph)

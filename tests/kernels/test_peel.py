"""The whole-graph truss peeling (:mod:`dtri.kernels.peel`) against NetworkX's k-truss, on
small messy graphs (hubs, cliques, stars, isolated edges), on NumPy and, marked gpu, CuPy."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dtri.kernels.peel import adjacency, peel


def ranked(graph: nx.Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """The graph's edges from lower to higher (degree, id) rank, sorted, with their supports;
    and the vertex of each rank."""
    order = sorted(graph.nodes, key=lambda v: (graph.degree(v), v))
    rank = {v: r for r, v in enumerate(order)}
    edges = sorted((min(rank[u], rank[v]), max(rank[u], rank[v])) for u, v in graph.edges)
    support = [len(set(graph[order[a]]) & set(graph[order[b]])) for a, b in edges]
    pairs = np.array(edges, dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1], np.array(support, dtype=np.int64), order


def networkx_numbers(graph: nx.Graph) -> dict[frozenset, int]:
    """Each edge's truss number, from NetworkX's k-trusses level by level."""
    numbers, k, left = {}, 2, graph
    while left.number_of_edges():
        k += 1
        kept = nx.k_truss(left, k)
        numbers.update({frozenset(e): k - 1 for e in left.edges if not kept.has_edge(*e)})
        left = kept
    return numbers


def graphs() -> list[nx.Graph]:
    rng = np.random.default_rng(5)
    found = [nx.karate_club_graph(), nx.star_graph(9), nx.complete_graph(7),
             nx.disjoint_union(nx.complete_graph(5), nx.path_graph(4))]
    for trial in range(12):
        graph = nx.gnp_random_graph(int(rng.integers(8, 60)), float(rng.uniform(0.05, 0.5)),
                                    seed=int(rng.integers(2**30)))
        if trial % 3 == 0:  # a hub joined to every vertex
            graph.add_edges_from((0, v) for v in range(1, graph.number_of_nodes()))
        if trial % 4 == 1:
            graph = nx.disjoint_union(graph, nx.complete_graph(int(rng.integers(4, 10))))
        found.append(graph)
    return found


def check(xp, graph: nx.Graph) -> None:
    src, dst, support, order = ranked(graph)
    vertices = len(order) + 3  # ranks above the last edge's own, as a graph's isolated ones
    numbers = peel(xp.asarray(src), xp.asarray(dst), xp.asarray(support), vertices, None)
    want = networkx_numbers(graph)
    got = numbers.truss.tolist()
    assert got == [want[frozenset((order[a], order[b]))] for a, b in zip(src, dst, strict=True)]
    assert not bool(numbers.alive.any())
    for k in (2, 3, 4, 5, 7):
        alive = peel(xp.asarray(src), xp.asarray(dst), xp.asarray(support), vertices, k).alive
        kept = nx.k_truss(graph, k)
        assert alive.tolist() == [kept.has_edge(order[a], order[b])
                                  for a, b in zip(src, dst, strict=True)]


@pytest.mark.parametrize("graph", graphs(), ids=lambda g: f"{len(g)}-{g.number_of_edges()}")
def test_truss_numbers_and_k_trusses_equal_networkx(graph):
    check(np, graph)


@pytest.mark.parametrize("graph", graphs()[::3], ids=lambda g: f"{len(g)}-{g.number_of_edges()}")
def test_the_threaded_round_in_small_batches_equals_networkx(graph, monkeypatch):
    """Every round on two threads, in batches of a few leaving edges' buffers."""
    from dtri.kernels import strategy
    from dtri.kernels.peel import cpu

    calls = []
    monkeypatch.setattr(strategy, "kernel_threads", lambda: 2)  # whatever the cores
    threaded = cpu.peel_round_threads
    monkeypatch.setattr(cpu, "peel_round_threads", lambda *args: calls.append(1) or threaded(
        *args))
    monkeypatch.setattr(cpu, "MIN_HITS", 8)
    monkeypatch.setattr(cpu, "HITS_PER_EDGE", 0.0)
    monkeypatch.setattr(cpu, "PARALLEL_MIN_WORK", 1)
    check(np, graph)
    assert calls


def test_each_list_ascends_and_names_its_edge():
    graph = nx.gnp_random_graph(40, 0.3, seed=3)
    src, dst, _, _ = ranked(graph)
    lists = adjacency(src, dst, 42)
    for x in range(42):
        begin, end = lists.offsets[x], lists.offsets[x + 1]
        neighbours = lists.neighbours[begin:end]
        assert (np.diff(neighbours) > 0).all()
        for w, e in zip(neighbours, lists.edge[begin:end], strict=True):
            assert {int(src[e]), int(dst[e])} == {x, int(w)}


def test_an_empty_graph_peels_to_nothing():
    empty = np.zeros(0, dtype=np.int64)
    assert peel(empty, empty, empty, 4, None).truss.shape == (0,)
    assert peel(empty, empty, empty, 4, 3).alive.shape == (0,)


@pytest.mark.gpu
@pytest.mark.parametrize("graph", graphs()[:8], ids=lambda g: f"{len(g)}-{g.number_of_edges()}")
def test_the_cuda_round_equals_networkx(graph):
    cupy = pytest.importorskip("cupy")
    check(cupy, graph)

"""``dtri bench``'s igraph and python-graphblas peers count triangles exactly."""

from __future__ import annotations

import sys

import networkx as nx
import numpy as np
import pytest

from dtri import bench


def complete(n: int) -> np.ndarray:
    return np.array([(u, v) for u in range(n) for v in range(u + 1, n)], dtype=np.int64)


def random_gnm(n: int, m: int, seed: int) -> np.ndarray:
    """``m`` random pairs on ``n`` vertices: duplicates and loops included."""
    return np.random.default_rng(seed).integers(0, n, size=(m, 2), dtype=np.int64)


def oracle(pairs: np.ndarray) -> int:
    """NetworkX's triangles of the simple undirected graph of ``pairs``."""
    graph = nx.Graph()
    graph.add_edges_from((int(u), int(v)) for u, v in pairs if u != v)
    return sum(nx.triangles(graph).values()) // 3


GRAPHS = {
    "triangle": (np.array([[0, 1], [1, 2], [2, 0]], dtype=np.int64), 1),
    "K5": (complete(5), 10),
    "4-cycle": (np.array([[0, 1], [1, 2], [2, 3], [3, 0]], dtype=np.int64), 0),
    "two triangles, a tail, a loop and a duplicate": (
        np.array([[1, 2], [2, 3], [3, 1], [3, 4], [4, 2], [4, 5], [5, 5], [2, 1]],
                 dtype=np.int64), 2),
    "sparse ids": (np.array([[10**12, 7], [7, 2**40], [2**40, 10**12]], dtype=np.int64), 1),
}


def edges_of(pairs: np.ndarray) -> bench.CanonicalEdges:
    return bench.canonical_edges(pairs[:, 0], pairs[:, 1])


@pytest.mark.parametrize("peer", ["igraph", "graphblas"])
@pytest.mark.parametrize("name", list(GRAPHS))
def test_peer_counts_small_graphs_exactly(peer, name):
    pytest.importorskip(peer)
    pairs, expected = GRAPHS[name]
    report = bench.run_peer(peer, edges_of(pairs), repeat=2)
    assert report["triangles"] == expected and type(report["triangles"]) is int
    assert report["seconds"] >= 0 and peer in report["method"]


@pytest.mark.parametrize("peer", ["igraph", "graphblas"])
@pytest.mark.parametrize(("n", "m", "seed"), [(60, 900, 1), (500, 6000, 2), (2000, 30000, 3)])
def test_peer_agrees_with_networkx_on_random_graphs(peer, n, m, seed):
    pytest.importorskip(peer)
    pairs = random_gnm(n, m, seed)
    expected = oracle(pairs)
    assert expected > 0
    prepared = bench.PEERS[peer].prepare(edges_of(pairs))
    assert bench.PEERS[peer].run(prepared) == expected
    assert bench.run_peer(peer, edges_of(pairs), repeat=1)["triangles"] == expected


@pytest.mark.parametrize("peer", ["igraph", "graphblas"])
def test_peer_counts_a_graph_without_triangles_as_zero(peer):
    pytest.importorskip(peer)
    star = np.array([[0, v] for v in range(1, 50)], dtype=np.int64)
    assert bench.run_peer(peer, edges_of(star), repeat=1)["triangles"] == 0


@pytest.mark.parametrize("peer", ["igraph", "graphblas"])
def test_missing_peer_is_skipped(peer, monkeypatch):
    monkeypatch.setitem(sys.modules, peer, None)  # as if not installed
    assert bench.run_peer(peer, edges_of(complete(4)), repeat=1) == {"skipped": "not installed"}


def test_igraph_skips_large_graphs(monkeypatch):
    monkeypatch.setattr(bench, "IGRAPH_MAX_EDGES", 5)
    assert bench.run_peer("igraph", edges_of(complete(4)), repeat=1) == {
        "skipped": "too large for igraph"}


def test_new_peers_run_by_default_on_the_cpu():
    assert bench.parse_peers("auto", "cpu") == ["networkit", "graphblas", "igraph", "networkx"]
    assert bench.parse_peers("igraph,graphblas", "cpu") == ["igraph", "graphblas"]

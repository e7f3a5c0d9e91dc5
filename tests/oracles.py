"""Oracles and inputs shared by the tests: NetworkX's answers, messy edge lists, the shared
SNAP graphs."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import networkx as nx
import numpy as np
from hypothesis import strategies as st

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("DTRI_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def networkx_graph(edges: np.ndarray) -> nx.Graph:
    """The simple undirected graph of ``edges`` (m, 2) as NetworkX builds it: every id a node
    (self-loop vertices too), self-loops dropped."""
    graph = nx.Graph()
    graph.add_nodes_from(int(v) for v in np.unique(edges))
    graph.add_edges_from((int(u), int(v)) for u, v in edges if u != v)
    return graph


def shared_graph(path: Path) -> nx.Graph:
    """A gzipped SNAP edge list as NetworkX reads it: every id a node, self-loops dropped."""
    import gzip

    graph = nx.Graph()
    with gzip.open(path, "rt") as handle:
        for line in handle:
            fields = line.split()
            if fields and not fields[0].startswith("#"):
                u, v = int(fields[0]), int(fields[1])
                graph.add_nodes_from((u, v))
                if u != v:
                    graph.add_edge(u, v)
    return graph


def networkx_triangles(edges: np.ndarray) -> int:
    """The oracle: triangles of the simple undirected graph of ``edges`` (m, 2)."""
    return sum(nx.triangles(networkx_graph(edges)).values()) // 3


def manifest_rows() -> list[dict[str, str]]:
    """Rows of ../shared/data/MANIFEST.tsv (empty when the folder is absent)."""
    manifest = SHARED_DATA / "MANIFEST.tsv"
    if not manifest.exists():
        return []
    with manifest.open() as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


SPARSE_IDS = st.sampled_from([0, 1, 7, 10**15, 2**62, 2**63 - 1, 123_456_789_012])


@st.composite
def messy_graphs(draw) -> np.ndarray:
    """Edge lists with self-loops, duplicates, both directions and sparse huge ids."""
    n = draw(st.integers(1, 25))
    ids = draw(st.lists(st.one_of(st.integers(0, 60), SPARSE_IDS), min_size=n, max_size=n,
                        unique=True))
    index = st.integers(0, n - 1)
    pairs = draw(st.lists(st.tuples(index, index), max_size=150))
    pairs += draw(st.lists(st.sampled_from(pairs), max_size=20)) if pairs else []  # duplicates
    pairs += [(v, u) for u, v in draw(st.lists(st.sampled_from(pairs), max_size=20))] \
        if pairs else []  # reversed duplicates
    return np.array([(ids[u], ids[v]) for u, v in pairs], dtype=np.int64).reshape(-1, 2)


def host(value):
    """A computed result in pandas (cuDF results copied to the host)."""
    return value.to_pandas() if hasattr(value, "to_pandas") else value


def check_analytics(edges: np.ndarray, ks: tuple[int, ...] | None = None, **options) -> None:
    """Every analytic of a graph prepared from ``edges`` with ``options`` against NetworkX:
    the count, triangles per vertex, clustering (within 1e-12), average clustering,
    transitivity, edge support, the k-truss for every ``k`` in ``ks`` (default: 0 and 3 up to
    the first empty one, each taken of the one before, as NetworkX is) with its vertices, and
    the truss numbers against those k-trusses."""
    import dtri

    graph = networkx_graph(edges)
    with dtri.prepare(edges, **options) as prepared:
        assert prepared.count_triangles() == sum(nx.triangles(graph).values()) // 3
        assert host(prepared.triangles().compute()).to_dict() == nx.triangles(graph)
        clustering = host(prepared.clustering().compute())
        expected = nx.clustering(graph)
        assert set(clustering.index) == set(expected)
        assert all(abs(clustering[v] - c) <= 1e-12 for v, c in expected.items())
        assert abs(prepared.average_clustering()
                   - (nx.average_clustering(graph) if len(graph) else 0.0)) <= 1e-12
        assert abs(prepared.transitivity() - nx.transitivity(graph)) <= 1e-12
        support = host(prepared.edge_support().compute())
        assert len(support) == graph.number_of_edges()
        for u, v, s in zip(support.u.tolist(), support.v.tolist(), support.support.tolist(),
                           strict=True):
            assert u < v and s == len(set(graph[u]) & set(graph[v])), (u, v, s)
        numbers = host(prepared.truss_numbers().compute())
        truss = dict(zip(zip(numbers.u.tolist(), numbers.v.tolist(), strict=True),
                         numbers.truss.tolist(), strict=True))
        assert len(truss) == graph.number_of_edges()
        zero = prepared.k_truss(0)
        assert set(host(zero.triangles().compute()).index) == {
            v for v in graph if graph.degree(v)}  # isolated vertices dropped
        ours, theirs = prepared, graph
        for k in ks or range(3, 10**6):
            ours, theirs = ours.k_truss(k), nx.k_truss(theirs, k)
            edges_k = {tuple(sorted(e)) for e in theirs.edges()}
            found = host(ours.edge_support().compute())
            assert set(zip(found.u.tolist(), found.v.tolist(), strict=True)) == edges_k, k
            assert set(host(ours.triangles().compute()).index) == set(theirs.nodes()), k
            assert edges_k == {e for e, t in truss.items() if t >= k}, k
            if ks is None and not edges_k:
                break

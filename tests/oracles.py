"""Oracles and inputs shared by the tests: NetworkX's answers, messy edge lists, the shared
SNAP graphs."""

from __future__ import annotations

import csv
import os
from html.parser import HTMLParser
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


def mixed_parquet_folder(folder: Path, edges: np.ndarray) -> Path:
    """``edges`` as a folder of two Parquet files whose ids have different integer types:
    the first half int32, in row groups of 7 rows, the second uint64, in one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    half = edges.shape[0] // 2
    pq.write_table(pa.table({"src": edges[:half, 0].astype(np.int32),
                             "dst": edges[:half, 1].astype(np.int32)}), folder / "a.parquet",
                   row_group_size=7)
    pq.write_table(pa.table({"src": edges[half:, 0].astype(np.uint64),
                             "dst": edges[half:, 1].astype(np.uint64)}), folder / "b.parquet")
    return folder


BAD_IDS = ("null", "negative", "too_large")
"""The faults of a Parquet file's ids that every read refuses (:func:`bad_id_folder`)."""


def bad_id_folder(folder: Path, bad: str) -> tuple[Path, str]:
    """A good Parquet file and one whose ``dst`` has the fault ``bad`` (a null, a negative
    id its footer does not record, an unsigned id past int64) in ``folder``: the bad file,
    and the pattern of the error that names it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    column = {"null": pa.array([3, None], pa.int64()), "negative": pa.array([3, -2]),
              "too_large": pa.array([3, 2**63], pa.uint64())}[bad]
    message = {"null": "missing \\(null\\) vertex id in column 'dst'",
               "negative": "negative vertex id -2 in column 'dst'",
               "too_large": "vertex id 9223372036854775808 is larger than 2\\*\\*63-1"}[bad]
    path = folder / "b.parquet"
    pq.write_table(pa.table({"src": [0, 1], "dst": [1, 2]}), folder / "a.parquet")
    pq.write_table(pa.table({"src": pa.array([1, 2], column.type), "dst": column}), path,
                   write_statistics=False)
    return path, message


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


def edge_copies_in_every_partition(seed: int = 4) -> list:
    """Input partitions (pandas) that each hold every edge of one graph: as it is, reversed,
    repeated and shuffled, with self-loops and a vertex that has only a self-loop."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    edges = rng.integers(0, 120, (1_500, 2))
    edges = np.concatenate([edges, [(7, 7), (10**12, 10**12)]])
    copies = [edges, edges[:, ::-1], np.concatenate([edges, edges[:300]]), edges[:, ::-1]]
    frames = []
    for copy in copies:
        copy = copy[rng.permutation(len(copy))]
        frames.append(pd.DataFrame({"src": copy[:, 0], "dst": copy[:, 1]}))
    return frames


def check_vertex_results(prepared, graph: nx.Graph) -> None:
    """A prepared graph's count, triangles, degree and clustering at every vertex against
    NetworkX's ``graph``."""
    import dask

    assert prepared.count_triangles() == sum(nx.triangles(graph).values()) // 3
    assert host(prepared.triangles().compute()).to_dict() == nx.triangles(graph)
    ids, degree = dask.compute(prepared.ids, prepared.degree)  # NumPy or CuPy: tolist()
    assert dict(zip(ids.tolist(), degree.tolist(), strict=True)) == dict(graph.degree)
    clustering = host(prepared.clustering().compute())
    assert set(clustering.index) == set(graph)
    assert all(abs(clustering[v] - c) <= 1e-12 for v, c in nx.clustering(graph).items())


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


# ------------------------------------------------------------------- graphlets (brute force)

def graphlet_orbit(edges: set[frozenset], vertices: tuple, v: object) -> int | None:
    """The orbit (σ0 … σ15, FGLT's dictionary) of ``v`` in the graph of ``edges`` spanning
    ``vertices``, or ``None`` when that graph is not connected."""
    adjacent = {x: {y for e in edges if x in e for y in e if y != x} for x in vertices}
    reached, frontier = {v}, [v]
    while frontier:
        x = frontier.pop()
        for y in adjacent[x] - reached:
            reached.add(y)
            frontier.append(y)
    if len(reached) != len(vertices):
        return None
    degree = {x: len(adjacent[x]) for x in vertices}
    mine, size, count = degree[v], len(vertices), len(edges)
    if size <= 2:
        return size - 1
    if size == 3:
        return 4 if count == 3 else (2 if mine == 1 else 3)
    if count == 3:
        if max(degree.values()) == 3:  # claw
            return 8 if mine == 3 else 7
        return 5 if mine == 1 else 6  # path
    if count == 4:
        if max(degree.values()) == 2:
            return 12  # cycle
        return {1: 9, 2: 10, 3: 11}[mine]  # paw
    if count == 5:
        return 13 if mine == 2 else 14  # diamond
    return 15


def brute_force_orbits(graph: nx.Graph) -> tuple[dict, dict]:
    """Net and raw orbit frequencies of every node, by enumeration: net counts the connected
    induced subgraphs on 1 to 4 nodes by the orbit of the node in them; raw counts every
    connected spanning subgraph of those node sets (subgraphs that need not be induced)."""
    import itertools

    net = {v: [0] * 16 for v in graph}
    raw = {v: [0] * 16 for v in graph}
    nodes = list(graph)
    for v in nodes:
        net[v][0] = raw[v][0] = 1
    for size in (2, 3, 4):
        for chosen in itertools.combinations(nodes, size):
            induced = {frozenset(e) for e in graph.subgraph(chosen).edges}
            for v in chosen:
                orbit = graphlet_orbit(induced, chosen, v)
                if orbit is not None:
                    net[v][orbit] += 1
            for k in range(size - 1, len(induced) + 1):
                for subset in itertools.combinations(induced, k):
                    kept = set(subset)
                    for v in chosen:
                        orbit = graphlet_orbit(kept, chosen, v)
                        if orbit is not None:
                            raw[v][orbit] += 1
    return net, raw


def check_graphlets(edges: np.ndarray, orbits: str = "all", **options) -> None:
    """Net and raw graphlet degrees of a graph prepared from ``edges`` against enumeration
    (:func:`brute_force_orbits`), and σ4 against NetworkX's triangles."""
    import dtri

    graph = networkx_graph(edges)
    net, raw = brute_force_orbits(graph)
    columns = 16 if orbits == "all" else 5
    with dtri.prepare(edges, **options) as prepared:
        for kind, expected in (("net", net), ("raw", raw)):
            found = host(prepared.graphlets(orbits=orbits, kind=kind).compute())
            assert found.index.name == "vertex"
            assert list(found.columns) == [f"sigma{i}" for i in range(columns)]
            assert all(str(t) == "int64" for t in found.dtypes)
            assert sorted(found.index.tolist()) == sorted(graph), kind
            for v, row in zip(found.index.tolist(), found.to_numpy().tolist(), strict=True):
                assert row == expected[v][:columns], (kind, v, row, expected[v])
        assert found.sigma4.to_dict() == nx.triangles(graph)


PAGE_FIGURES = {"degree", "triangles", "triangle-distribution", "clustering", "truss", "kept"}


class Page(HTMLParser):
    """The ids of a profile page's figures and tables, and which figures hold an SVG."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[str] = []
        self.tables: list[str] = []
        self.drawn: set[str] = set()
        self.scripts = 0
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        named = dict(attrs).get("id")
        if tag == "figure":
            self.figures.append(named)
            self.open.append(named)
        elif tag == "table":
            self.tables.append(named)
        elif tag == "svg" and self.open:
            self.drawn.add(self.open[-1])
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self.open.pop()


def parsed_page(text: str) -> Page:
    """A profile page's figures and tables, as :class:`Page` reads them."""
    page = Page()
    page.feed(text)
    page.close()
    return page

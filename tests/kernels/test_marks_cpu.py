"""The CPU fused join's ``marks`` kernel (each row marked once, every edge streaming its
target's list) against the search kernel and NetworkX, with each CPU kernel forced through
``dtri.cpu-kernel``: cliques, stars, one huge hub, empty and single-edge partitions, the
shared SNAP graphs, on one and two threads."""

from __future__ import annotations

import dask
import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from dtri.kernels.csr import from_sorted, rows_of
from dtri.kernels.intersect import intersect
from dtri.kernels.strategy import CPU_KERNEL, CPU_KERNELS, MARKS_MAX_VERTICES, cpu_kernel
from tests.kernels.test_hash_cpu import skewed_edges
from tests.oracles import check_analytics, host, manifest_rows, networkx_graph

THREADS = [{}, {"dtri.kernel-threads": 2, "dtri.kernel-parallel-min-edges": 1}]
GALLOP = [2.0, 0.0, 1e18]  # the default; every edge galloping; every edge streaming


@given(seed=st.integers(0, 2**16), vertices=st.integers(2, 120), hubs=st.integers(1, 6),
       edges=st.integers(1, 600), cut=st.floats(0.0, 1.0))
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@pytest.mark.parametrize("gallop", GALLOP)
@pytest.mark.parametrize("threads", THREADS)
def test_marks_give_the_search_kernels_results(threads, gallop, seed, vertices, hubs, edges,
                                               cut, monkeypatch):
    """Triangles and every credit (``uv``, ``uw``, and on one thread the group's ``vw``) of
    the marks kernel equal the search kernel's, for the whole graph and groups of its source
    ranks (a group may be empty)."""
    monkeypatch.setattr("dtri.kernels.intersect.MARKS_GALLOP_RATIO", gallop)
    pairs = skewed_edges(seed, vertices, hubs, edges)
    whole = from_sorted(pairs[:, 0].copy(), pairs[:, 1].copy(), 0, vertices)
    middle = int(vertices * cut)
    for low, high in [(0, vertices), (0, middle), (middle, vertices)]:
        group = rows_of(whole, low, high)
        for options in [{}, {"credits": True}, {"credits": True, "group_credits": True}]:
            expected = intersect(whole, group, kernel="search", **options)
            with dask.config.set(threads):
                found = intersect(whole, group, kernel="marks", **options)
            assert found.triangles == expected.triangles, (low, high, options)
            for name in ("uv", "uw", "vw"):
                mine, theirs = getattr(found, name), getattr(expected, name)
                assert (mine is None) == (theirs is None), name
                if mine is not None:
                    np.testing.assert_array_equal(mine, theirs, err_msg=name)


def clique(n: int) -> np.ndarray:
    return np.array([(u, v) for u in range(n) for v in range(u + 1, n)], dtype=np.int64)


def star(leaves: int) -> np.ndarray:
    return np.array([(0, v) for v in range(1, leaves + 1)], dtype=np.int64)


def huge_hub(leaves: int, seed: int = 3) -> np.ndarray:
    """One vertex joined to every other, the others joined sparsely among themselves: every
    triangle has the hub, and the hub's list is longer than a hash table holds."""
    rng = np.random.default_rng(seed)
    ring = np.stack([np.arange(1, leaves), np.arange(2, leaves + 1)], 1)
    chords = np.sort(rng.integers(1, leaves + 1, (leaves, 2)), axis=1)
    chords = chords[chords[:, 0] != chords[:, 1]]
    return np.unique(np.concatenate([star(leaves), ring, chords]), axis=0)


CASES = {
    "K2": clique(2),  # a single edge
    "K3": clique(3),
    "K12": clique(12),
    "K60": clique(60),
    "star": star(500),
    "star+K5": np.concatenate([star(40), clique(5) + 41]),
    "hub": huge_hub(20_000),
}


@pytest.mark.parametrize("kernel", CPU_KERNELS)
@pytest.mark.parametrize("name", CASES)
def test_each_kernel_counts_as_networkx_does(name, kernel):
    """The count and the triangles at each vertex, each CPU kernel forced, in one partition
    and in several (among them partitions with no edge or a single one), against NetworkX."""
    edges = CASES[name]
    graph = networkx_graph(edges)
    expected = sum(nx.triangles(graph).values()) // 3
    per_vertex = nx.triangles(graph)
    with dask.config.set({CPU_KERNEL: kernel}):
        for options in [{}, {"npartitions": 5}, {"npartitions": 5, "memory_budget": "64KiB"},
                        {"orientation": "id"}]:
            result = dtri.count(edges, backend="cpu", scheduler="synchronous",
                                join="intersect", **options)
            assert result.triangles == expected, options
            assert set(result.plan["kernel"].split("+")) == {kernel}
            with dtri.prepare(edges, backend="cpu", scheduler="synchronous",
                              **options) as prepared:
                assert host(prepared.triangles().compute()).to_dict() == per_vertex, options


@pytest.mark.parametrize("kernel", CPU_KERNELS)
def test_every_analytic_under_each_kernel(kernel):
    """Every analytic (the k-truss's peeling runs the hash or search kernel, which keep the
    edges' states) equals NetworkX's with each kernel forced."""
    with dask.config.set({CPU_KERNEL: kernel}):
        check_analytics(CASES["star+K5"], scheduler="synchronous", backend="cpu")
        check_analytics(clique(9), scheduler="synchronous", backend="cpu", npartitions=3)


def test_the_kernel_choice():
    assert cpu_kernel(1000) == "marks" and cpu_kernel(MARKS_MAX_VERTICES) == "marks"
    assert cpu_kernel(MARKS_MAX_VERTICES + 1) == "hash"
    assert cpu_kernel(1000, stateful=True) == "hash"  # a peeling keeps the edges' states
    for kernel in CPU_KERNELS:
        with dask.config.set({CPU_KERNEL: kernel}):
            assert cpu_kernel(MARKS_MAX_VERTICES + 1) == kernel
            assert cpu_kernel(10, stateful=True) == ("search" if kernel == "search" else "hash")
    with dask.config.set({CPU_KERNEL: "bitmap"}), pytest.raises(ValueError, match="auto or"):
        cpu_kernel(10)
    with pytest.raises(ValueError, match="kernel must be one of"):
        intersect(from_sorted(np.zeros(1, np.int64), np.ones(1, np.int64), 0, 2),
                  from_sorted(np.zeros(1, np.int64), np.ones(1, np.int64), 0, 2),
                  kernel="bitmap")


ROWS = manifest_rows()


@pytest.mark.parametrize("kernel", CPU_KERNELS)
@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_each_kernel_counts_the_shared_graphs_exactly(row, kernel, shared_data):
    """Each shared SNAP graph's published count under each kernel, in this process on both
    threads and on one partition of several."""
    path = shared_data / row["file"]
    with dask.config.set({CPU_KERNEL: kernel}):
        for options in [{"join": "intersect"}, {"join": "intersect", "npartitions": 3,
                                                "scheduler": "synchronous"}]:
            result = dtri.count(path, backend="cpu", **options)
            assert result.triangles == int(row["triangles"]), options
            assert result.plan["kernel"] == kernel


def sparse_graph_of(vertices: int, seed: int) -> np.ndarray:
    """A sparse graph of exactly ``vertices`` vertices with large ids (up to about 10**13):
    a path through all of them in a random order, 400 triangles and 4,000 chords among random
    vertices, duplicates and both directions included."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(vertices).astype(np.int64) * 9_999_991 + 12_345
    path = np.stack([ids[:-1], ids[1:]], axis=1)
    corners = ids[rng.integers(0, vertices, (400, 3))]
    triangles = np.concatenate([corners[:, [0, 1]], corners[:, [1, 2]], corners[:, [2, 0]]])
    chords = ids[rng.integers(0, vertices, (4_000, 2))]
    return np.concatenate([path, triangles, chords, chords[:100, ::-1]])


def sparse_triangles(edges: np.ndarray) -> int:
    """The oracle: ``Σ (A·A) ∘ A / 6`` of the simple undirected graph's adjacency (SciPy)."""
    import scipy.sparse as sp

    ids, dense = np.unique(edges, return_inverse=True)
    dense = dense.reshape(edges.shape)
    dense = dense[dense[:, 0] != dense[:, 1]]
    both = np.concatenate([dense, dense[:, ::-1]])
    adjacency = sp.coo_matrix((np.ones(len(both)), (both[:, 0], both[:, 1])),
                              shape=(len(ids), len(ids))).tocsr()
    adjacency.data[:] = 1  # duplicates summed: back to one
    return int((adjacency @ adjacency).multiply(adjacency).sum()) // 6


@pytest.mark.slow
@pytest.mark.parametrize(("vertices", "kernel"), [(MARKS_MAX_VERTICES, "marks"),
                                                  (MARKS_MAX_VERTICES + 1, "hash")])
def test_the_marks_limit_picks_a_kernel_that_counts_exactly(vertices, kernel):
    """A sparse graph of large ids at the marks kernel's limit is counted by marks, and one a
    vertex past it by hash, each exactly (the triangles at each vertex too)."""
    edges = sparse_graph_of(vertices, seed=vertices)
    expected = sparse_triangles(edges)
    result = dtri.count(edges, backend="cpu", join="intersect")
    assert result.plan["kernel"] == kernel and result.vertices == vertices
    assert result.triangles == expected
    with dtri.prepare(edges, backend="cpu") as prepared:
        assert int(prepared.triangles().sum().compute()) == 3 * expected

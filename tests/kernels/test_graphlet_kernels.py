"""The graphlet kernels: the raw ↔ net matrix derived again by enumeration, the exact
conversions both ways, and the two reductions of the 4-cycles' wedges (the CPU's per-anchor
counters, the GPU's sort) against each other."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dtri.kernels import graphlets
from tests.oracles import brute_force_orbits

REPRESENTATIVES = {
    0: ([], 0), 1: ([(0, 1)], 0), 2: ([(0, 1), (1, 2)], 0), 3: ([(0, 1), (1, 2)], 1),
    4: ([(0, 1), (1, 2), (0, 2)], 0), 5: ([(0, 1), (1, 2), (2, 3)], 0),
    6: ([(0, 1), (1, 2), (2, 3)], 1), 7: ([(0, 1), (0, 2), (0, 3)], 1),
    8: ([(0, 1), (0, 2), (0, 3)], 0), 9: ([(0, 1), (1, 2), (2, 3), (3, 1)], 0),
    10: ([(0, 1), (1, 2), (2, 3), (3, 1)], 2), 11: ([(0, 1), (1, 2), (2, 3), (3, 1)], 1),
    12: ([(0, 1), (1, 2), (2, 3), (3, 0)], 0), 13: ([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)], 1),
    14: ([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)], 0),
    15: ([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 3)], 0),
}
"""A graphlet per orbit and a vertex of it at that orbit."""
SIZES = (1, 2, 3, 3, 3) + (4,) * 11
"""Vertices of each orbit's graphlet."""


def test_raw_from_net_matrix_is_derived_by_enumeration():
    derived = np.zeros((16, 16), dtype=np.int64)
    for j, (edges, v) in REPRESENTATIVES.items():
        graph = nx.Graph(edges)
        graph.add_node(0)
        net, raw = brute_force_orbits(graph)
        assert net[v][j] == 1
        for i in range(16):
            if SIZES[i] == graph.number_of_nodes():  # subgraphs spanning the graphlet
                derived[i, j] = raw[v][i]
    assert (derived == graphlets.RAW_FROM_NET).all()


@given(st.lists(st.lists(st.integers(-10**6, 10**6), min_size=16, max_size=16), min_size=1,
                max_size=8))
@settings(max_examples=50, deadline=None)
def test_net_and_raw_convert_both_ways_exactly(rows):
    values = np.array(rows, dtype=np.int64).T
    assert (graphlets.raw_from_net(graphlets.net_from_raw(values)) == values).all()
    assert (graphlets.net_from_raw(graphlets.raw_from_net(values)) == values).all()
    basic = values[:5]
    assert (graphlets.net_from_raw(graphlets.raw_from_net(basic)) == basic).all()


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)),
                max_size=300), st.booleans())
@settings(max_examples=60, deadline=None)
def test_cycle_reductions_agree(wedges, packed):
    bits, vertices = 5, 31
    v, x, u = (np.array(c, dtype=np.int64) for c in zip(*wedges, strict=True)) if wedges else \
        (np.zeros(0, dtype=np.int64),) * 3
    keys = ((((v << bits) | x) << bits) | u) if packed else np.stack([(v << bits) | x, u],
                                                                      axis=1)
    expected = np.zeros(vertices, dtype=np.int64)
    groups: dict[tuple[int, int], list[int]] = {}
    for a, b, c in wedges:
        groups.setdefault((a, b), []).append(c)
    for (a, b), middles in groups.items():
        m = len(middles)
        expected[a] += m * (m - 1) // 2
        expected[b] += m * (m - 1) // 2
        for c in middles:
            expected[c] += m - 1
    assert (graphlets.cycle_credits(keys, bits, vertices) == expected).all()
    assert (graphlets.sorted_cycle_credits(keys, bits, vertices) == expected).all()


def test_choose3_is_exact_where_the_product_overflows():
    d = np.array([0, 1, 2, 3, 4, 2_200_000, 3_000_000, 3_800_000], dtype=np.int64)
    expected = [n * (n - 1) * (n - 2) // 6 for n in d.tolist()]  # Python ints
    assert graphlets.choose3(d).tolist() == expected


@given(st.lists(st.integers(0, 50), max_size=40), st.integers(1, 60))
@settings(max_examples=80, deadline=None)
def test_batches_are_greedy_and_within_budget(counts, budget):
    bounds = graphlets.prefix_cuts(np.array(counts, dtype=np.int64), budget)
    assert bounds[0] == 0 and bounds[-1] == len(counts)
    for a, b in itertools.pairwise(bounds):
        assert b > a
        assert sum(counts[a:b]) <= budget or b == a + 1  # one item above the budget alone
        if b < len(counts):
            assert sum(counts[a:b + 1]) > budget  # greedy: the next item would not fit


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=200),
       st.integers(0, 3), st.sampled_from(["int64", "int32", "uint64"]))
@settings(max_examples=60, deadline=None)
def test_triangle_ids_kernel_sorts_each_row_as_array_code_does(pairs, threads, dtype):
    """numba's pass and the array code (CuPy's) give each record's three input ids, least
    first, as sorting them does; ids near 2**63 and of narrower types included."""
    import dask

    from dtri.kernels.graphlets.cpu import triangle_ids_cpu

    rng = np.random.default_rng(len(pairs))
    edges = len(pairs)
    lowest = np.array([u for u, _ in pairs], dtype=np.int64)
    dst = np.array([v for _, v in pairs], dtype=np.int64)
    top = 2**31 - 1 if dtype == "int32" else 2**63 - 1
    ids = rng.choice(np.arange(top - 41, top, dtype=np.int64) if rng.random() < 0.5
                     else np.arange(41, dtype=np.int64), 41, replace=False).astype(dtype)
    records = rng.integers(0, max(edges, 1), (2, rng.integers(0, 500) if edges else 0))
    ab, ac = records
    expected = np.sort(np.stack([ids[lowest[ab]], ids[dst[ab]], ids[dst[ac]]]).astype(np.int64),
                       axis=0)
    found = np.empty((3, ab.shape[0]), dtype=np.int64)
    with dask.config.set({"dtri.kernel-threads": threads + 1}):
        triangle_ids_cpu(lowest, dst, ids, ab, ac, found)
    assert (found == expected).all()
    gathered = np.empty_like(found)
    graphlets.gathered_triangle_ids(lowest, dst, ids, ab, ac, gathered)
    assert (gathered == expected).all()

"""The fused intersection's credits (dtri.kernels.intersect): which edges and vertices each
triangle is credited to, with and without per-edge states, against brute force."""

from __future__ import annotations

import itertools

import dask
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dtri.kernels.csr import CSR, from_sorted, list_cuts, row_range, rows_of, sources
from dtri.kernels.intersect import intersect, vertex_credits
from dtri.kernels.strategy import STATE_ALIVE, STATE_GONE, STATE_LEAVING


@pytest.fixture(scope="module", autouse=True, params=[1, 2], ids=["1-thread", "2-threads"])
def kernel_threads(request: pytest.FixtureRequest):
    """Every test on the serial CPU kernel and on the parallel one (2 threads, however small
    the graph), which must find and credit exactly the same."""
    with dask.config.set({"dtri.kernel-threads": request.param,
                          "dtri.kernel-parallel-min-edges": 0}):
        yield request.param


N = 24
edge_sets = st.sets(st.tuples(st.integers(0, N - 1), st.integers(0, N - 1))
                    .filter(lambda e: e[0] != e[1]).map(lambda e: (min(e), max(e))),
                    max_size=120)


def csr(pairs: set) -> CSR:
    """The edges oriented low → high, as one CSR over every rank."""
    ordered = sorted(pairs)
    src = np.array([u for u, _ in ordered], dtype=np.int64)
    dst = np.array([v for _, v in ordered], dtype=np.int64)
    return from_sorted(src, dst, 0, N)


def brute_triangles(pairs: set) -> list[tuple[int, int, int]]:
    return [(u, v, w) for u, v, w in itertools.combinations(range(N), 3)
            if {(u, v), (u, w), (v, w)} <= pairs]


def position(graph: CSR, u: int, v: int) -> int:
    start, stop = graph.offsets[u - graph.low], graph.offsets[u - graph.low + 1]
    return start + int(np.flatnonzero(graph.dst[start:stop] == v)[0])


@given(edge_sets, st.integers(1, 4))
@settings(max_examples=150, deadline=None)
def test_credits_say_which_edges_each_triangle_is_on(pairs, pieces):
    graph = csr(pairs)
    triangles = brute_triangles(pairs)
    uv = np.zeros(graph.edges, np.int64)
    uw = np.zeros(graph.edges, np.int64)
    vw = np.zeros(graph.edges, np.int64)
    for u, v, w in triangles:
        uv[position(graph, u, v)] += 1
        uw[position(graph, u, w)] += 1
        vw[position(graph, v, w)] += 1
    # the whole graph against source ranges of it (groups, bins): every triangle once
    width = -(-N // pieces)
    found, got_uv, got_uw, got_vw = 0, np.zeros_like(uv), np.zeros_like(uw), np.zeros_like(vw)
    for low in range(0, N, width):
        group = rows_of(graph, low, min(low + width, N))
        result = intersect(graph, group, credits=True, group_credits=True)
        found += result.triangles
        got_uv += result.uv
        got_uw += result.uw
        start = int(graph.offsets[group.low])
        got_vw[start: start + group.edges] += result.vw
    assert found == len(triangles)
    assert (got_uv == uv).all() and (got_uw == uw).all() and (got_vw == vw).all()
    assert (got_uv + got_uw + got_vw == [sum(1 for t in triangles if {a, b} <= set(t))
                                        for a, b in zip(sources(graph), graph.dst,
                                                        strict=True)]).all()


@given(edge_sets)
@settings(max_examples=100, deadline=None)
def test_vertex_credits_count_the_triangles_at_each_vertex(pairs):
    graph = csr(pairs)
    result = intersect(graph, graph, credits=True)
    at = vertex_credits(graph, result.uv, result.uw, N)
    expected = np.zeros(N, np.int64)
    for triangle in brute_triangles(pairs):
        expected[list(triangle)] += 1
    assert at.tolist() == expected.tolist()


@given(edge_sets, st.data())
@settings(max_examples=150, deadline=None)
def test_states_count_among_the_remaining_edges_and_peel_credits_what_is_lost(pairs, data):
    graph = csr(pairs)
    state = np.array(data.draw(st.lists(st.sampled_from([STATE_GONE, STATE_ALIVE,
                                                          STATE_LEAVING]),
                                        min_size=graph.edges, max_size=graph.edges)),
                     dtype=np.uint8)
    edge_state = {(int(u), int(v)): int(s)
                  for u, v, s in zip(sources(graph), graph.dst, state, strict=True)}
    remaining = [t for t in brute_triangles(pairs)
                 if all(edge_state[e] != STATE_GONE for e in itertools.combinations(t, 2))]
    counted = intersect(graph, graph, part_state=state, group_state=state)
    assert counted.triangles == len(remaining)
    peeled = intersect(graph, graph, group_credits=True, part_state=state, group_state=state,
                       peel=True)
    lost = {e: 0 for e in edge_state}
    dying = 0
    for t in remaining:
        edges = list(itertools.combinations(t, 2))
        if any(edge_state[e] == STATE_LEAVING for e in edges):
            dying += 1
            for e in edges:
                if edge_state[e] == STATE_ALIVE:
                    lost[e] += 1
    assert peeled.triangles == dying
    total = peeled.uv.astype(np.int64) + peeled.uw + peeled.vw
    assert total.tolist() == [lost[(int(u), int(v))]
                              for u, v in zip(sources(graph), graph.dst, strict=True)]


def test_a_row_range_is_a_csr_of_whole_lists_as_views():
    graph = csr({(0, 1), (0, 2), (2, 3), (2, 5), (4, 5)})
    piece = row_range(graph, 2, 4)  # the list of source 2
    assert piece.low == 2 and piece.dst.tolist() == [3, 5] and piece.offsets.tolist() == [0, 2]
    assert np.shares_memory(piece.dst, graph.dst)
    whole = row_range(graph, 0, graph.edges)
    assert whole.edges == graph.edges and sources(whole).tolist() == sources(graph).tolist()


@given(pairs=st.sets(st.tuples(st.integers(0, 15), st.integers(0, 15))
                     .filter(lambda e: e[0] < e[1]), min_size=1),
       most=st.integers(1, 12), data=st.data())
def test_list_cuts_split_a_range_at_list_starts_into_spans_of_about_most_edges(pairs, most,
                                                                              data):
    graph = csr(pairs)
    starts = set(graph.offsets.tolist())
    first = data.draw(st.sampled_from(sorted(starts)[:-1]))
    last = data.draw(st.sampled_from(sorted(s for s in starts if s > first)))
    cuts = list_cuts(graph, first, last, most)
    assert cuts[0] == first and cuts[-1] == last and cuts == sorted(set(cuts))
    assert set(cuts) <= starts  # whole lists
    longest = int(np.diff(graph.offsets).max())
    assert all(b - a <= most + longest for a, b in itertools.pairwise(cuts))


def test_list_cuts_of_short_lists_are_spans_of_most_edges():
    graph = csr({(u, v) for u in range(6) for v in range(u + 1, u + 3)})  # lists of 2 (and 1)
    assert list_cuts(graph, 0, graph.edges, 4) == [0, 4, 8, graph.edges]
    assert list_cuts(graph, 2, 6, 4) == [2, 6]


def test_states_come_in_pairs():
    graph = csr({(0, 1), (0, 2), (1, 2)})
    with pytest.raises(ValueError, match="both"):
        intersect(graph, graph, part_state=np.ones(3, np.uint8))
    with pytest.raises(ValueError, match="states"):
        intersect(graph, graph, peel=True)


@pytest.mark.parametrize("leaves", [3, 40, 300])
@pytest.mark.parametrize("every", [1, 3, 10, 50])
def test_lists_far_apart_in_length_are_searched_and_close_ones_merged(leaves, every):
    # u's list holds v and many leaves, v's list every so many of them: the walk gallops
    # through the long list where it is GALLOP_RATIO times longer, merges the two otherwise
    u, v = 0, 1
    pairs = {(u, v), *((u, 2 + k) for k in range(leaves)),
             *((v, 2 + k) for k in range(0, leaves, every))}
    n = leaves + 2
    ordered = sorted(pairs)
    graph = from_sorted(np.array([a for a, _ in ordered]), np.array([b for _, b in ordered]),
                        0, n)
    result = intersect(graph, graph, credits=True)
    shared = len(range(0, leaves, every))
    assert result.triangles == shared
    assert int(result.uv[position(graph, u, v)]) == shared

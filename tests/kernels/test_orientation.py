"""The orientations: the adirection peeling (levels, ranks, the out-degree bound) against a
plain-Python peeling, and every orientation, ``auto`` included, against NetworkX on one and
several partitions, in this process and on two worker processes (CPU; the same array code runs
on CuPy)."""

from __future__ import annotations

from fractions import Fraction

import dask
import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from dtri.errors import ConfigurationError
from dtri.kernels.bins import checked_key_bits, unpack_keys
from dtri.kernels.canonicalize import (
    canonical_keys,
    partition_vertices,
    vertex_count,
    vertex_ids,
)
from dtri.kernels.orient import (
    Peeling,
    degree_counts,
    orient_keys,
    orientation_reason,
    out_degree_counts,
    peel_levels,
    peel_ranks,
    rank_and_order,
    vertex_ranks,
)
from tests.oracles import host, messy_graphs, networkx_graph

ORIENTATIONS = ["degree", "id", "adirection", "auto"]


def canonical(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The distinct edge keys, the dense vertices and their count, as the preparation makes
    them."""
    frame = pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})
    vertices = partition_vertices(frame)
    keys = canonical_keys(frame, vertices)
    return keys, vertices, vertex_count(vertices)


def peeled(edges: list[tuple[int, int]] | np.ndarray, epsilon: float = 1.0,
           rounds: int = 256) -> tuple[Peeling, np.ndarray, np.ndarray, int]:
    """The peeling of ``edges`` (dense ids ``0 .. n-1`` when every id has an edge), their
    keys and degrees."""
    keys, _, n = canonical(np.asarray(edges, dtype=np.int64).reshape(-1, 2))
    degree = degree_counts(keys, n)
    return peel_levels(keys, degree, n, epsilon, rounds), keys, degree, n


def reference_peeling(n: int, edges: set[tuple[int, int]], epsilon: float,
                      rounds: int = 256) -> tuple[list[int], list[int]]:
    """The peeling in plain Python: each round, the alive vertices of remaining degree at
    most (1 + epsilon) × their mean (all of them in the last round)."""
    level, at_peel = [-1] * n, [0] * n
    alive = set(range(n))
    for r in range(rounds):
        if not alive:
            break
        remaining = dict.fromkeys(alive, 0)
        for u, v in edges:
            if u in alive and v in alive:
                remaining[u] += 1
                remaining[v] += 1
        bound = (1 + Fraction(epsilon)) * sum(remaining.values()) / len(alive)
        peel = [v for v in alive if r == rounds - 1 or remaining[v] <= bound]
        for v in peel:
            level[v], at_peel[v] = r, remaining[v]
        alive -= set(peel)
    return level, at_peel


def out_degrees(keys: np.ndarray, rank: np.ndarray, n: int) -> np.ndarray:
    """Out-degree of every dense vertex under ``rank``."""
    return out_degree_counts(orient_keys(keys, rank, n), n)[rank]


# ------------------------------------------------------------------ the peeling


def test_a_star_peels_its_leaves_first_and_its_centre_last():
    state, keys, degree, n = peeled([(0, leaf) for leaf in range(1, 6)])
    assert state.level.tolist() == [1, 0, 0, 0, 0, 0]  # mean 10/6: threshold 3 < 5
    assert state.remaining.tolist() == [0, 1, 1, 1, 1, 1] and state.rounds == 2
    rank = peel_ranks(state, degree)
    assert rank.tolist() == [5, 0, 1, 2, 3, 4]
    assert out_degrees(keys, rank, n).tolist() == [0, 1, 1, 1, 1, 1]  # the centre's list: empty


def test_a_clique_peels_in_one_round_in_id_order():
    state, keys, degree, n = peeled([(u, v) for u in range(7) for v in range(u + 1, 7)])
    assert state.level.tolist() == [0] * 7 and state.remaining.tolist() == [6] * 7
    rank = peel_ranks(state, degree)
    assert rank.tolist() == list(range(7))
    assert out_degrees(keys, rank, n).tolist() == [6, 5, 4, 3, 2, 1, 0]


def test_a_path_peels_from_its_ends_without_slack():
    path = [(i, i + 1) for i in range(4)]
    state, _, degree, _ = peeled(path, epsilon=0.0)  # threshold: floor(mean)
    assert state.level.tolist() == [0, 1, 2, 1, 0] and state.rounds == 3
    assert state.remaining.tolist() == [1, 1, 0, 1, 1]
    assert peel_ranks(state, degree).tolist() == [0, 2, 4, 3, 1]
    loose, *_ = peeled(path, epsilon=1.0)  # every degree within twice the mean: one round
    assert loose.level.tolist() == [0] * 5 and loose.remaining.tolist() == [1, 2, 2, 2, 1]


def test_the_last_round_peels_every_vertex_left():
    state, *_ = peeled([(i, i + 1) for i in range(4)], epsilon=0.0, rounds=2)
    assert state.level.tolist() == [0, 1, 1, 1, 0] and state.alive == 0
    assert state.remaining.tolist() == [1, 1, 2, 1, 1]


def test_vertices_without_edges_are_peeled_in_round_0():
    keys, vertices, n = canonical(np.array([(5, 5), (1, 2), (2, 3), (1, 3), (3, 4)]))
    state = peel_levels(keys, degree_counts(keys, n), n, 0.0)
    assert vertex_ids(vertices).tolist() == [1, 2, 3, 4, 5]
    assert state.level[4] == 0 and state.remaining[4] == 0  # 5: a self-loop only


@given(pairs=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=250),
       epsilon=st.sampled_from([0.0, 0.25, 1.0, 3.0]), rounds=st.sampled_from([1, 3, 256]))
@settings(max_examples=100, deadline=None)
def test_the_peeling_matches_plain_python_and_bounds_every_out_list(pairs, epsilon, rounds):
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    keys, _, n = canonical(edges)
    degree = degree_counts(keys, n)
    state = peel_levels(keys, degree, n, epsilon, rounds)
    src, dst = unpack_keys(keys, checked_key_bits(n))
    level, at_peel = reference_peeling(n, set(zip(src.tolist(), dst.tolist(), strict=True)),
                                       epsilon, rounds)
    assert state.level.tolist() == level and state.remaining.tolist() == at_peel
    assert state.alive == 0 and state.rounds <= rounds
    rank = vertex_ranks(degree, "adirection", state)
    assert sorted(rank.tolist()) == list(range(n))  # a permutation
    by_order = sorted(range(n), key=lambda v: (level[v], at_peel[v], int(degree[v]), v))
    assert [int(rank[v]) for v in by_order] == list(range(n))
    assert (out_degrees(keys, rank, n) <= state.remaining).all()  # the per-vertex bound
    order = rank_and_order(degree, "adirection", state)[1]
    assert (rank[order] == np.arange(n)).all()


@given(pairs=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=250),
       senders=st.lists(st.integers(0, 3), max_size=250),
       epsilon=st.sampled_from([0.0, 0.25, 1.0]))
@settings(max_examples=100, deadline=None)
def test_peeling_the_senders_copies_of_an_edge_keeps_every_out_list_bound(pairs, senders,
                                                                        epsilon):
    """The distributed preparation peels the senders' keys before the sort merges an edge's
    copies (:func:`dtri.prepared.distributed.peel_partitions`): a vertex's remaining degree
    counts each copy, so its distinct out-neighbours, the out-list the ranks give it, are
    still at most its remaining degree when peeled."""
    edges = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    held = np.resize(np.array(senders or [0], dtype=np.int64), len(edges))
    frame = pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})
    vertices = partition_vertices(frame)
    n = vertex_count(vertices)
    copies = np.concatenate([np.zeros(0, np.int64)] + [
        canonical_keys(frame[held == s], vertices) for s in range(4)])
    keys = canonical_keys(frame, vertices)
    state = peel_levels(copies, degree_counts(copies, n), n, epsilon)
    assert state.alive == 0
    rank = vertex_ranks(degree_counts(copies, n), "adirection", state)
    assert sorted(rank.tolist()) == list(range(n))
    assert (out_degrees(keys, rank, n) <= state.remaining).all()


def test_the_epsilon_comes_from_the_dask_config():
    from dtri.prepared.local import orient_whole

    keys, _, n = canonical(np.array([(i, i + 1) for i in range(8)]))
    degree = degree_counts(keys, n)
    with dask.config.set({"dtri.adirection-epsilon": 0.0}):  # from the ends inwards
        assert orient_whole(keys, degree, n, "adirection")[3] == \
            "adirection (as given; 5 peeling rounds)"
    assert orient_whole(keys, degree, n, "adirection")[3] == \
        "adirection (as given; 1 peeling round)"
    with dask.config.set({"dtri.adirection-epsilon": -1}), \
            pytest.raises(ConfigurationError, match="adirection-epsilon"):
        orient_whole(keys, degree, n, "adirection")
    with pytest.raises(ValueError, match="peeling"):
        vertex_ranks(degree, "adirection")
    with pytest.raises(ValueError, match="orientation"):
        vertex_ranks(degree, "auto")


def test_the_reasons_read_as_one_line():
    assert orientation_reason("degree", 1765, 16384) == \
        "auto: degree (longest out-list 1765 \u2264 16384)"
    assert orientation_reason("adirection", 20000, 16384, 3) == \
        "auto: adirection (longest degree out-list 20000 > 16384; 3 peeling rounds)"
    assert orientation_reason("adirection", rounds=1) == \
        "adirection (as given; 1 peeling round)"
    assert orientation_reason("id") == "id (as given)"


# ------------------------------------------------------------------ whole runs


def check_orientations(edges: np.ndarray, **options) -> None:
    """The count and the triangles per vertex under every orientation, against NetworkX."""
    graph = networkx_graph(edges)
    expected = nx.triangles(graph)
    for orientation in ORIENTATIONS:
        with dtri.prepare(edges, backend="cpu", orientation=orientation, **options) as prepared:
            assert prepared.orientation in ("degree", "id", "adirection")
            assert orientation in ("auto", prepared.orientation)
            assert prepared.count_triangles() == sum(expected.values()) // 3, orientation
            assert host(prepared.triangles().compute()).to_dict() == expected, orientation


@given(edges=messy_graphs(), npartitions=st.integers(1, 4),
       epsilon=st.sampled_from([0.0, 0.5, 1.0]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_orientation_counts_as_networkx(edges, npartitions, epsilon):
    with dask.config.set({"dtri.adirection-epsilon": epsilon}):
        check_orientations(edges, scheduler="synchronous", npartitions=npartitions)


def hub_graph(leaves: int = 60, seed: int = 0) -> np.ndarray:
    """A hub joined to every leaf, the leaves in a sparse random graph among themselves: the
    degree orientation gives the leaves long out-lists into the hub's neighbourhood."""
    rng = np.random.default_rng(seed)
    spokes = np.stack([np.zeros(leaves, np.int64), np.arange(1, leaves + 1)], 1)
    return np.concatenate([spokes, rng.integers(1, leaves + 1, (leaves * 4, 2))])


@pytest.mark.parametrize("npartitions", [1, 3])
def test_the_distributed_and_one_task_paths_give_the_same_ranks(npartitions):
    """The degree of each rank, the input id of each rank and the sorted edges agree between
    the one-task peeling and the rounds over partitions."""
    edges = hub_graph()
    options = {"backend": "cpu", "scheduler": "synchronous", "orientation": "adirection"}
    with dask.config.set({"dtri.adirection-epsilon": 0.0}), \
            dtri.prepare(edges, npartitions=1, **options) as one, \
            dtri.prepare(edges, npartitions=npartitions, **options) as many:
        assert np.array_equal(dask.compute(one.ids)[0], dask.compute(many.ids)[0])
        assert one.orientation_reason == many.orientation_reason
        assert one.orientation_reason.startswith("adirection (as given; ")
        assert max(s.max_out_degree for s in many.summaries) == \
            max(s.max_out_degree for s in one.summaries)
        assert ("direct" in many.seconds) == (npartitions > 1)


def test_the_direct_stage_is_timed_on_its_own():
    edges = hub_graph()
    result = dtri.count(edges, backend="cpu", scheduler="synchronous", npartitions=3,
                        orientation="adirection")
    assert result.triangles == sum(nx.triangles(networkx_graph(edges)).values()) // 3
    assert {"canonicalize", "rank", "direct", "orient", "sort"} <= set(result.seconds)
    degree = dtri.count(edges, backend="cpu", scheduler="synchronous", npartitions=3,
                        orientation="degree")
    assert "direct" not in degree.seconds


def degree_longest_out_list(edges: np.ndarray) -> int:
    """The longest out-list of the degree orientation: neighbours of higher (degree, id)."""
    keys, _, n = canonical(edges)
    degree = degree_counts(keys, n)
    rank = vertex_ranks(degree, "degree")
    return int(out_degree_counts(orient_keys(keys, rank, n), n).max(initial=0))


@pytest.mark.parametrize("npartitions", [1, 3])
@pytest.mark.parametrize("limit", [2, 5, 1 << 14])
def test_auto_takes_adirection_when_the_degree_out_lists_outgrow_the_hash_tables(
        monkeypatch, npartitions, limit):
    monkeypatch.setattr("dtri.kernels.strategy.hash_max_members", lambda credits: limit)
    edges = hub_graph(30)
    longest = degree_longest_out_list(edges)
    assert 2 < longest < 1 << 14
    with dtri.prepare(edges, backend="cpu", scheduler="synchronous",
                      npartitions=npartitions) as graph:  # orientation: auto by default
        chosen = "adirection" if longest > limit else "degree"
        assert graph.orientation == chosen
        assert graph.orientation_reason.startswith(f"auto: {chosen} (longest ")
        assert f"{longest} {'>' if longest > limit else chr(0x2264)} {limit}" \
            in graph.orientation_reason
        # on several partitions the degree-sorted partitions are directed again, without the
        # input: the ranks of the second ranking map back to the input ids through the first
        again = chosen == "adirection" and npartitions > 1
        assert ("direct" in graph.seconds) == again and ("redirect" in graph.seconds) == again
        expected = nx.triangles(networkx_graph(edges))
        assert graph.count_triangles() == sum(expected.values()) // 3
        assert host(graph.triangles().compute()).to_dict() == expected


def test_every_orientation_on_two_worker_processes(dask_client, backend, monkeypatch):
    """The peeling's rounds on the workers; ``auto`` decided where the run started (the
    patched limit holds here only)."""
    if backend != "cpu":
        pytest.skip("the GPU runs the orientations in tests/gpu")
    rng = np.random.default_rng(11)
    edges = np.concatenate([hub_graph(80, seed=2), rng.integers(0, 400, (3_000, 2))])
    for npartitions in (1, 4):
        check_orientations(edges, npartitions=npartitions)
    monkeypatch.setattr("dtri.kernels.strategy.hash_max_members", lambda credits: 4)
    for npartitions in (1, 4):
        with dtri.prepare(edges, backend="cpu", npartitions=npartitions) as graph:
            assert graph.orientation == "adirection"
            assert graph.orientation_reason.startswith("auto: adirection")
            assert graph.count_triangles() == \
                sum(nx.triangles(networkx_graph(edges)).values()) // 3
            assert ("direct" in graph.seconds) == (npartitions > 1)

"""Graphlet degrees (the 16 orbits of the Fast Graphlet Transform) against enumeration of every
connected induced subgraph on up to four vertices, over partitions, memory budgets (groups,
batches and anchor ranges), orientations, stagings and workers; the GPU runs them in
tests/gpu."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from dtri.errors import ConfigurationError
from tests.oracles import check_graphlets, host, messy_graphs


@given(edges=messy_graphs(), npartitions=st.integers(1, 4),
       memory_budget=st.sampled_from([None, 600, 3_000, 50_000]),
       orientation=st.sampled_from(["degree", "id", "adirection"]),
       staging=st.sampled_from(["device", "host"]),
       orbits=st.sampled_from(["all", "sigma0-4"]))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_graphlets_equal_enumeration(edges, npartitions, memory_budget, orientation, staging,
                                     orbits):
    check_graphlets(edges, orbits, backend="cpu", scheduler="synchronous",
                    npartitions=npartitions, memory_budget=memory_budget,
                    orientation=orientation, staging=staging)


def dense_graph(seed: int, vertices: int = 14, edges: int = 60) -> np.ndarray:
    """A graph dense enough for many 4-cliques, diamonds and 4-cycles."""
    return np.random.default_rng(seed).integers(0, vertices, (edges, 2))


@pytest.mark.parametrize("memory_budget", [None, 500, 2_000])
def test_dense_graphs_in_many_groups_batches_and_anchor_ranges(memory_budget):
    for seed in range(3):
        check_graphlets(dense_graph(seed), backend="cpu", scheduler="synchronous",
                        npartitions=3, memory_budget=memory_budget)


def test_wide_wedge_keys(monkeypatch):
    """Graphs whose three ids do not fit 63 bits write wedges as (pair, middle) rows."""
    from dtri.kernels import graphlets

    monkeypatch.setattr(graphlets, "PACKED_ID_BITS", 0)
    check_graphlets(dense_graph(7), backend="cpu", scheduler="synchronous", npartitions=2,
                    memory_budget=1_000)


def test_graphlets_on_two_worker_processes():
    check_graphlets(dense_graph(11, 16, 80), backend="cpu", workers=2, npartitions=3,
                    memory_budget="2KiB")


def test_graphlets_are_cached_and_checked():
    with dtri.prepare(dense_graph(1), backend="cpu", scheduler="synchronous") as graph:
        assert graph.graphlets() is graph.graphlets()
        rows = graph.cache["graphlet-rows-all"]
        graph.graphlets(kind="raw")
        assert graph.cache["graphlet-rows-all"] is rows  # raw reuses net's sums
        with pytest.raises(ConfigurationError, match="orbits must be one of"):
            graph.graphlets(orbits="sigma0-15")
        with pytest.raises(ConfigurationError, match="kind must be one of"):
            graph.graphlets(kind="induced")


def test_graphlets_of_a_k_truss_keep_only_its_vertices():
    edges = np.array([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4)])
    with dtri.prepare(edges, backend="cpu", scheduler="synchronous") as graph:
        truss = graph.k_truss(3)
        found = host(truss.graphlets().compute())
        assert sorted(found.index.tolist()) == [0, 1, 2]
        assert found.sigma4.tolist() == [1, 1, 1] and found.sigma2.tolist() == [0, 0, 0]

"""Every analytic of a prepared graph against NetworkX: triangles per vertex, clustering,
average clustering, transitivity, edge support, k-truss and truss numbers, over partitions,
budgets, bins, orientations, stagings and workers (the GPU runs them in tests/gpu)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from dtri.errors import ConfigurationError
from dtri.prepared.graph import ReleasedGraphError
from tests.oracles import check_analytics, host, messy_graphs, networkx_graph


@given(edges=messy_graphs(), npartitions=st.integers(1, 4),
       memory_budget=st.sampled_from([None, 1_000, 4_000, 50_000]),
       orientation=st.sampled_from(["degree", "id", "adirection"]),
       staging=st.sampled_from(["device", "host"]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_analytics_equal_networkx(edges, npartitions, memory_budget, orientation, staging):
    check_analytics(edges, backend="cpu", scheduler="synchronous", npartitions=npartitions,
                    memory_budget=memory_budget, orientation=orientation, staging=staging)


def test_analytics_on_two_worker_processes():
    """Pieces of one partition on both workers, groups of several partitions, the exchanges
    of per-vertex counts and per-edge credits between the workers."""
    rng = np.random.default_rng(3)
    edges = rng.integers(0, 500, (6_000, 2))
    check_analytics(edges, ks=(3, 4, 5, 6), backend="cpu", workers=2)
    check_analytics(edges, ks=(3, 5), backend="cpu", workers=2, npartitions=4,
                    memory_budget="64KiB")


def test_a_second_analytic_reuses_the_prepared_graph_and_the_triangles():
    rng = np.random.default_rng(5)
    edges = rng.integers(0, 300, (3_000, 2))
    with dtri.prepare(edges, backend="cpu", scheduler="synchronous") as graph:
        triangles = graph.triangles()
        assert graph.triangles() is triangles  # cached
        counts = graph.cache["vertex_triangles"]
        graph.clustering()
        graph.average_clustering()
        assert graph.cache["vertex_triangles"] is counts  # clustering reused the counts
        assert graph.count_triangles() == int(host(triangles.compute()).sum()) // 3
    assert graph.released
    with pytest.raises(ReleasedGraphError, match="released"):
        graph.triangles()


def test_results_are_keyed_by_input_ids_and_write_to_parquet(tmp_path):
    edges = np.array([(10**12, 7), (7, 3), (3, 10**12), (3, 42), (5, 5)])
    with dtri.prepare(edges, backend="cpu", scheduler="synchronous") as graph:
        triangles = graph.triangles()
        assert triangles.index.name == "vertex" and triangles.name == "triangles"
        assert triangles.compute().to_dict() == {10**12: 1, 7: 1, 3: 1, 42: 0, 5: 0}
        # as the CLI's -o writes them: the ids as a column (Dask's writer of an index calls
        # pandas' deprecated set_index(inplace=True))
        graph.edge_support().to_parquet(tmp_path / "support", write_index=False)
        graph.triangles().reset_index().to_parquet(tmp_path / "triangles", write_index=False)
    support = pd.read_parquet(tmp_path / "support").sort_values(["u", "v"])
    assert support.to_dict("list") == {"u": [3, 3, 3, 7], "v": [7, 42, 10**12, 10**12],
                                       "support": [1, 0, 1, 1]}
    written = pd.read_parquet(tmp_path / "triangles").set_index("vertex")["triangles"]
    assert written.to_dict() == {10**12: 1, 7: 1, 3: 1, 42: 0, 5: 0}


def test_a_session_prepares_several_graphs_on_one_cluster():
    with dtri.Session(backend="cpu", scheduler="synchronous") as session:
        first = session.prepare(np.array([(0, 1), (1, 2), (0, 2)]))
        second = dtri.prepare(np.array([(0, 1), (1, 2)]), session=session)
        assert (first.count_triangles(), second.count_triangles()) == (1, 0)
        first.release()
        assert session.runtime is not None  # the session's cluster outlives its graphs
        with pytest.raises(ConfigurationError, match="option of the session"):
            session.prepare(np.array([(0, 1)]), backend="gpu")


def test_k_truss_is_a_prepared_graph_that_counts_and_truss_again():
    clique = [(u, v) for u in range(6) for v in range(u + 1, 6)]
    tail = [(5, 6), (6, 7), (7, 5), (7, 8)]
    with dtri.prepare(np.array(clique + tail), backend="cpu",
                      scheduler="synchronous") as graph:
        five = graph.k_truss(5)
        assert five.count_triangles() == 20 and five.edges == 15
        assert sorted(host(five.triangles().compute()).index) == list(range(6))
        assert five.k_truss(6).edges == 15 and five.k_truss(7).edges == 0
        three = graph.k_truss(3)
        assert three.edges == 18 and three.transitivity() == networkx_transitivity(
            clique + tail[:3])
        assert graph.k_truss(np.int64(5)).edges == 15 and graph.k_truss(0).edges == 19
        for k, shown in ((-1, "-1"), (np.int64(-2), "-2"), (1.5, "1.5"), ("4", "'4'"),
                         (True, "True"), (None, "None")):
            with pytest.raises(ValueError, match=rf"^k must be an integer of at least 0, "
                                                 rf"got {re.escape(shown)}$"):
                graph.k_truss(k)


def networkx_transitivity(edges: list) -> float:
    import networkx as nx

    return nx.transitivity(networkx_graph(np.array(edges)))


def test_an_empty_graph_has_empty_results():
    with dtri.prepare(np.array([[4, 4]]), backend="cpu", scheduler="synchronous") as graph:
        assert graph.triangles().compute().to_dict() == {4: 0}
        assert graph.clustering().compute().to_dict() == {4: 0.0}
        assert graph.average_clustering() == 0.0 and graph.transitivity() == 0.0
        assert len(graph.edge_support().compute()) == 0
        assert len(graph.truss_numbers().compute()) == 0
        assert graph.k_truss(3).edges == 0

"""dtri as a NetworkX backend: NetworkX's own tests of the functions dtri claims, run against
the backend (with a count of the calls that reached dtri); NetworkX's answers on hypothesis
graphs with labels of any hashable type; the backend's choices and settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dtri.nx.info import FUNCTIONS

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("networkx.algorithms.tests.test_cluster", "networkx.algorithms.tests.test_core")


def test_networkx_own_tests_pass_against_the_backend_and_reach_dtri(tmp_path):
    calls = tmp_path / "calls.json"
    env = {**os.environ, "NETWORKX_TEST_BACKEND": "dtri", "NETWORKX_FALLBACK_TO_NX": "True",
           "DTRI_NX_CALLS": str(calls), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", *SUITES, "-q", "-p", "tests.nx.nx_calls",
         "-p", "no:cacheprovider", "-W", "ignore::UserWarning"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
    reached = json.loads(calls.read_text())
    assert all(reached.get(name, 0) > 0 for name in FUNCTIONS), reached


LABELS = st.one_of(st.integers(-50, 50), st.text(max_size=3),
                   st.tuples(st.integers(0, 3), st.text(max_size=1)))


@st.composite
def labelled_graphs(draw) -> nx.Graph:
    """Simple graphs whose node labels are negative ints, strings and tuples (self-loops and
    isolated nodes included)."""
    labels = draw(st.lists(LABELS, min_size=1, max_size=14, unique=True))
    pick = st.sampled_from(labels)
    graph = nx.Graph()
    graph.add_nodes_from(labels)
    graph.add_edges_from(draw(st.lists(st.tuples(pick, pick), max_size=60)))
    return graph


@given(graph=labelled_graphs(), count_zeros=st.booleans())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_hashable_labels_give_networkx_answers(graph, count_zeros):
    nx.config.warnings_to_ignore.add("cache")
    assert nx.triangles(graph, backend="dtri") == nx.triangles(graph)
    some = list(graph)[: len(graph) // 2]
    assert nx.triangles(graph, some, backend="dtri") == nx.triangles(graph, some)
    first = next(iter(graph))
    assert nx.triangles(graph, first, backend="dtri") == nx.triangles(graph, first)
    assert nx.clustering(graph, backend="dtri") == nx.clustering(graph)
    assert nx.clustering(graph, first, backend="dtri") == nx.clustering(graph, first)
    expected = nx.average_clustering(graph, count_zeros=count_zeros) \
        if count_zeros or any(nx.clustering(graph).values()) else None
    if expected is not None:
        assert nx.average_clustering(graph, count_zeros=count_zeros,
                                     backend="dtri") == expected
    assert nx.transitivity(graph, backend="dtri") == nx.transitivity(graph)
    loops = nx.number_of_selfloops(graph)
    for k in (2, 3, 4):
        if loops:
            with pytest.raises(nx.NetworkXNotImplemented, match="self loops"):
                nx.k_truss(graph, k, backend="dtri")
            continue
        ours, theirs = nx.k_truss(graph, k, backend="dtri"), nx.k_truss(graph, k)
        assert list(ours.edges(data=True)) == list(theirs.edges(data=True))
        assert list(ours.nodes(data=True)) == list(theirs.nodes(data=True))


@pytest.mark.parametrize("k", [-1, 0, 2.5, 3.5, np.int64(4)])
def test_k_truss_takes_every_k_networkx_takes(k):
    graph = nx.karate_club_graph()
    ours, theirs = nx.k_truss(graph, k, backend="dtri"), nx.k_truss(graph, k)
    assert list(ours.edges) == list(theirs.edges) and list(ours.nodes) == list(theirs.nodes)


def test_the_backend_declines_what_it_does_not_do():
    from dtri.nx.backend import can_run, should_run

    graph = nx.karate_club_graph()
    assert can_run("triangles", (graph,), {}) is True
    assert can_run("clustering", (graph,), {"weight": "weight"}) is True
    assert can_run("clustering", (nx.DiGraph(graph),), {"weight": "weight"}) is True
    assert "attribute name" in can_run("clustering", (graph,), {"weight": len})
    assert "undirected" in can_run("triangles", (nx.DiGraph(graph),), {})
    assert "multigraph" in can_run("triangles", (nx.MultiGraph(graph),), {})
    assert "does not implement" in can_run("square_clustering", (graph,), {})
    assert "NetworkX is quicker" in should_run("triangles", (graph,), {})
    with nx.config.backends.dtri(min_edges=10):
        assert should_run("triangles", (graph,), {}) is True
    with pytest.raises(nx.NetworkXNotImplemented):  # NetworkX's own check, before dtri
        nx.triangles(nx.DiGraph([(1, 2)]), backend="dtri")


def test_settings_reach_dtri(monkeypatch):
    import dtri
    from dtri.nx import backend

    seen = {}
    real = dtri.prepare

    def prepare(edges, **options):
        seen.update(options)
        return real(edges, **options)

    monkeypatch.setattr(dtri, "prepare", prepare)
    graph = nx.complete_graph(5)
    with nx.config.backends.dtri(scheduler="synchronous", memory_budget="64MiB", backend="cpu"):
        assert nx.triangles(graph, backend="dtri") == {v: 6 for v in graph}
    assert seen == {"scheduler": "synchronous", "memory_budget": "64MiB", "backend": "cpu"}
    assert backend._options() == {"backend": "auto"}


def test_backend_priority_sends_big_graphs_to_dtri_and_keeps_small_ones(monkeypatch):
    import dtri

    prepared = []
    real = dtri.prepare
    monkeypatch.setattr(dtri, "prepare", lambda edges, **o: prepared.append(1) or real(edges, **o))
    small, big = nx.complete_graph(6), nx.gnm_random_graph(400, 3_000, seed=1)
    with nx.config(backend_priority=["dtri"]), nx.config.backends.dtri(min_edges=1_000):
        assert nx.triangles(small) == {v: 10 for v in small}
        assert not prepared  # fewer than min_edges: NetworkX ran it
        assert nx.transitivity(big) == nx.transitivity(big, backend="networkx")
        assert prepared  # dtri ran it

"""``networkx.all_triangles`` through the backend: NetworkX's own tests of it pass with no
fallback to NetworkX, and on hypothesis graphs of any hashable labels (with any ``nbunch``)
the backend yields NetworkX's tuples, each in NetworkX's order of its three nodes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.nx.test_networkx_backend import labelled_graphs

ROOT = Path(__file__).resolve().parents[2]


def test_networkx_own_all_triangles_tests_pass_without_fallback(tmp_path):
    """NetworkX falls back to itself only where ``NETWORKX_FALLBACK_TO_NX`` is set (to any
    text: ``False`` too): unset, a call dtri declined would xfail."""
    calls = tmp_path / "calls.json"
    env = {**os.environ, "NETWORKX_TEST_BACKEND": "dtri", "DTRI_NX_CALLS": str(calls),
           "PYTHONPATH": str(ROOT)}
    env.pop("NETWORKX_FALLBACK_TO_NX", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "networkx.algorithms.tests.test_cluster",
         "-k", "all_triangles", "-q", "-p", "tests.nx.nx_calls", "-p", "no:cacheprovider",
         "-W", "ignore::UserWarning"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "9 passed" in done.stdout and "xfail" not in done.stdout, done.stdout[-2000:]
    assert json.loads(calls.read_text()).get("all_triangles", 0) >= 8  # the directed one raises


@given(graph=labelled_graphs(), data=st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_backend_yields_networkx_tuples(graph, data):
    nodes = list(graph)
    nbunch = data.draw(st.one_of(st.none(), st.sampled_from(nodes),
                                 st.lists(st.sampled_from(nodes), max_size=6)))
    theirs = list(nx.all_triangles(graph, nbunch))
    ours = list(nx.all_triangles(graph, nbunch, backend="dtri"))
    assert len(ours) == len(theirs) and set(ours) == set(theirs)


def test_directed_graphs_are_refused():
    with pytest.raises(nx.NetworkXNotImplemented):
        list(nx.all_triangles(nx.DiGraph([(0, 1), (1, 2), (2, 0)]), backend="dtri"))


def test_a_multigraph_lists_the_triangles_of_its_simple_graph():
    """NetworkX knows a triangle by its nodes: parallel edges and self-loops change nothing.
    The other functions still decline multigraphs."""
    from dtri.nx.backend import can_run

    graph = nx.MultiGraph(nx.karate_club_graph())
    graph.add_edges_from([(0, 1), (0, 1), (2, 2), (32, 33)])
    assert can_run("all_triangles", (graph,), {}) is True
    assert "multigraph" in can_run("triangles", (graph,), {})
    for nbunch in (None, [0, 33]):
        theirs = list(nx.all_triangles(graph, nbunch))
        ours = list(nx.all_triangles(graph, nbunch, backend="dtri"))
        assert len(ours) == len(theirs) and set(ours) == set(theirs)

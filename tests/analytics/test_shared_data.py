"""Every shared SNAP graph: the count equal to its published one, and every analytic equal to
NetworkX's."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import dtri
from tests.oracles import manifest_rows, shared_graph

ROWS = manifest_rows()


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_published_counts(row, shared_data, dask_client, backend):
    result = dtri.count(shared_data / row["file"], backend=backend)
    assert result.triangles == int(row["triangles"])
    assert result.vertices == int(row["nodes"])
    assert result.edges == int(row["undirected_edges"])
    assert result.backend == backend


def test_published_count_through_the_cli(shared_data, backend):
    """`dtri count --json` on the embedded default (a local cluster it starts itself)."""
    row = next(r for r in ROWS if r["name"] == "wiki-Vote")
    done = subprocess.run(
        [sys.executable, "-m", "dtri", "count", "--json", "--backend", backend,
         str(shared_data / row["file"])],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["triangles"] == int(row["triangles"])
    assert report["edges"] == int(row["undirected_edges"])
    assert report["wedges"] > report["triangles"]


def test_all_graphs_in_one_glob_are_one_graph(shared_data):
    """Several files are one graph: the glob of two ca- graphs vs their union in NetworkX."""
    import networkx as nx

    files = sorted(shared_data.glob("ca-Gr*.txt.gz")) + sorted(shared_data.glob("ca-He*.txt.gz"))
    graph = nx.compose_all([shared_graph(path) for path in files])
    expected = sum(nx.triangles(graph).values()) // 3
    assert dtri.count_triangles([str(f) for f in files], scheduler="synchronous",
                                backend="cpu") == expected


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_per_vertex_analytics_of_every_shared_graph(row, shared_data, backend):
    """The per-vertex triangles sum to 3 × the published count and equal NetworkX's at every
    vertex; clustering, average clustering and transitivity within 1e-12 of NetworkX's."""
    import networkx as nx

    from tests.oracles import host

    graph = shared_graph(shared_data / row["file"])
    with dtri.prepare(shared_data / row["file"], backend=backend,
                      scheduler="synchronous") as prepared:
        triangles = host(prepared.triangles().compute())
        assert int(triangles.sum()) == 3 * int(row["triangles"])
        assert triangles.to_dict() == nx.triangles(graph)
        clustering = host(prepared.clustering().compute())
        assert max(abs(clustering[v] - c) for v, c in nx.clustering(graph).items()) <= 1e-12
        assert abs(prepared.average_clustering() - nx.average_clustering(graph)) <= 1e-12
        assert abs(prepared.transitivity() - nx.transitivity(graph)) <= 1e-12


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_graphlets_of_every_shared_graph(row, shared_data, backend):
    """Σ σ4 = 3 × the published count and σ4 equals the per-vertex triangles; net and raw
    convert into each other; each graphlet's orbit sums count whole copies."""
    from dtri.kernels.graphlets import GRAPHLETS, net_from_raw
    from tests.oracles import host

    with dtri.prepare(shared_data / row["file"], backend=backend,
                      scheduler="synchronous") as prepared:
        net = host(prepared.graphlets().compute()).sort_index()
        raw = host(prepared.graphlets(kind="raw").compute()).sort_index()
        triangles = host(prepared.triangles().compute()).sort_index()
    assert int(net.sigma4.sum()) == 3 * int(row["triangles"])
    assert (net.sigma4 == triangles).all() and (net.index == triangles.index).all()
    assert int(net.sigma1.sum()) == 2 * int(row["undirected_edges"])
    assert (net.to_numpy() == net_from_raw(raw.to_numpy().T).T).all()
    for _, orbit, per_copy in GRAPHLETS:
        assert int(net[f"sigma{orbit}"].sum()) % per_copy == 0, orbit


SMALLER = [r for r in ROWS if int(r["undirected_edges"]) <= 30_000 or r["name"] == "p2p-Gnutella24"]


@pytest.mark.parametrize("row", SMALLER, ids=[r["name"] for r in SMALLER])
def test_k_truss_of_the_smaller_shared_graphs_for_every_k(row, shared_data, backend):
    """``k_truss(k)`` equals ``networkx.k_truss`` for every k, and the truss numbers agree.
    NetworkX's k-truss takes minutes on the larger graphs for every k; there
    examples/benchmarks/verify_shared.py runs the same check (results/verify-shared-cpu.jsonl)."""
    from tests.oracles import check_analytics

    graph = shared_graph(shared_data / row["file"])
    edges = np.array(list(graph.edges()) + [(v, v) for v in graph if not graph.degree(v)],
                     dtype=np.int64)
    check_analytics(edges, backend=backend, scheduler="synchronous")

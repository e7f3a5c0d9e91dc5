"""Every shared SNAP graph counted exactly equal to its published triangle count."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import dtri
from tests.oracles import manifest_rows

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
    import gzip

    import networkx as nx

    files = sorted(shared_data.glob("ca-Gr*.txt.gz")) + sorted(shared_data.glob("ca-He*.txt.gz"))
    graph = nx.Graph()
    for path in files:
        with gzip.open(path, "rt") as handle:
            for line in handle:
                if line.strip() and not line.startswith("#"):
                    u, v = map(int, line.split()[:2])
                    if u != v:
                        graph.add_edge(u, v)
    expected = sum(nx.triangles(graph).values()) // 3
    assert dtri.count_triangles([str(f) for f in files], scheduler="synchronous",
                                backend="cpu") == expected

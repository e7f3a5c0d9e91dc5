"""The profile (dtri.profile): its numbers and binned distributions equal NetworkX's on
karate and two shared graphs, and the bins are the same on one and four workers as the
in-memory histogram."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import dtri
from dtri.analytics.profile import BIN_EDGES, BINS, bin_of, truss_table
from tests.oracles import PAGE_FIGURES, REPO_ROOT, SHARED_DATA, parsed_page, shared_graph

KARATE = REPO_ROOT / "examples" / "karate.txt"
SHARED = ("email-Eu-core.txt.gz", "ca-GrQc.txt.gz")


def in_memory_bins(graph: nx.Graph) -> dict[str, np.ndarray]:
    """The profile's bins computed from NetworkX's per-vertex values in this process."""
    nodes = list(graph.nodes)
    degree = np.array([graph.degree(v) for v in nodes], dtype=np.int64)
    triangles = nx.triangles(graph)
    counts = np.array([triangles[v] for v in nodes], dtype=np.int64)
    clustering = nx.clustering(graph)
    values = np.array([clustering[v] for v in nodes], dtype=np.float64)
    at = bin_of(degree)
    return {"vertices": np.bincount(at, minlength=BINS),
            "degree_sum": np.bincount(at, weights=degree, minlength=BINS),
            "triangles_sum": np.bincount(at, weights=counts, minlength=BINS),
            "clustering_sum": np.bincount(at, weights=values, minlength=BINS),
            "triangle_vertices": np.bincount(bin_of(counts), minlength=BINS)}


def check_against(profile: dtri.analytics.profile.Profile, graph: nx.Graph) -> None:
    """Every number and bin of ``profile`` equals NetworkX's for ``graph``."""
    expected = in_memory_bins(graph)
    degree = profile.degree.set_index("low")
    kept = np.flatnonzero(expected["vertices"])
    assert list(degree.index) == list(BIN_EDGES[kept])
    for column in ("vertices", "degree_sum", "triangles_sum"):
        assert list(degree[column]) == [int(x) for x in expected[column][kept]], column
    np.testing.assert_allclose(degree["clustering_sum"], expected["clustering_sum"][kept],
                               rtol=1e-12, atol=1e-12)
    tri = profile.triangles.set_index("low")["vertices"]
    kept_t = np.flatnonzero(expected["triangle_vertices"])
    assert dict(tri) == {int(BIN_EDGES[b]): int(expected["triangle_vertices"][b])
                         for b in kept_t}
    # the degree histogram itself, bin by bin
    histogram = nx.degree_histogram(graph)
    by_bin = np.bincount(bin_of(np.arange(len(histogram))), weights=histogram, minlength=BINS)
    assert list(degree["vertices"]) == [int(x) for x in by_bin[kept]]
    numbers = profile.numbers
    assert numbers["vertices"] == graph.number_of_nodes()
    assert numbers["edges"] == graph.number_of_edges()
    assert numbers["triangles"] == sum(nx.triangles(graph).values()) // 3
    assert numbers["transitivity"] == pytest.approx(nx.transitivity(graph), abs=1e-12)
    assert numbers["average_clustering"] == pytest.approx(nx.average_clustering(graph),
                                                          abs=1e-12)
    truss = profile.truss.set_index("k")
    assert numbers["max_truss"] == truss.index.max()
    for k in truss.index:
        assert truss.loc[k, "kept"] == nx.k_truss(graph, k).number_of_edges(), k
    assert nx.k_truss(graph, numbers["max_truss"] + 1).number_of_edges() == 0


def test_karate_equals_networkx():
    check_against(dtri.profile(str(KARATE), backend="cpu"),
                  nx.read_edgelist(KARATE, nodetype=int))


@pytest.mark.parametrize("name", SHARED)
def test_shared_graphs_equal_networkx(name, shared_data):
    check_against(dtri.profile(str(shared_data / name), backend="cpu"),
                  shared_graph(shared_data / name))


@pytest.fixture(scope="module", params=[1, 4])
def workers(request):
    """One or four local workers (threads of this process)."""
    import logging

    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=request.param, threads_per_worker=1, processes=False,
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        yield request.param, client


def test_the_bins_on_one_and_four_workers_equal_the_in_memory_histogram(workers):
    count, _ = workers
    name = "email-Eu-core.txt.gz"
    if not (SHARED_DATA / name).exists():
        pytest.skip("shared graphs not found")
    with dtri.prepare(str(SHARED_DATA / name), backend="cpu", npartitions=5) as graph:
        assert len(graph.tasks.workers) == count and graph.partitions > 1
        profile = graph.profile()
    assert profile.numbers["workers"] == count
    check_against(profile, shared_graph(SHARED_DATA / name))


def test_the_graphlet_totals_equal_the_graphlet_summary():
    with dtri.prepare(str(KARATE), backend="cpu") as graph:
        profile = graph.profile(graphlets=True)
        summary = graph.graphlet_summary(top=0)
    assert profile.graphlets is not None and profile.orbits is not None
    assert dict(zip(profile.graphlets["graphlet"], profile.graphlets["copies"],
                    strict=True)) == summary["graphlets"]
    totals = dict(zip(profile.orbits["orbit"], profile.orbits["total"], strict=True))
    assert totals == summary["orbit_totals"]
    karate = nx.karate_club_graph()
    assert summary["graphlets"]["triangles"] == 45
    assert totals["sigma1"] == 2 * karate.number_of_edges()  # the degrees' sum
    assert totals["sigma4"] == 3 * 45  # triangles at the vertices


def test_a_prepared_graph_is_profiled_as_it_is_and_kept(tmp_path):
    with dtri.prepare(str(KARATE), backend="cpu") as graph:
        profile = dtri.profile(graph, output=str(tmp_path / "page"))
        assert profile.numbers["triangles"] == graph.count_triangles() == 45
        with pytest.raises(dtri.ConfigurationError, match="backend shapes a graph"):
            dtri.profile(graph, backend="cpu")
    assert (tmp_path / "page" / "index.html").exists()


def test_the_numbers_and_tables_are_plain_data():
    profile = dtri.profile(str(KARATE), backend="cpu")
    plain = profile.to_dict()
    assert plain["numbers"]["triangles"] == 45
    assert set(plain["tables"]) == {"degree", "triangles", "truss"}
    assert all(isinstance(row["vertices"], int) for row in plain["tables"]["degree"])


def test_a_graph_without_triangles_or_edges_keeps_its_truss_table_sane():
    table = truss_table(np.array([0, 0, 5]))
    assert list(table["k"]) == [2] and list(table["kept"]) == [5]
    assert truss_table(np.zeros(3, dtype=np.int64)).empty


def test_bins_are_logarithmic_and_start_one_value_each():
    assert list(BIN_EDGES[:8]) == [0, 1, 2, 3, 4, 5, 6, 8]
    assert np.all(np.diff(BIN_EDGES) > 0)
    values = np.array([0, 1, 7, 8, 1000, 2**40])
    at = bin_of(values)
    assert np.all(BIN_EDGES[at] <= values) and np.all(values < BIN_EDGES[at + 1])


@pytest.mark.gpu
def test_on_the_gpu_the_profile_equals_networkx(shared_data):
    name = SHARED[0]
    check_against(dtri.profile(str(shared_data / name), backend="gpu"),
                  shared_graph(shared_data / name))


@pytest.mark.parametrize("library", ["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def test_a_partition_without_a_present_vertex_bins_to_zeros(library):
    """A k-truss's partition can hold no present vertex: its bins are zeros of the same types
    as a non-empty partition's (CuPy's bincount of nothing raises)."""
    import importlib

    from dtri.analytics.profile import vertex_bins

    xp = importlib.import_module(library)
    ids = xp.arange(4, dtype=xp.int64)
    degree = xp.asarray([0, 2, 1, 3], dtype=xp.int64)
    counts = xp.zeros(4, dtype=xp.int64)
    full = vertex_bins((ids, degree, None), counts)
    for block in ((ids, degree, xp.zeros(4, dtype=bool)), (ids[:0], degree[:0], None)):
        binned = vertex_bins(block, counts[: block[1].shape[0]])
        assert [(b.shape, b.dtype) for b in binned] == [(b.shape, b.dtype) for b in full]
        assert not any(b.any() for b in binned)


def test_a_path_objects_title(tmp_path):
    out = tmp_path / "page"
    profile = dtri.profile(Path(KARATE), output=str(out), backend="cpu")
    assert profile.output == str(out)
    assert "karate.txt" in (out / "index.html").read_text()


def test_a_graph_without_triangles_still_makes_every_figure(tmp_path):
    path = np.array([[0, 1], [1, 2], [2, 3]])
    profile = dtri.profile(path, output=str(tmp_path / "page"), backend="cpu")
    assert profile.numbers["triangles"] == 0 and profile.numbers["max_truss"] == 2
    assert list(profile.truss["kept"]) == [3]
    assert list(profile.triangles["vertices"]) == [4]
    page = parsed_page((tmp_path / "page" / "index.html").read_text())
    assert set(page.figures) == PAGE_FIGURES == page.drawn

"""Weighted and directed clustering of edge tables (:func:`dtri.clustering`) against NetworkX:
messy inputs (duplicates with other weights, both directions, self-loops, huge ids) cut into
several partitions, and the shared graphs with random weights and directions."""

from __future__ import annotations

import gzip

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from tests.oracles import manifest_rows, messy_graphs

TOLERANCE = 1e-12
KINDS = [(None, False), ("weight", False), (None, True), ("weight", True)]


def networkx_of(rows: pd.DataFrame, directed: bool) -> nx.Graph:
    """The rows added one by one to a NetworkX graph: a later row of an edge replaces its
    weight."""
    graph = nx.DiGraph() if directed else nx.Graph()
    for u, v, w in rows[["src", "dst", "weight"]].itertuples(index=False):
        graph.add_edge(int(u), int(v), weight=float(w))
    return graph


def ours(rows: pd.DataFrame, weight: str | None, directed: bool, partitions: int,
         backend: str = "cpu", **options) -> pd.DataFrame:
    """``dtri.clustering`` of the rows cut into ``partitions`` (``options``: the run's, as
    for ``dtri.prepare``)."""
    import dask.dataframe as dd

    frame = dd.from_pandas(rows, npartitions=partitions, sort=False)
    if backend == "gpu":
        frame = frame.to_backend("cudf")
    found = dtri.clustering(frame, weight=weight, directed=directed, **options).compute()
    return found.to_pandas() if hasattr(found, "to_pandas") else found


def check(rows: pd.DataFrame, weight: str | None, directed: bool, partitions: int,
          backend: str = "cpu", **options) -> None:
    graph = networkx_of(rows, directed)
    found = ours(rows, weight, directed, partitions, backend, **options)
    assert sorted(found.index.tolist()) == sorted(graph)  # every vertex of the rows
    expected = nx.clustering(graph, weight=weight)
    values = found["clustering"]
    for v, c in expected.items():
        assert values[v] == pytest.approx(c, rel=TOLERANCE, abs=TOLERANCE), (v, weight, directed)
    if weight is None:  # integers: exact
        for v, c in expected.items():
            assert values[v] == c
    degrees = dict(graph.degree()) if not directed else {
        v: graph.in_degree(v) + graph.out_degree(v) - 2 * graph.has_edge(v, v) for v in graph}
    if not directed:
        degrees = {v: d - 2 * graph.has_edge(v, v) for v, d in degrees.items()}
    assert found["degree"].to_dict() == degrees


@given(edges=messy_graphs(), seed=st.integers(0, 2**32 - 1), partitions=st.integers(1, 4))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_messy_rows_give_networkx_clustering(edges, seed, partitions):
    rng = np.random.default_rng(seed)
    rows = pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1],
                         "weight": rng.integers(-3, 9, len(edges)).astype(float)})
    if rows.empty:
        return
    partitions = min(partitions, len(rows))
    for weight, directed in KINDS:
        graph = networkx_of(rows, directed)
        if weight is not None and max(w for _, _, w in graph.edges(data="weight")) == 0:
            continue  # NetworkX divides by the largest weight: 0 is its ZeroDivisionError
        check(rows, weight, directed, partitions)


def test_a_later_row_replaces_an_earlier_one_across_partitions():
    rows = pd.DataFrame({"src": [0, 1, 2, 1, 0, 2], "dst": [1, 2, 0, 0, 2, 1],
                         "weight": [8.0, 1.0, 1.0, 1.0, 2.0, 4.0]})
    for directed in (False, True):
        for partitions in (1, 2, 3, 6):
            check(rows, "weight", directed, partitions)
    found = ours(rows, "weight", False, 3)  # (0, 1): 8 then 1; max weight 4 (2 → 1 last)
    assert found["clustering"][0] == pytest.approx(np.cbrt(1 / 4 * 4 / 4 * 2 / 4))


@pytest.mark.parametrize("seed", range(4))
def test_dense_random_digraphs_give_fagiolo_t_at_every_vertex(seed):
    """Many reciprocated pairs, negative weights: each vertex's ``t``, total and reciprocal
    degree as NetworkX's own iterators give them."""
    from networkx.algorithms.cluster import (
        _directed_triangles_and_degree_iter,
        _directed_weighted_triangles_and_degree_iter,
    )

    rng = np.random.default_rng(seed)
    graph = nx.gnp_random_graph(24, 0.35, seed=seed, directed=True)
    rows = pd.DataFrame([(u, v, rng.normal()) for u, v in graph.edges],
                        columns=["src", "dst", "weight"])
    rows.loc[len(rows)] = (3, 3, 0.5)  # a self-loop: in the largest weight only
    digraph = networkx_of(rows, directed=True)
    for weight, expected in (
            (None, _directed_triangles_and_degree_iter(digraph)),
            ("weight", _directed_weighted_triangles_and_degree_iter(digraph, weight="weight"))):
        found = ours(rows, weight, True, 3)
        for v, total, reciprocal, t in expected:
            assert (found["degree"][v], found["reciprocal"][v]) == (total, reciprocal)
            assert found["t"][v] == pytest.approx(t, rel=TOLERANCE, abs=TOLERANCE), (v, weight)
            if weight is None:
                assert found["t"][v] == t  # integers: exact
        check(rows, weight, True, 3)


def test_the_last_row_is_the_last_by_partition_then_position():
    import dask.dataframe as dd

    from dtri.analytics.weighted import last_rows

    rows = pd.DataFrame({"src": [0, 5, 0], "dst": [1, 6, 1], "w": [1.0, 2.0, 3.0]})
    frame = dd.from_pandas(rows, npartitions=2, sort=False)
    assert [len(p) for p in frame.partitions] == [2, 1]  # both (0, 1) rows first in theirs
    kept = last_rows(frame, ["src", "dst"]).compute().sort_values("src")
    assert kept.values.tolist() == [[0, 1, 3.0], [5, 6, 2.0]]


def test_no_triangle_and_no_edge():
    rows = pd.DataFrame({"src": [1, 2, 5], "dst": [2, 3, 5], "weight": [1.0, 2.0, 3.0]})
    for weight, directed in KINDS:
        found = ours(rows, weight, directed, 2)
        assert found["clustering"].to_dict() == {1: 0.0, 2: 0.0, 3: 0.0, 5: 0.0}


def test_a_frame_without_the_columns_is_refused():
    with pytest.raises(dtri.InputError, match="columns"):
        dtri.clustering(pd.DataFrame({"src": [1], "dst": [2]}), weight="w")


SHARED = [r for r in manifest_rows() if r["name"] in ("email-Eu-core", "ca-GrQc")]


def shared_rows(path, seed: int) -> pd.DataFrame:
    """A shared graph's rows as they are (email-Eu-core is directed), in a random direction
    where it is undirected, with random weights."""
    with gzip.open(path, "rt") as handle:
        pairs = np.array([line.split()[:2] for line in handle if not line.startswith("#")],
                         dtype=np.int64)
    rng = np.random.default_rng(seed)
    flip = rng.random(len(pairs)) < 0.5 if "ca-" in str(path) else np.zeros(len(pairs), bool)
    pairs[flip] = pairs[flip][:, ::-1]
    return pd.DataFrame({"src": pairs[:, 0], "dst": pairs[:, 1],
                         "weight": rng.random(len(pairs)) * 10})


@pytest.mark.parametrize("row", SHARED, ids=[r["name"] for r in SHARED])
@pytest.mark.parametrize("partitions", [1, 4])
def test_shared_graphs_with_random_weights_and_directions(row, partitions, shared_data,
                                                          backend):
    rows = shared_rows(shared_data / row["file"], seed=7)
    for weight, directed in KINDS[1:]:
        check(rows, weight, directed, partitions, backend)


@pytest.mark.parametrize("row", SHARED[:1], ids=[r["name"] for r in SHARED[:1]])
def test_shared_graph_on_a_cluster(row, shared_data, dask_client, backend):
    rows = shared_rows(shared_data / row["file"], seed=3)
    check(rows, "weight", True, 4, backend)


def test_a_session_on_a_cluster_keeps_the_result_on_its_workers(shared_data, dask_client):
    from distributed import futures_of

    rows = shared_rows(shared_data / SHARED[0]["file"], seed=5)
    with dtri.Session(scheduler=dask_client.scheduler.address) as session:
        found = dtri.clustering(rows, weight="weight", directed=True, session=session)
        assert futures_of(found)  # persisted on the session's workers, the graph released
        values = found["clustering"].compute()
    expected = nx.clustering(networkx_of(rows, directed=True), weight="weight")
    assert all(values[v] == pytest.approx(c, rel=TOLERANCE, abs=TOLERANCE)
               for v, c in expected.items())


@pytest.mark.gpu
def test_cudf_partitions_give_networkx_clustering():
    rng = np.random.default_rng(11)
    edges = rng.integers(0, 40, (600, 2))
    rows = pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1],
                         "weight": rng.random(len(edges))})
    for weight, directed in KINDS:
        check(rows, weight, directed, 3, backend="gpu")

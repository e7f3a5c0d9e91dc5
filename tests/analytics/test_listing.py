"""Every triangle listed (``PreparedGraph.list_triangles``, ``dtri.write_triangles``): each
triangle once, as input ids ``a < b < c``, equal to ``networkx.all_triangles`` as a set, on
karate, shared SNAP graphs and messy inputs, in process and on a cluster of two workers, with
``limit`` and ``vertices``."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from tests.oracles import host, messy_graphs, networkx_graph, shared_graph

KARATE = Path(__file__).resolve().parents[2] / "examples" / "karate.txt"
SHARED = ("email-Eu-core.txt.gz", "ca-GrQc.txt.gz")


def oracle(graph: nx.Graph, nbunch=None) -> set[tuple[int, int, int]]:
    """NetworkX's triangles (of ``nbunch``), each as its sorted ids."""
    return {tuple(sorted(t)) for t in nx.all_triangles(graph, nbunch)}


def rows(frame) -> list[tuple[int, int, int]]:
    """A computed listing's rows (checked: columns a, b, c, int64, a < b < c)."""
    frame = host(frame)
    assert list(frame.columns) == ["a", "b", "c"]
    assert all(str(t) == "int64" for t in frame.dtypes)
    listed = [tuple(r) for r in frame.to_numpy().tolist()]
    assert all(a < b < c for a, b, c in listed)
    return listed


def check_listing(prepared, graph: nx.Graph, nbunch=None) -> None:
    """The listing of ``prepared`` (of ``nbunch``): each triangle once, NetworkX's set."""
    listed = rows(prepared.list_triangles(vertices=nbunch).compute())
    assert len(listed) == len(set(listed))
    assert set(listed) == oracle(graph, nbunch)


def karate() -> nx.Graph:
    edges = np.loadtxt(KARATE, dtype=np.int64)
    return networkx_graph(edges)


@pytest.mark.parametrize("options", [{"scheduler": "synchronous"}, {"scheduler": "threads"},
                                     {"scheduler": "synchronous", "memory_budget": "1KiB"}],
                         ids=["synchronous", "threads", "many-tasks"])
def test_karate_in_process(options):
    graph = karate()
    with dtri.prepare(str(KARATE), backend="cpu", **options) as prepared:
        check_listing(prepared, graph)
        check_listing(prepared, graph, [0, 33, 10**9])
        check_listing(prepared, graph, [])


@pytest.mark.parametrize("name", SHARED)
def test_shared_graphs_on_one_and_two_workers(name, shared_data, dask_client, backend):
    """One worker in process, and the cluster's two (one per GPU): with a small budget the
    listing is cut into many tasks over several groups of partitions."""
    graph = shared_graph(shared_data / name)
    path = shared_data / name
    with dtri.prepare(path, backend=backend, scheduler="synchronous") as prepared:
        check_listing(prepared, graph)
    with dtri.prepare(path, backend=backend, memory_budget="2MiB") as prepared:
        assert prepared.list_triangles().npartitions > 2
        check_listing(prepared, graph)
        some = sorted(graph)[::97]
        check_listing(prepared, graph, some)
        listed = rows(prepared.list_triangles(limit=1000).compute())
        assert len(listed) == 1000 and set(listed) <= oracle(graph)


@given(edges=messy_graphs(), data=st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_messy_inputs(edges, data):
    """Self-loops, duplicates, both directions, sparse ids up to 2**63 - 1."""
    graph = networkx_graph(edges)
    nbunch = data.draw(st.lists(st.sampled_from(sorted(graph)), max_size=4)) if len(graph) \
        else []
    with dtri.prepare(edges, backend="cpu", scheduler="synchronous") as prepared:
        check_listing(prepared, graph)
        check_listing(prepared, graph, nbunch)
        limit = data.draw(st.integers(0, 5))
        listed = rows(prepared.list_triangles(limit=limit).compute())
        assert len(listed) == min(limit, len(oracle(graph))) and set(listed) <= oracle(graph)


def test_limit_takes_the_first_triangles_in_the_listing_order():
    graph = karate()
    with dtri.prepare(str(KARATE), backend="cpu", scheduler="synchronous",
                      memory_budget="1KiB") as prepared:
        everything = rows(prepared.list_triangles().compute())
        assert rows(prepared.list_triangles(limit=7).compute()) == everything[:7]
        assert rows(prepared.list_triangles(limit=10**6).compute()) == everything
        assert rows(prepared.list_triangles(limit=0).compute()) == []
        some = rows(prepared.list_triangles(limit=3, vertices=[33]).compute())
        assert len(some) == 3 and set(some) <= oracle(graph, [33])


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_a_bad_limit_is_refused(bad):
    with dtri.prepare(str(KARATE), backend="cpu", scheduler="synchronous") as prepared, \
            pytest.raises(dtri.ConfigurationError, match="limit must be an integer"):
        prepared.list_triangles(limit=bad)


def test_bad_vertices_are_refused():
    with dtri.prepare(str(KARATE), backend="cpu", scheduler="synchronous") as prepared, \
            pytest.raises(dtri.ConfigurationError, match="vertices must be integer"):
        prepared.list_triangles(vertices=["x"])


def test_write_triangles_writes_parquet_once_complete(tmp_path):
    graph = karate()
    out = tmp_path / "triangles"
    written = dtri.write_triangles(str(KARATE), str(out), backend="cpu",
                                   scheduler="synchronous", memory_budget="1KiB")
    files = sorted(out.glob("*.parquet"))
    assert len(files) > 1  # a file per listing task
    listed = rows(pd.read_parquet(out))
    assert written == len(listed) == len(oracle(graph)) and set(listed) == oracle(graph)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["triangles"]
    with pytest.raises(dtri.DtriError, match="already exists"):
        dtri.write_triangles(str(KARATE), str(out), backend="cpu", scheduler="synchronous")


def test_no_triangles_writes_an_empty_listing(tmp_path):
    out = tmp_path / "none"
    edges = np.array([[0, 1], [1, 2], [2, 3], [5, 5]], dtype=np.int64)
    assert dtri.write_triangles(edges, str(out), backend="cpu", scheduler="synchronous") == 0
    frame = pd.read_parquet(out)
    assert list(frame.columns) == ["a", "b", "c"] and len(frame) == 0


def test_a_k_truss_lists_its_own_triangles():
    graph = karate()
    with dtri.prepare(str(KARATE), backend="cpu", scheduler="synchronous") as prepared, \
            prepared.k_truss(4) as truss:
        check_listing(truss, nx.k_truss(graph, 4))

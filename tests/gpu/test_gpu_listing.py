"""Every triangle listed on one GPU: the CUDA kernels (the intersection's credits and the
triangle records) give NetworkX's triangles, as cuDF partitions under device staging and
pandas ones under host staging (needs a GPU)."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

import dtri
from tests.analytics.test_listing import SHARED, check_listing, oracle, rows
from tests.oracles import messy_graphs, networkx_graph, shared_graph

pytestmark = pytest.mark.gpu


@given(edges=messy_graphs())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_gpu_listing_of_messy_inputs(edges):
    graph = networkx_graph(edges)
    with dtri.prepare(edges, backend="gpu", scheduler="synchronous") as prepared:
        check_listing(prepared, graph)
        check_listing(prepared, graph, sorted(graph)[:2])


@pytest.mark.parametrize("staging", ["device", "host"])
def test_gpu_listing_of_a_shared_graph(shared_data, staging):
    name = SHARED[0]
    graph = shared_graph(shared_data / name)
    with dtri.prepare(shared_data / name, backend="gpu", scheduler="synchronous",
                      staging=staging, memory_budget="2MiB") as prepared:
        assert prepared.list_triangles().npartitions > 2
        check_listing(prepared, graph)
        check_listing(prepared, graph, sorted(graph)[::50])
        listed = rows(prepared.list_triangles(limit=99).compute())
        assert len(listed) == 99 and set(listed) <= oracle(graph)


def test_gpu_write_triangles_on_its_own_cluster(shared_data, tmp_path):
    name = SHARED[1]
    graph = shared_graph(shared_data / name)
    out = tmp_path / "listed"
    assert dtri.write_triangles(shared_data / name, str(out), backend="gpu") \
        == len(oracle(graph))
    assert set(rows(pd.read_parquet(out))) == oracle(graph)

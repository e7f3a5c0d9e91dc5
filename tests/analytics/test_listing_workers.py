"""The listing and weighted and directed clustering on local clusters of one and four CPU
workers that dtri starts, against NetworkX. A module of its own: the other modules' cluster
(the ``dask_client`` fixture) stays active until their end, and dtri runs on an active
client's workers rather than starting its own."""

from __future__ import annotations

import pandas as pd
import pytest

import dtri
from tests.analytics.test_listing import check_listing, oracle, rows
from tests.analytics.test_weighted import KINDS, SHARED, check, shared_rows
from tests.oracles import shared_graph


def workers_of(runtime) -> int:
    return len(runtime.client.scheduler_info()["workers"])


@pytest.mark.parametrize("workers", [1, 4])
def test_listing_on_one_and_four_cpu_workers(workers, shared_data, tmp_path):
    """The listing, a restricted one, and each written as Parquet, a file per task, by the
    workers; a small budget cuts it into many tasks over several groups of partitions."""
    path = shared_data / "ca-GrQc.txt.gz"
    graph = shared_graph(path)
    with dtri.prepare(path, backend="cpu", workers=workers, memory_budget="2MiB") as prepared:
        assert workers_of(prepared.runtime) == workers
        check_listing(prepared, graph)
        assert prepared.write_triangles(str(tmp_path / "all")) == len(oracle(graph))
        assert len(list((tmp_path / "all").glob("*.parquet"))) > 2
        assert sorted(rows(pd.read_parquet(tmp_path / "all"))) == sorted(oracle(graph))
        some = sorted(graph)[::53]
        assert prepared.write_triangles(str(tmp_path / "some"), limit=500, vertices=some) \
            == 500
        listed = rows(pd.read_parquet(tmp_path / "some"))
        assert len(listed) == len(set(listed)) == 500 and set(listed) <= oracle(graph, some)


@pytest.mark.parametrize("workers", [1, 4])
def test_clustering_on_one_and_four_cpu_workers(workers, shared_data):
    """Every kind equal to NetworkX's, on a session of ``workers`` CPU workers, the rows in
    four partitions."""
    rows_ = shared_rows(shared_data / SHARED[1]["file"], seed=workers)
    with dtri.Session(backend="cpu", workers=workers) as session:
        assert workers_of(session.open()) == workers
        for weight, directed in KINDS:
            check(rows_, weight, directed, 4, session=session)

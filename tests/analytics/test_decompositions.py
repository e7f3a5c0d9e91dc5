"""Every analytic that shares the count's exchange (the count, triangles at each vertex,
edge support, the k-truss and truss numbers) against NetworkX on 1, 4 and 9 local workers,
under each decomposition and each wire format, on a messy input: duplicates, both
directions, self-loops, a vertex with only a self-loop, sparse huge ids, one hub joined to
most vertices, and on 9 workers 2D blocks left empty."""

from __future__ import annotations

import logging

import dask
import numpy as np
import pytest

import dtri
from dtri.kernels.wire import WIRE_FORMATS
from tests.oracles import check_analytics, networkx_triangles


def messy_with_a_hub(seed: int = 2) -> np.ndarray:
    """A small messy edge list with one hub (see the module docstring)."""
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, 70, size=(420, 2))
    hub = np.stack([np.full(60, 3), rng.choice(70, 60, replace=False)], axis=1)
    extra = np.array([(5, 5), (10**12, 10**12), (10**12 + 7, 4), (4, 10**12 + 7),
                      (10**15, 3), (3, 10**15)])
    return np.concatenate([edges, hub, hub[::-1, ::-1], edges[:50], extra])


@pytest.fixture(scope="module", params=[1, 4, 9], ids=lambda p: f"{p}-workers")
def cluster(request):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=request.param, threads_per_worker=1, processes=False,
                      dashboard_address=":0", silence_logs=logging.ERROR) as local, \
            Client(local) as client:
        yield client


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
@pytest.mark.parametrize("decomposition", ["1d", "2d"])
def test_every_analytic_equals_networkx(cluster, decomposition, fmt):
    workers = len(cluster.nthreads())
    with dask.config.set({"dtri.wire-format": fmt}):
        check_analytics(messy_with_a_hub(), ks=(3, 4, 5), backend="cpu",
                        npartitions=max(2, workers), decomposition=decomposition)
        result = dtri.count(messy_with_a_hub(), backend="cpu", npartitions=max(2, workers),
                            decomposition=decomposition)
    assert result.triangles == networkx_triangles(messy_with_a_hub())
    assert result.plan["wire_format"] == fmt
    spread = result.plan["decomposition"]
    assert spread["kind"] == decomposition
    assert spread["side"] == (int(workers ** 0.5) if decomposition == "2d" else 1)


def test_an_empty_graph_and_a_graph_of_self_loops_count_nothing(cluster):
    for edges in (np.zeros((0, 2), dtype=np.int64), np.array([(1, 1), (2, 2)])):
        for decomposition in ("1d", "2d"):
            result = dtri.count(edges, backend="cpu", decomposition=decomposition,
                                npartitions=2)
            assert result.triangles == 0


def test_truss_peeled_a_round_at_a_time_equals_networkx(cluster, monkeypatch):
    """Where one task cannot hold the whole graph to peel it (:func:`peels_whole`), the
    partitions peel where they are, a round at a time: the same k-trusses and numbers."""
    from dtri.analytics import truss

    monkeypatch.setattr(truss, "peels_whole", lambda graph: False)
    workers = len(cluster.nthreads())
    check_analytics(messy_with_a_hub(), ks=(3, 4, 5), backend="cpu",
                    npartitions=max(2, workers))

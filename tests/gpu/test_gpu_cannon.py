"""The 2D decomposition on the GPU: its blocks and rounds on CuPy arrays, and a 2 x 2 grid of
dask-cuda workers, against the CPU and the 1D join (needs a GPU)."""

from __future__ import annotations

import logging

import networkx as nx
import numpy as np
import pytest

import dtri
from tests.analytics.test_cannon import rounds_by_hand
from tests.oracles import host, networkx_graph, networkx_triangles

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def rmat12():
    from dtri.input.generate import rmat

    frame = rmat(12, seed=3, npartitions=3, backend="cpu").compute()
    return np.column_stack([frame.src.to_numpy(), frame.dst.to_numpy()])


@pytest.mark.parametrize("q", [1, 2, 3])
def test_the_rounds_on_device_arrays_equal_the_cpu(rmat12, q):
    with dtri.prepare(rmat12, backend="gpu", npartitions=3) as on_gpu, \
            dtri.prepare(rmat12, backend="cpu", npartitions=3) as on_cpu:
        found, at_rank = rounds_by_hand(on_gpu, q)
        expected, expected_at = rounds_by_hand(on_cpu, q)
        assert found == expected == networkx_triangles(rmat12)
        assert (at_rank == expected_at).all()


def test_a_two_by_two_grid_of_gpu_workers_equals_1d_and_networkx(rmat12):
    """Four Dask workers on the visible GPUs in turn (two a GPU on a two-GPU host: dask-cuda
    gives a GPU one worker only), over TCP."""
    import cupy
    from distributed import Client, Nanny, Scheduler, SpecCluster

    gpus = cupy.cuda.runtime.getDeviceCount()
    specs = {i: {"cls": Nanny, "options": {"nthreads": 1,
                                           "env": {"CUDA_VISIBLE_DEVICES": str(i % gpus)}}}
             for i in range(4)}
    expected = nx.triangles(networkx_graph(rmat12))
    with SpecCluster(workers=specs, silence_logs=logging.CRITICAL, scheduler={
            "cls": Scheduler, "options": {"dashboard_address": ":0"}}) as cluster, \
            Client(cluster), dtri.Session(backend="gpu") as session:
        for decomposition in ("1d", "2d"):
            with dtri.prepare(rmat12, session=session, npartitions=6,
                              decomposition=decomposition) as graph:
                result = graph.count()
                assert result.decomposition == decomposition
                assert result.triangles == networkx_triangles(rmat12)
                assert host(graph.triangles().compute()).to_dict() == expected

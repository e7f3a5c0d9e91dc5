"""Shared fixtures: the shared SNAP graphs, Dask clusters, the backend, GPU skips (the oracles
are in tests/oracles.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.oracles import SHARED_DATA


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", default="cpu", choices=("cpu", "gpu"),
                     help="backend of the shared-data and cluster tests (default: cpu)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from dtri.runtime.resolve import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a GPU with cuDF, dask-cuDF, dask-cuda and CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> str:
    return request.config.getoption("--backend")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "MANIFEST.tsv").exists():
        pytest.skip(f"shared SNAP graphs not found at {SHARED_DATA} (expected beside the repo)")
    return SHARED_DATA


@pytest.fixture(scope="module")
def dask_client(backend: str):
    """A local distributed cluster (two CPU worker processes, or one worker per GPU)."""
    from distributed import Client

    if backend == "gpu":
        from dask_cuda import LocalCUDACluster

        cluster = LocalCUDACluster(silence_logs=logging.ERROR)
    else:
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.ERROR)
    with cluster, Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def four_workers():
    """Four local workers in this process (threads), one thread each."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=4, threads_per_worker=1, processes=False,
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        yield client

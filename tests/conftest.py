"""Shared fixtures: the NetworkX oracle, the shared SNAP graphs, Dask clusters, GPU skips."""

from __future__ import annotations

import csv
import logging
import os
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("DTRI_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", default="cpu", choices=("cpu", "gpu"),
                     help="backend of the shared-data and cluster tests (default: cpu)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from dtri.runtime.session import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a GPU with cuDF, dask-cuDF, dask-cuda and CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def networkx_triangles(edges: np.ndarray) -> int:
    """The oracle: triangles of the simple undirected graph of ``edges`` (m, 2)."""
    graph = nx.Graph()
    graph.add_edges_from((int(u), int(v)) for u, v in edges if u != v)
    return sum(nx.triangles(graph).values()) // 3


def manifest_rows() -> list[dict[str, str]]:
    """Rows of ../shared/data/MANIFEST.tsv (empty when the folder is absent)."""
    manifest = SHARED_DATA / "MANIFEST.tsv"
    if not manifest.exists():
        return []
    with manifest.open() as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


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

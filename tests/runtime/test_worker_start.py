"""A local cluster's workers forked from one server that imported their modules once
(``dtri.worker-start-<backend>: forkserver``, the default), with the environment a nanny
would give a spawned worker."""

from __future__ import annotations

import multiprocessing.forkserver
import os

import dask
import numpy as np
import pytest

import dtri
from dtri.options import Options
from dtri.runtime.session import open_runtime
from dtri.runtime.worker_start import WorkerServer, stop_worker_server
from tests.oracles import networkx_triangles


@pytest.fixture
def forked_cpu_workers(monkeypatch):
    """CPU workers that start forked, from a server of this test's own."""
    stop_worker_server()
    monkeypatch.delenv("RAPIDS_NO_INITIALIZE", raising=False)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with dask.config.set({"dtri.worker-start-cpu": "forkserver"}):
        yield
    stop_worker_server()


def _server_pid() -> int | None:
    return multiprocessing.forkserver._forkserver._forkserver_pid


def test_forked_workers_get_the_environment_a_nanny_gives_and_count_exactly(
        forked_cpu_workers):
    with open_runtime(Options(backend="cpu", workers=2)) as session:
        parents = set(session.client.run(os.getppid).values())
        environ = session.client.run(lambda: {key: os.environ.get(key) for key in (
            "PYTHONHASHSEED", "RAPIDS_NO_INITIALIZE", "MALLOC_TRIM_THRESHOLD_",
            "OMP_NUM_THREADS")})
    assert _server_pid() is not None and parents == {_server_pid()}
    assert WorkerServer.environ is not None
    assert "MALLOC_TRIM_THRESHOLD_" not in WorkerServer.environ  # as the cluster started
    for seen in environ.values():  # adaptive malloc kept: no trim threshold
        assert seen == {"PYTHONHASHSEED": "6640", "RAPIDS_NO_INITIALIZE": "1",
                        "MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": "1"}
    assert "RAPIDS_NO_INITIALIZE" not in os.environ  # the caller's own environment back
    edges = np.random.default_rng(5).integers(0, 300, size=(4000, 2))
    result = dtri.count(edges, backend="cpu", workers=2)
    assert result.triangles == networkx_triangles(edges)


def test_a_cluster_that_needs_another_environment_spawns_its_workers(forked_cpu_workers):
    """The server started for workers that keep glibc's adaptive malloc; workers under a host
    limit need MALLOC_TRIM_THRESHOLD_ from the start, so they are spawned."""
    with open_runtime(Options(backend="cpu", workers=1)):
        pass
    server = _server_pid()
    assert server is not None
    with open_runtime(Options(backend="cpu", workers=1, memory_limit="2GiB")) as session:
        parents = set(session.client.run(os.getppid).values())
        trims = set(session.client.run(
            lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_")).values())
    assert server not in parents and trims == {"65536"}


def test_workers_spawn_where_the_backend_says_so():
    stop_worker_server()
    with dask.config.set({"dtri.worker-start-cpu": "spawn"}), \
            open_runtime(Options(backend="cpu", workers=1)) as session:
        parents = set(session.client.run(os.getppid).values())
    assert WorkerServer.environ is None and parents == {os.getpid()}


def test_distributed_makes_its_forkserver_context_before_any_thread_imports_ahead(
        forked_cpu_workers, monkeypatch):
    """distributed imports pandas when it first makes a forkserver context; that happens on
    the thread that opens the run, before import_ahead's thread imports pandas too (the two
    had deadlocked, and left pandas without its core module)."""
    import distributed.utils

    import dtri.runtime.session as session

    seen = []
    real = session.import_ahead

    def recording(backend):
        seen.append(distributed.utils._forkserver_preload_set)
        return real(backend)

    monkeypatch.setattr(distributed.utils, "_forkserver_preload_set", False)
    monkeypatch.setattr(session, "import_ahead", recording)
    with open_runtime(Options(backend="cpu", workers=1)):
        pass
    assert seen == [True]

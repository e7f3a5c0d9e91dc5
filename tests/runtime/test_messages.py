"""Dask's control messages on the clusters dtri starts: sent within ``dtri.message-interval``
(:mod:`dtri.runtime.messages`), and Dask's own intervals kept on a cluster dtri did not
start."""

from __future__ import annotations

from typing import Any

import dask
import pytest

import dtri
from dtri.errors import ConfigurationError
from dtri.runtime.messages import MESSAGE_INTERVAL, message_interval
from tests.oracles import REPO_ROOT

KARATE = str(REPO_ROOT / "examples" / "karate.txt")


def scheduler_intervals(dask_scheduler: Any = None) -> dict[str, list[float]]:
    """The intervals of the scheduler's batched sends, to its workers and to its clients."""
    return {"workers": [comm.interval for comm in dask_scheduler.stream_comms.values()],
            "clients": [comm.interval for comm in dask_scheduler.client_comms.values()]}


def worker_interval(dask_worker: Any = None) -> float:
    return dask_worker.batched_stream.interval


def intervals(client: Any) -> dict[str, Any]:
    return {**client.run_on_scheduler(scheduler_intervals),
            "to scheduler": sorted(client.run(worker_interval).values()),
            "client": client.scheduler_comm.interval}


def test_the_interval_reads_a_time_or_null_and_refuses_the_rest():
    assert message_interval() == 0.0  # the default: sent at once
    with dask.config.set({MESSAGE_INTERVAL: "1ms"}):
        assert message_interval() == pytest.approx(0.001)
    with dask.config.set({MESSAGE_INTERVAL: None}):
        assert message_interval() is None
    for wrong in ("soon", "-1ms", [1]):
        with dask.config.set({MESSAGE_INTERVAL: wrong}), \
                pytest.raises(ConfigurationError, match=r"dtri\.message-interval must be a time"):
            message_interval()


def test_a_wrong_interval_is_refused_before_a_cluster_starts(monkeypatch):
    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a cluster or its workers' server started")

    monkeypatch.setattr("distributed.LocalCluster", never)
    monkeypatch.setattr("dtri.runtime.session.start_worker_server", never)
    with dask.config.set({MESSAGE_INTERVAL: "soon"}), \
            pytest.raises(ConfigurationError, match=r"dtri\.message-interval"):
        dtri.count(KARATE, backend="cpu", workers=2, scheduler=None)


@pytest.mark.parametrize("setting, expected", [("1ms", 0.001), (None, None)])
def test_a_cluster_dtri_starts_sends_within_the_interval(setting, expected):
    """Where dtri starts the cluster its scheduler, workers and client send within the
    interval; ``null`` keeps Dask's own (5 ms to a worker, 2 ms back, 10 ms from a client).
    The count is NetworkX's."""
    with dask.config.set({MESSAGE_INTERVAL: setting}), \
            dtri.Session(backend="cpu", workers=2) as session:
        client = session.open().client
        assert dtri.count(KARATE, session=session).triangles == 45
        found = intervals(client)
    if expected is None:
        expected_found = {"workers": [0.005, 0.005], "clients": [0.002],
                          "to scheduler": [0.002, 0.002], "client": 0.01}
    else:
        expected_found = {"workers": [expected] * 2, "clients": [expected],
                          "to scheduler": [expected] * 2, "client": expected}
    assert found == expected_found  # each parsed as Dask parses its own


def test_a_cluster_dtri_did_not_start_keeps_dask_s_intervals(dask_client, backend):
    """Other clients share that scheduler and its workers: only dtri's own client's
    connection is changed."""
    result = dtri.count(KARATE, backend=backend)
    assert result.triangles == 45
    found = intervals(dask_client)
    assert found["workers"] == [0.005] * len(found["workers"])
    assert found["to scheduler"] == [0.002] * len(found["to scheduler"])
    assert found["client"] == 0.0


@pytest.mark.gpu
def test_a_gpu_cluster_dtri_starts_sends_within_the_interval():
    """The dask-cuda cluster too (one worker: every lent kind has one GPU at least)."""
    from dtri.options import Options
    from dtri.runtime.session import open_runtime

    with dask.config.set({MESSAGE_INTERVAL: "1ms"}), \
            open_runtime(Options(backend="gpu", workers=1)) as runtime:
        client = runtime.client
        assert client.submit(len, [1, 2], pure=False).result() == 2  # a graph sent
        found = intervals(client)
    assert found == {"workers": [0.001], "clients": [0.001], "to scheduler": [0.001],
                     "client": 0.001}

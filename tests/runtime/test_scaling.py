"""--workers auto: the time model's choice of GPUs, the option itself, and a local cluster
scaled down to the choice."""

from __future__ import annotations

import logging

import dask
import pytest

from dtri.errors import ConfigurationError
from dtri.options import Backend, Options
from dtri.runtime import local_cluster
from dtri.runtime.connect import _describe_client
from dtri.runtime.scaling import choose_workers, predicted_seconds

GB = 1e9


def test_a_slow_link_keeps_one_gpu_and_a_fast_one_takes_them_all():
    rows = 1 << 29  # R-MAT 25's input
    slow = choose_workers(rows, 2, 1 * GB)  # TCP between GPUs through host memory
    assert slow.workers == 1 and slow.predicted[1] < slow.predicted[2]
    fast = choose_workers(rows, 4, 100 * GB)  # NVLink
    assert fast.workers == 4 and fast.predicted[4] == min(fast.predicted.values())
    assert "4 of 4 GPUs" in fast.reason and "93.13 GiB/s" in fast.reason


def test_a_small_input_is_not_worth_a_second_gpu_even_over_nvlink():
    assert choose_workers(1 << 22, 2, 100 * GB).workers == 1


def test_a_benchmark_overrides_the_models_constants():
    rows = 1 << 26
    with dask.config.set({"dtri.kernel-tuning.scaling-overhead-seconds": 0.0,
                          "dtri.kernel-tuning.scaling-bytes-per-row": 0}):
        assert predicted_seconds(rows, 2, GB) == pytest.approx(predicted_seconds(rows, 1, GB) / 2)
        assert choose_workers(rows, 3, GB).workers == 3


def test_auto_takes_enough_gpus_to_hold_the_graph_however_slow_the_link():
    """R-MAT 27's 2.15 G rows ran one H100 out of memory where auto over TCP kept one GPU."""
    rows = 1 << 31
    choice = choose_workers(rows, 4, 1 * GB, device_memory=80 * 10**9)
    assert choice.workers == 2 and choice.predicted[1] < choice.predicted[2]
    assert "at least 2 to hold" in choice.reason
    assert choose_workers(rows, 4, 1 * GB).workers == 1  # memory not known: time alone
    assert choose_workers(1 << 29, 4, 1 * GB, device_memory=80 * 10**9).workers == 1
    assert choose_workers(rows, 1, 1 * GB, device_memory=10**9).workers == 1  # all there is
    with dask.config.set({"dtri.kernel-tuning.scaling-resident-bytes-per-row": 200}):
        assert choose_workers(rows, 4, 1 * GB, device_memory=80 * 10**9).workers == 4


def test_one_worker_or_no_measure_chooses_nothing():
    assert choose_workers(1 << 30, 1, None).workers == 1
    assert choose_workers(1 << 30, 2, None).predicted == {}


@pytest.mark.parametrize("given, expected", [(None, "auto"), ("auto", "auto"), (3, 3)])
def test_workers_default_to_auto_and_take_a_count(given, expected):
    options = Options(workers=given)
    assert options.workers == expected
    assert options.worker_count == (None if expected == "auto" else expected)


@pytest.mark.parametrize("given", [0, -1, "two", 1.5])
def test_a_bad_worker_count_is_refused(given):
    with pytest.raises(ConfigurationError, match="--workers"):
        Options(workers=given)


def test_a_local_cluster_is_scaled_down_to_the_choice(monkeypatch):
    from distributed import Client, LocalCluster

    import dtri.runtime.link

    monkeypatch.setattr(dtri.runtime.link, "link_bandwidth", lambda runtime: 1e6)  # 1 MB/s
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        runtime = _describe_client(client, Backend.CPU, None)  # no GPU here
        assert runtime.workers == 2
        scaled = local_cluster._fewer_gpus(cluster, runtime, 1 << 24)
        assert scaled.workers == 1 and len(scaled.addresses) == 1
        assert scaled.workers_choice.workers == 1 and scaled.workers_choice.available == 2
        assert len(client.nthreads()) == 1


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_partitions_are_dealt_back_and_forth_one_per_worker_a_round(workers):
    from dtri.runtime.tasks import partition_owner

    owners = [partition_owner(p, workers) for p in range(4 * workers)]
    assert owners[:workers] == list(range(workers))  # partition w is worker w's
    for turn in range(4):
        dealt = owners[turn * workers: (turn + 1) * workers]
        assert sorted(dealt) == list(range(workers))
        assert dealt == (sorted(dealt) if turn % 2 == 0 else sorted(dealt, reverse=True))

"""The workers' comms: the protocol a started cluster gets and its note, the transfer ledgers
that file the bytes moved between workers by stage, and the link probe."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import dask
import pytest

from dtri.options import Backend, Options
from dtri.report import most_to_one_worker, total_moved
from dtri.runtime import link, resolve
from dtri.runtime.opened import Runtime
from dtri.runtime.resolve import resolve_protocol
from dtri.runtime.session import open_runtime
from dtri.runtime.transfers import MovedBytes, TransferLedger
from tests.oracles import networkx_triangles

TOKEN = "0123456789abcdef0123456789abcdef"


# ------------------------------------------------------------------------------ protocol

@pytest.fixture
def without_ucx(monkeypatch):
    """Four visible GPUs, distributed-ucxx missing, CuPy's CUDA unknown until a test says."""
    monkeypatch.setattr(resolve, "ucx_available", lambda: False)
    monkeypatch.setattr(resolve, "_visible_gpus", lambda: 4)
    monkeypatch.setattr(resolve, "cuda_major", lambda: None)
    return monkeypatch


def test_several_gpu_workers_on_tcp_say_how_to_install_ucx(without_ucx):
    without_ucx.setattr(resolve, "cuda_major", lambda: 12)
    choice = resolve_protocol("auto", Backend.GPU, None)
    assert choice.name == "tcp"
    assert "pip install distributed-ucxx-cu12" in choice.note
    assert "\n" not in choice.note


def test_the_note_names_cuda_13_where_the_cuda_version_is_unknown(without_ucx):
    assert "pip install distributed-ucxx-cu13" in resolve_protocol("auto", Backend.GPU, 2).note


@pytest.mark.parametrize(("requested", "backend", "workers"), [
    ("auto", "cpu", 2),  # CPU workers: TCP is their comm
    ("auto", "gpu", 1),  # one GPU worker: nothing moves between GPUs
    ("tcp", "gpu", 4),  # asked for
])
def test_no_note_where_tcp_is_the_right_comm(without_ucx, requested, backend, workers):
    choice = resolve_protocol(requested, Backend(backend), workers)
    assert (choice.name, choice.note) == ("tcp", None) and choice.reason


def test_ucx_where_it_is_installed_and_no_note(without_ucx):
    without_ucx.setattr(resolve, "ucx_available", lambda: True)
    choice = resolve_protocol("auto", Backend.GPU, None)
    assert (choice.name, choice.note) == ("ucx", None) and "distributed-ucxx" in choice.reason


def test_a_run_in_this_process_has_no_protocol_and_no_note():
    with open_runtime(Options(backend="cpu", scheduler="synchronous")) as runtime:
        assert runtime.protocol is None and runtime.protocol_note is None


# ------------------------------------------------------------------------------ ledger

def entry(keys: dict[str, int], start: float, stop: float) -> dict:
    """One transfer as a Dask worker logs it."""
    return {"keys": keys, "who": "tcp://sender", "start": start, "stop": stop,
            "total": sum(keys.values())}


def test_the_ledger_files_each_keys_bytes_under_its_stage_for_each_reader():
    log: deque = deque([entry({f"dtri-sort-{TOKEN}-0": 999}, 0, 1)], maxlen=2)
    waiting = {f"dtri-sort-{TOKEN}-2": SimpleNamespace(dependents=[  # a task here needs it
        SimpleNamespace(key=f"dtri-canonicalize-{TOKEN}-combine-1")])}
    worker = SimpleNamespace(transfer_incoming_log=log, state=SimpleNamespace(tasks=waiting))
    ledger = TransferLedger(worker)  # the old one: not ours
    log.append(entry({f"dtri-canonicalize-{TOKEN}-1": 100, f"dtri-sort-{TOKEN}-2": 50}, 1, 2))
    ledger.catch_up()
    log.append(entry({f"dtri-link-probe-{TOKEN}": 1 << 20}, 2, 3))  # the probe's: not a stage
    ledger.catch_up()
    log.append(entry({("read-edges-" + TOKEN, 0): 30}, 3, 3.5))
    log.append(entry({f"dtri-sort-{TOKEN}-3": 20}, 4, 4.5))  # two since the last catch-up
    run = ledger.take("run")
    assert run.stage_bytes == {"canonicalize": 150, "sort": 20, "read": 30}
    assert (run.transfer_bytes, run.transfer_seconds) == (200, 2.0)
    log.append(entry({f"dtri-sort-{TOKEN}-4": 5}, 5, 6))
    assert ledger.take("run").stage_bytes == {"sort": 5}
    assert ledger.take("bench").stage_bytes == {"canonicalize": 150, "sort": 25, "read": 30}
    assert ledger.take("run").stage_bytes == {}  # read already


def test_moved_bytes_add_up_per_stage_and_worker():
    moved = MovedBytes(False)
    assert moved.moved_bytes() is None and moved.link_bandwidth() is None
    moved.merge(MovedBytes(True, {"sort": {"a": 10}}, 10, 0.5))
    moved.merge(MovedBytes(True, {"sort": {"a": 5, "b": 20}, "join": {"b": 1}}, 26, 0.5))
    assert moved.moved_bytes() == {"sort": {"a": 15, "b": 20}, "join": {"b": 1}}
    assert moved.link_bandwidth() == 36.0
    assert total_moved(moved.moved_bytes()) == 36
    assert most_to_one_worker(moved.moved_bytes()) == 21


# ------------------------------------------------------------------------------ link probe

def test_no_link_without_two_workers():
    assert link.link_bandwidth(Runtime("cpu", None, 1, 1, 1 << 30)) is None
    one = Runtime("cpu", object(), 1, 1, 1 << 30, addresses=("tcp://127.0.0.1:1",))
    assert link.link_bandwidth(one) is None


def test_the_link_is_probed_once_per_cluster(dask_client, monkeypatch):
    dask_client.set_metadata([link.METADATA_KEY], {})  # measured by no test before
    sent = []
    send_once = link._send_once
    monkeypatch.setattr(link, "_send_once", lambda *args: sent.append(args) or send_once(*args))
    with dask.config.set({link.PROBE_BYTES: "4MiB", link.PROBE_REPEATS: 2}), \
            open_runtime(Options(backend="cpu")) as runtime:
        first = link.link_bandwidth(runtime)
        assert first > 0 and len(sent) == 2
        assert link.link_bandwidth(runtime) == first and len(sent) == 2  # cached
        assert runtime.readings()[1].moved_bytes() == {}  # the probe is no stage's


def test_a_probe_size_that_is_not_positive_is_refused():
    with dask.config.set({link.PROBE_BYTES: 0}), pytest.raises(ValueError, match="positive"):
        link.probe_settings()


# ------------------------------------------------------------------------------ readings

def test_a_preparation_reads_every_meter_in_one_round_trip_where_it_begins_and_ends(
        dask_client, monkeypatch):
    """The device and host peaks and the transfers are read by one run on the workers at
    each point, where three runs had made three round trips; what they read is the graph's
    own: its stages' bytes moved and host peaks."""
    import numpy as np

    import dtri
    from dtri.runtime import readings

    runs = []
    run = dask_client.run

    def counted(function, *args, **kwargs):
        runs.append(getattr(function, "__name__", repr(function)))
        return run(function, *args, **kwargs)

    monkeypatch.setattr(dask_client, "run", counted)
    edges = np.random.default_rng(3).integers(0, 400, size=(5000, 2))
    with dtri.Session(backend="cpu") as chosen, \
            chosen.prepare(edges, npartitions=2) as prepared:
        assert runs.count(readings.worker_readings.__name__) == 2, runs
        assert not {"worker_peaks", "worker_host_peaks", "worker_moves"} & set(runs)
        result = prepared.count()
        moved = prepared.moves().moved_bytes()
        measured = prepared.memory()
    assert result.triangles == networkx_triangles(edges)
    assert moved and sum(sum(workers.values()) for workers in moved.values()) > 0
    assert measured.host.measured and measured.host.peaks.overall > 0

"""The GPU worker's store under a host limit (:mod:`dtri.runtime.tiered_store`), on the CPU:
"device" results are wrapped arrays that a predicate tells apart, copied to the host tier
and to disk by Dask's own serializers, as CuPy arrays are."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dtri.runtime.host_meter import spilled
from dtri.runtime.tiered_store import HostCopy, TieredStore

MIB = 1 << 20


class OnDevice:
    """A stand-in for a device array."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __sizeof__(self) -> int:
        return self.array.nbytes


def on_device(value: object) -> bool:
    return isinstance(value, OnDevice)


def never(value: object) -> bool:
    return False


def store(tmp_path, device: int | None = MIB, host: int | None = MIB) -> TieredStore:
    return TieredStore(str(tmp_path), device_memory_limit=device, memory_limit=host,
                       is_device=on_device, spills_itself=never)


def values(n: int, size: int = MIB // 2 - 1024) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {f"x-{i}": rng.integers(0, 1 << 40, size // 8) for i in range(n)}


def stored_files(tmp_path) -> list[str]:
    return sorted(os.listdir(tmp_path / "storage"))


def test_results_read_back_in_turn_are_written_to_disk_once(tmp_path):
    """Twelve device results of about 0.5 MiB under 1 MiB of device and 1 MiB of host
    memory, read in turn three times, as dtri's stages read the partitions of the stage
    before: each pass reads back most of them from disk, and no result is written twice
    (the four that were in memory when the last was stored may be written in the first
    pass, as others push them out)."""
    data = store(tmp_path)
    originals = values(12)
    size = next(iter(originals.values())).nbytes
    for key, array in originals.items():
        data[key] = OnDevice(array)
    assert len(stored_files(tmp_path)) == 8  # two on the device, two on the host
    assert 8 * size <= data.written_bytes < 8 * size + 8 * 4096
    written = []
    for _ in range(3):
        for key, array in originals.items():
            value = data[key]
            assert isinstance(value, OnDevice)
            np.testing.assert_array_equal(value.array, array)
        written.append(data.written_bytes)
    files = len(stored_files(tmp_path))
    assert 8 <= files <= 12 and files * size <= written[0] < files * (size + 4096)
    assert written == [written[0]] * 3 and len(stored_files(tmp_path)) == files
    assert data.read_back_bytes >= 3 * 8 * size
    assert data.device.total <= MIB and data.host.total <= MIB
    assert sorted(data) == sorted(originals) and len(data) == 12


def test_a_result_read_back_goes_to_its_own_tier_and_keeps_its_file(tmp_path):
    data = store(tmp_path)
    originals = values(6)
    for key, array in originals.items():
        data[key] = OnDevice(array)
    first = "x-0"
    assert first in data.files and first not in data.device and first not in data.host
    for key in list(data.device.values):  # room on the device
        del data[key]
    host = dict(data.host.values)
    value = data[first]
    assert first in data.device and first in data.files  # not through the host tier
    assert dict(data.host.values) == host
    np.testing.assert_array_equal(value.array, originals[first])
    assert all(isinstance(copy, HostCopy) for copy in data.host.values.values())


def test_a_full_tier_keeps_what_it_holds_when_results_are_read_back_in_turn(tmp_path):
    """Read back into a full tier, a result is only handed to its reader: the tier keeps the
    results it holds, so each pass over them finds those in memory (least recently used
    order would push out each one before the next pass read it)."""
    data = store(tmp_path, host=MIB)
    originals = values(8)
    for key, array in originals.items():
        data[key] = array
    held = set(data.host.values)
    assert len(held) == 2
    reads = []
    for _ in range(3):
        before = data.read_back_bytes
        for key, array in originals.items():
            np.testing.assert_array_equal(data[key], array)
        reads.append(data.read_back_bytes - before)
        assert set(data.host.values) == held
    size = next(iter(originals.values())).nbytes
    assert reads == [reads[0]] * 3 and 6 * size <= reads[0] < 6 * (size + 4096)


def test_host_results_spill_to_disk_and_come_back_to_the_host_tier(tmp_path):
    data = store(tmp_path)
    originals = values(6)
    for key, array in originals.items():
        data[key] = array
    assert not data.device.values and data.host.total <= MIB
    for key, array in originals.items():
        np.testing.assert_array_equal(data[key], array)
    assert data.written_bytes < 6 * MIB // 2 + 4096


def test_deleting_a_key_removes_its_file_and_setting_it_again_replaces_it(tmp_path):
    data = store(tmp_path)
    originals = values(6)
    for key, array in originals.items():
        data[key] = OnDevice(array)
    files = len(stored_files(tmp_path))
    del data["x-0"]
    assert "x-0" not in data and len(stored_files(tmp_path)) == files - 1
    with pytest.raises(KeyError):
        data["x-0"]
    with pytest.raises(KeyError):
        del data["x-0"]
    data["x-1"] = OnDevice(np.arange(4))  # a recomputed key: the old file goes
    np.testing.assert_array_equal(data["x-1"].array, np.arange(4))
    assert len(stored_files(tmp_path)) == files - 2
    for key in list(data):
        del data[key]
    assert stored_files(tmp_path) == [] and len(data) == 0


def test_dasks_memory_manager_evicts_host_results(tmp_path):
    """``evict`` (Dask's ``ManualEvictProto``): the least recently used host result's bytes,
    written once; -1 once the host tier is empty. Dask asks for ``fast`` and ``evict``."""
    data = store(tmp_path, host=None)
    assert hasattr(data, "fast") and hasattr(data, "evict")
    originals = values(3)
    for key, array in originals.items():
        data[key] = array
    assert data.written_bytes == 0
    weights = [data.evict() for _ in range(3)]
    assert all(weight >= MIB // 4 for weight in weights) and data.evict() == -1
    assert not data.fast and len(stored_files(tmp_path)) == 3
    written = data.written_bytes
    np.testing.assert_array_equal(data["x-1"], originals["x-1"])
    assert data.evict() > 0 and data.written_bytes == written


def test_a_disk_that_refuses_a_write_keeps_the_result_in_memory(tmp_path, monkeypatch, caplog):
    data = store(tmp_path)

    def refuse(key, value):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(data, "_write", refuse)
    originals = values(6)
    for key, array in originals.items():
        data[key] = OnDevice(array)
    assert data.files == {} and "Spill to disk failed" in caplog.text
    for key, array in originals.items():
        np.testing.assert_array_equal(data[key].array, array)


def test_the_host_meter_reads_the_stores_counts(tmp_path):
    data = store(tmp_path)
    for key, array in values(6).items():
        data[key] = OnDevice(array)
    data["x-0"]
    moved = spilled(data)
    assert moved.disk == data.written_bytes > 0
    assert moved.read_back == data.read_back_bytes > 0
    assert moved.host == data.to_host_bytes > 0


def test_a_dask_worker_computes_through_the_store(tmp_path):
    """A worker whose ``data`` is the store, over a host tier of 1 MiB: a sum over twelve
    stored 0.5 MiB results reads most back from disk and is exact."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0",
                      data=(TieredStore, {"device_memory_limit": None, "memory_limit": MIB,
                                          "is_device": on_device, "spills_itself": never}),
                      local_directory=str(tmp_path)) as cluster, Client(cluster) as client:
        parts = [client.submit(np.arange, i, i + MIB // 16, dtype=np.int64, pure=False)
                 for i in range(12)]
        total = client.submit(lambda *arrays: int(sum(a.sum() for a in arrays)), *parts)
        assert total.result() == sum(int(np.arange(i, i + MIB // 16).sum()) for i in range(12))
        worker = next(iter(cluster.workers.values()))
        assert isinstance(worker.data, TieredStore) and worker.data.written_bytes > 0


def test_an_array_read_back_is_writable_and_not_copied_again(tmp_path):
    """Read into writable memory, Dask's NumPy deserializer takes the array as it is."""
    data = store(tmp_path)
    originals = values(6)
    for key, array in originals.items():
        data[key] = array
    value = data["x-0"]
    assert value.flags.writeable and not value.flags.owndata
    np.testing.assert_array_equal(value, originals["x-0"])


@pytest.mark.parametrize("threads", [1, 2])
def test_results_written_and_read_back_in_slices_on_several_threads_are_exact(
        tmp_path, monkeypatch, threads):
    """With ``dtri.spill-io-threads``, each file is written and read back in slices (here of
    4 KiB and a byte, so that slices cross the frames' ends) on that many threads: host and
    device results come back exact, and each file holds its frames' bytes."""
    import dask

    from dtri.runtime import tiered_store

    monkeypatch.setattr(tiered_store, "IO_SLICE", 4097)
    with dask.config.set({"dtri.spill-io-threads": threads}):
        data = store(tmp_path)
    assert (data._io is None) == (threads == 1 or len(os.sched_getaffinity(0)) == 1)
    originals = values(8)
    for i, (key, array) in enumerate(originals.items()):
        data[key] = OnDevice(array) if i % 2 else array
    assert len(data.files) >= 4
    for key, path in data.files.items():
        assert os.path.getsize(path) == data.file_bytes[key]
    for i, (key, array) in enumerate(originals.items()):
        value = data[key]
        np.testing.assert_array_equal(value.array if i % 2 else value, array)
    assert data.read_back_bytes > 0


def test_the_store_times_each_move(tmp_path):
    data = store(tmp_path)
    for key, array in values(6).items():
        data[key] = OnDevice(array)
    data["x-0"]
    assert set(data.seconds) == {"disk-write", "disk-read", "to-host", "to-device"}
    assert all(seconds > 0 for seconds in data.seconds.values()), data.seconds


def test_a_result_every_task_reads_stays_once_it_is_read_back_twice(tmp_path):
    """A scan over eight results, each read beside one shared result (as every task of a
    stage reads the ranks): the shared one is read back from disk twice, then stays, while
    the scanned ones still do not push out what the tier holds."""
    data = store(tmp_path, host=MIB)
    originals = values(8)
    shared = np.arange(MIB // 64)
    data["shared"] = shared
    for key, array in originals.items():
        data[key] = array
    reads: dict[str, int] = {}
    read = data._read

    def counted(key):
        reads[key] = reads.get(key, 0) + 1
        return read(key)

    data._read = counted
    for _ in range(2):
        for key, array in originals.items():
            np.testing.assert_array_equal(data["shared"], shared)
            np.testing.assert_array_equal(data[key], array)
    assert reads["shared"] == 2 and "shared" in data.host
    assert max(n for key, n in reads.items() if key != "shared") <= 2


def test_a_read_ahead_brings_results_back_to_the_host_tier_before_they_are_asked_for(tmp_path):
    """Read ahead, host results and device results (as host copies) wait in the host tier;
    asked for, they are not read from disk again, and a device result goes to the device
    where it fits there, as one read back by its task does."""
    data = store(tmp_path, device=MIB, host=2 * MIB)
    originals = values(10)
    for index, (key, array) in enumerate(originals.items()):
        data[key] = OnDevice(array) if index % 2 else array
    ahead = ["x-0", "x-1"]
    assert all(key in data.files and key not in data.host for key in ahead)
    assert data.read_ahead(ahead) == ahead
    data.stop_reading_ahead()  # waits for the reads
    assert all(key in data.host for key in ahead)
    read = data.read_back_bytes
    assert read == data.read_ahead_bytes > 0
    np.testing.assert_array_equal(data["x-0"], originals["x-0"])
    for key in list(data.device.values):  # room on the device
        del data[key]
    device = data["x-1"]
    assert isinstance(device, OnDevice) and "x-1" in data.device
    np.testing.assert_array_equal(device.array, originals["x-1"])
    assert data.read_back_bytes == read and data.host.total <= 2 * MIB
    assert data.read_ahead(["x-0", "x-1"]) == []  # in memory now


def test_a_read_ahead_keeps_to_what_the_running_task_leaves_of_the_host_tier(tmp_path):
    """The next task's inputs are read ahead only where they fit beside the running task's;
    those in the host tier stay there while the reads push out other results."""
    data = store(tmp_path, device=None, host=2 * MIB)
    originals = values(8)
    for key, array in originals.items():
        data[key] = array
    held = list(data.host.values)
    assert len(held) == 4
    on_disk = [key for key in originals if key not in data.host]
    assert data.read_ahead(on_disk[:2], running=held[:3]) == []  # five would not fit
    assert data.read_ahead(on_disk[:1], running=held[:1]) == on_disk[:1]
    data.stop_reading_ahead()
    assert on_disk[0] in data.host and held[0] in data.host  # the oldest other went
    assert held[1] not in data.host
    assert data.host.total <= 2 * MIB


def test_a_result_deleted_while_it_is_read_ahead_stays_deleted(tmp_path, monkeypatch):
    import threading

    from dtri.runtime import tiered_store

    data = store(tmp_path, device=None, host=MIB)
    originals = values(6)
    for key, array in originals.items():
        data[key] = array
    gate = threading.Event()
    read_file = tiered_store._read_file

    def held_back(path: str):
        gate.wait(10)
        return read_file(path)

    monkeypatch.setattr(tiered_store, "_read_file", held_back)
    assert data.read_ahead(["x-0"]) == ["x-0"]
    del data["x-0"]
    data["x-0"] = originals["x-5"]  # set again: the read of the old file is not its value
    gate.set()
    data.stop_reading_ahead()
    np.testing.assert_array_equal(data["x-0"], originals["x-5"])
    assert "x-0" not in data._read_ahead


def test_a_dask_worker_reads_the_next_tasks_inputs_ahead(tmp_path):
    """A worker of one thread whose store holds 1 MiB of its twelve 0.5 MiB results: with
    :class:`dtri.runtime.plugin.ReadAheadPlugin`, each task's input is read back while the
    task before runs, and every sum is exact."""
    from distributed import Client, LocalCluster, wait

    from dtri.runtime.plugin import ReadAheadPlugin
    from dtri.runtime.tiered_store import READ_AHEAD_NAME

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0",
                      data=(TieredStore, {"device_memory_limit": None, "memory_limit": MIB,
                                          "is_device": on_device, "spills_itself": never}),
                      local_directory=str(tmp_path)) as cluster, Client(cluster) as client:
        client.register_plugin(ReadAheadPlugin(), name=READ_AHEAD_NAME)
        rows = MIB // 16 - 128  # two fit, with their files' headers
        parts = [client.submit(np.arange, i, i + rows, dtype=np.int64, pure=False)
                 for i in range(12)]
        wait(parts)
        sums = client.map(lambda array: int(array.sum()), parts, pure=False)
        assert client.gather(sums) == [int(np.arange(i, i + rows).sum()) for i in range(12)]
        worker = next(iter(cluster.workers.values()))
        assert worker.data.read_ahead_bytes > 0
        client.unregister_worker_plugin(READ_AHEAD_NAME)

"""The stage meter: each stage's peak memory, measured where its tasks run (RMM on GPU workers;
here NumPy's allocations through tracemalloc, which the meter can be told to use)."""

from __future__ import annotations

import dask
import numpy as np
import pytest

import dtri
from dtri.errors import ConfigurationError
from dtri.runtime.meter import StageMeter
from dtri.runtime.stages import stage_of
from tests.oracles import networkx_triangles


class FakeProbe:
    """Bytes in use and peaks set by the test."""

    def __init__(self) -> None:
        self.in_use = 0
        self.peak = 0
        self.starts = 0

    def start(self) -> int:
        self.starts += 1
        return self.in_use

    def stop(self) -> int:
        return self.peak


@pytest.mark.parametrize(("key", "stage"), [
    ("dtri-canonicalize-0123456789abcdef0123456789abcdef-split-0", "canonicalize"),
    ("dtri-edge-bins-0123456789abcdef0123456789abcdef-slices-3", "edge-bins"),
    (("read-edges-0123456789abcdef0123456789abcdef", 3), "read"),
    (("dtri-generate-0123456789abcdef0123456789abcdef", 1), "read"),
    ("input_partition-0123456789abcdef0123456789abcdef", "read"),
    ("dtri-k-truss-0123456789abcdef0123456789abcdef-1", "k-truss"),
    ("list-0123456789abcdef0123456789abcdef", None),
    ("dtri-wedges_join-0123456789abcdef0123456789abcdef-2", "wedges_join"),
    (("reset_index-0123456789abcdef0123456789abcdef", 0), "output"),
    ("sum-tree-0123456789abcdef0123456789abcdef", "output"),
])
def test_a_task_key_names_its_stage(key, stage):
    assert stage_of(key) == stage


def test_each_reader_reads_from_its_own_start_and_overlapping_tasks_share_a_peak():
    probe = FakeProbe()
    meter = StageMeter(probe, "fake")
    meter.take("run")
    probe.in_use, probe.peak = 100, 50
    meter.started("dtri-sort-0123456789abcdef0123456789abcdef-0")
    meter.finished("dtri-sort-0123456789abcdef0123456789abcdef-0")
    meter.take("bench")  # starts the benchmark's reader after the sort
    probe.in_use, probe.peak = 10, 7
    meter.started("dtri-join-0123456789abcdef0123456789abcdef-0")
    meter.started("dtri-bins-0123456789abcdef0123456789abcdef-0")  # overlaps the join
    meter.finished("dtri-join-0123456789abcdef0123456789abcdef-0")
    meter.finished("dtri-bins-0123456789abcdef0123456789abcdef-0")
    run = meter.take("run")
    assert run.peak_bytes == {"sort": 150, "join": 17, "bins": 17}
    assert run.task_bytes == {"sort": 50, "join": 7, "bins": 7}
    assert probe.starts == 2  # one measurement for the two overlapping tasks
    assert meter.take("bench").peak_bytes == {"join": 17, "bins": 17}
    assert meter.take("run").peak_bytes == {}  # read already


@pytest.fixture(scope="module")
def rmat10():
    from dtri.input.generate import rmat

    edges = rmat(10, seed=0, npartitions=1).compute(scheduler="sync")
    return edges, networkx_triangles(edges.to_numpy())


@pytest.mark.parametrize("workers", [None, 2])
def test_a_count_reports_each_stages_measured_peak(rmat10, workers):
    """In process and on two workers, with the meter told to use tracemalloc: every stage of
    the preparation and the count has a peak, the overall peak is the largest, and what a
    stage's tasks added is at most what was in use."""
    edges, expected = rmat10
    options = {"backend": "cpu", "workers": workers, "memory_budget": "256KiB"}
    with dask.config.set({"dtri.meter": "tracemalloc"}):
        result = dtri.count(edges.to_numpy(), **options)
    assert result.triangles == expected
    peaks, added = result.peak_device_bytes, result.task_device_bytes
    assert result.peak_device_source == "tracemalloc"
    # in process an array is read without a task
    assert {"canonicalize", "rank", "sort", "plan", *(["read"] if workers else [])} <= set(peaks)
    assert peaks["overall"] == max(v for k, v in peaks.items() if k != "overall")
    assert all(0 <= added[stage] <= peaks[stage] for stage in added)


def test_nothing_is_measured_on_cpu_workers_by_default(rmat10):
    edges, expected = rmat10
    result = dtri.count(edges.to_numpy(), backend="cpu")
    assert result.triangles == expected
    assert result.peak_device_bytes is None and result.peak_device_source is None


def test_an_unknown_meter_is_refused():
    with dask.config.set({"dtri.meter": "nvidia-smi"}), \
            pytest.raises(ConfigurationError, match=r"dtri\.meter must be one of"):
        dtri.count(np.array([[0, 1], [1, 2], [2, 0]]), backend="cpu")

"""Host memory bounded like device memory: a worker's memory limit shared out and refused
when too small (before anything is read, naming the least that works), each stage's peak
resident memory and spilled bytes sampled on the workers and reported in ``--json``, the text
output and ``--explain``, and a count whose results spill under a tight limit, exact."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest
from click.testing import CliRunner
from dask.utils import parse_bytes

from dtri.cli import main
from dtri.errors import ConfigurationError
from dtri.options import Backend
from dtri.runtime.budget import Budget, resolve_budget
from dtri.runtime.caps import MemoryCaps
from dtri.runtime.host_meter import HostMeter, ResidentMemory, resident_bytes
from dtri.runtime.host_plan import host_plan, worker_overhead
from dtri.runtime.local_cluster import local_host_plan
from dtri.runtime.resolve import usable_cores
from dtri.runtime.staging import Staging
from tests.oracles import networkx_triangles

BUDGET = 512 * 1024
LIMIT = worker_overhead(Backend.CPU) + 2 * BUDGET
"""A worker's own memory, the running task's budget and 512 KiB of stored results: R-MAT 12's
775 kB of oriented edges alone do not fit, so the workers spill."""
TOKEN = "0" * 32
MIB = 1 << 20


def _fixed(budget: int):
    """The budget of a worker whatever its limit (given, or a share of the GPU's memory)."""
    return lambda limit: Budget(budget, budget, False)


def _least(line: str) -> int:
    found = re.search(r"give --memory-limit ([0-9]+MiB) or more$", line)
    assert found, line
    return parse_bytes(found.group(1))


# ------------------------------------------------------------------------------ the plan

@pytest.mark.parametrize("backend,staged,budget,given", [
    (Backend.CPU, False, None, False),      # the budget follows the limit (a quarter)
    (Backend.CPU, False, 64 * MIB, True),   # --memory-budget
    (Backend.GPU, True, 8 << 30, False),    # host staging: page-locked pool, budget of the pool
    (Backend.GPU, False, 20 << 30, False),  # device staging: the tasks run on the GPU
])
def test_the_least_limit_named_is_the_least_that_works(backend, staged, budget, given):
    given_budget = Budget(budget, budget, True) if given else None
    memory = budget * (2 if staged else 4) if budget is not None else None

    def plan(limit: int):  # the budget as the workers resolve it: a share of their memory
        return host_plan(limit, Backend(backend), staged, lambda size: resolve_budget(
            given_budget, memory or size, 1, Staging("host" if staged else "device", backend)))

    with pytest.raises(ConfigurationError) as refused:
        plan(64 * MIB)
    line = str(refused.value)
    assert "\n" not in line and line.startswith("--memory-limit 64.00 MiB is below what a "
                                                "worker needs: ")
    least = _least(line)
    chosen = plan(least)  # the named least is accepted
    assert chosen.stored >= chosen.task_budget > 0
    assert chosen.overhead + chosen.staging + chosen.tasks + chosen.stored == least
    with pytest.raises(ConfigurationError):
        plan(least - MIB)
    config = chosen.dask_config()
    assert config["distributed.worker.memory.pause"] is False
    assert 0 < config["distributed.worker.memory.target"] \
        <= config["distributed.worker.memory.spill"] < 1


@pytest.mark.parametrize("limit,budget", [(32 << 30, 8 << 30), (12 << 30, 2 << 30)])
def test_a_host_staged_gpu_worker_plans_a_pool_and_the_inputs_of_one_budget(limit, budget):
    """Under host staging the page-locked pool holds one budget (the running task's results)
    and the running task's inputs read back from disk another, beside the stored results:
    R-MAT 28's issue caps (16 GiB pool, 32 GiB limit) leave the stored results 13 GiB."""
    plan = host_plan(limit, Backend.GPU, True, _fixed(budget))
    assert plan.staging == plan.tasks == plan.task_budget == budget
    assert plan.stored == limit - worker_overhead(Backend.GPU) - 2 * budget
    least = worker_overhead(Backend.GPU) + 3 * budget
    assert host_plan(least, Backend.GPU, True, _fixed(budget)).stored == budget
    with pytest.raises(ConfigurationError, match=f"give --memory-limit {least // MIB}MiB"):
        host_plan(least - MIB, Backend.GPU, True, _fixed(budget))


def test_the_plan_gives_stored_results_what_is_left():
    plan = local_host_plan(Backend.CPU, MemoryCaps(memory_limit=2 << 30), None)
    assert plan.tasks == plan.task_budget == 512 * MIB
    assert plan.stored == (2 << 30) - worker_overhead(Backend.CPU) - 512 * MIB
    assert local_host_plan(Backend.CPU, MemoryCaps(), None) is None


def test_a_limit_below_the_plan_is_one_line_before_anything_is_read(monkeypatch, tmp_path):
    """Refused before a cluster starts and before the input is read (both would fail here),
    in one line that names the least --memory-limit; that least one is accepted."""
    def never(*args, **kwargs):
        raise AssertionError("started or read before the limit was checked")

    import dtri.prepared.graph

    monkeypatch.setattr("dtri.runtime.session._start_local_cluster", never)
    monkeypatch.setattr(dtri.prepared.graph, "read_inputs", never)
    edges = tmp_path / "edges.txt"
    edges.write_text("0 1\n1 2\n2 0\n")
    started = time.perf_counter()
    result = CliRunner().invoke(main, ["count", str(edges), "--backend", "cpu",
                                       "--workers", "2", "--memory-limit", "100MiB"])
    assert time.perf_counter() - started < 10
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("dtri: error: --memory-limit 100.00 MiB is below what a "
                               "worker needs: ")
    assert "dtri.worker-overhead-cpu" in lines[0]
    least = _least(lines[0])
    assert local_host_plan(Backend.CPU, MemoryCaps(memory_limit=least), None).stored > 0
    with pytest.raises(ConfigurationError):
        local_host_plan(Backend.CPU, MemoryCaps(memory_limit=least - MIB), None)


# ---------------------------------------------------------------------------- the meter

class _Store(dict):
    """A worker's store as Dask's SpillBuffer meters it."""

    def __init__(self) -> None:
        super().__init__()
        self.cumulative_metrics: dict[tuple[str, str], float] = {}

    def spill(self, written: int, read: int) -> None:
        for label, moved in (("disk-write", written), ("disk-read", read)):
            self.cumulative_metrics[label, "bytes"] = \
                self.cumulative_metrics.get((label, "bytes"), 0) + moved


def test_the_meter_files_each_stages_peak_and_spills_under_its_stage():
    """A task that holds 256 MiB for a moment is seen at its stage's peak, though it let go
    of them before it ended (the high-water mark, restarted at each sample); the next stage,
    which holds nothing, peaks lower; bytes spilled while a stage runs are its own."""
    store = _Store()
    meter = HostMeter(lambda: store, interval=3600)  # samples only as tasks end and on take
    if not meter.resident.exact:
        pytest.skip("this kernel does not let a process restart its high-water mark")
    meter.take()
    base = resident_bytes()
    meter.started(f"dtri-sort-{TOKEN}-0")
    held = np.ones(256 * MIB // 8)
    del held
    store.spill(1000, 10)
    meter.finished(f"dtri-sort-{TOKEN}-0")
    meter.started(f"dtri-join-{TOKEN}-0")
    store.spill(0, 500)
    meter.finished(f"dtri-join-{TOKEN}-0")
    peaks = meter.take()
    assert peaks.peak_bytes["sort"] >= base + 250 * MIB
    assert peaks.peak_bytes["join"] < peaks.peak_bytes["sort"] - 200 * MIB
    assert peaks.overall == peaks.peak_bytes["sort"]
    assert peaks.spilled_bytes == {"sort": 1000}
    assert peaks.read_back_bytes == {"sort": 10, "join": 500}


def test_the_sampling_thread_sees_a_peak_inside_a_long_task():
    """While a task runs, the thread's samples file the worker's peak under its stage (a
    count whose one task runs for minutes is still seen), and between tasks under the stage
    that ran last."""
    meter = HostMeter(dict, interval=0.01)
    if not meter.resident.exact:
        pytest.skip("this kernel does not let a process restart its high-water mark")
    meter.start()
    try:
        meter.take()
        meter.started(f"dtri-wedges-{TOKEN}-0")
        held = np.ones(128 * MIB // 8)
        del held
        time.sleep(0.2)
        peaks = meter.take()  # the task still runs
        assert peaks.peak_bytes["wedges"] >= 128 * MIB
        meter.finished(f"dtri-wedges-{TOKEN}-0")
        time.sleep(0.05)
        assert set(meter.take().peak_bytes) == {"wedges"}  # at rest: its results
    finally:
        meter.stop()


def test_resident_memory_falls_back_to_the_resident_size():
    memory = ResidentMemory()
    memory.exact = False
    assert 0 < memory.peak() <= resident_bytes() * 2


# ---------------------------------------------------------------------- the report, spills

@pytest.fixture(scope="module")
def spilled_count():
    """R-MAT 12 on two workers under the tight limit, as --json."""
    result = CliRunner().invoke(main, [
        "count", "--generate", "rmat:12", "--backend", "cpu", "--workers", "2",
        "--memory-limit", str(LIMIT), "--memory-budget", str(BUDGET), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_count_that_spills_is_exact_and_reports_its_spills(spilled_count):
    from dtri.input.generate import rmat

    edges = rmat(12, seed=0, npartitions=1).compute(scheduler="sync")
    report = spilled_count
    assert report["triangles"] == networkx_triangles(edges.to_numpy())
    assert report["spilled_bytes"]["total"] > 0
    assert report["read_back_bytes"]["total"] > 0
    assert report["spilled_bytes"]["total"] == sum(
        value for stage, value in report["spilled_bytes"].items() if stage != "total")
    plan = report["plan"]["host_memory"]
    assert plan["limit"] == LIMIT and plan["stored"] == BUDGET


def test_under_host_staging_a_spilling_workers_folds_keep_to_a_tasks_budget(monkeypatch):
    """Under host staging a worker folds its partitions' vertex-wide sums on itself; under a
    host limit each fold takes at most one task's budget of partitions (their inputs come
    back from disk together), and the count is exact."""
    from dtri.input.generate import rmat
    from dtri.runtime import tasks

    budget = 256 * 1024
    seen: list[tuple[list[list[int]], list[int] | None, int | None]] = []

    def recorded(members, sizes, fold_budget):
        groups = fold_groups(members, sizes, fold_budget)
        seen.append((groups, None if sizes is None else list(sizes), fold_budget))
        return groups

    fold_groups = tasks.fold_groups
    monkeypatch.setattr(tasks, "fold_groups", recorded)
    result = CliRunner().invoke(main, [
        "count", "--generate", "rmat:12", "--backend", "cpu", "--workers", "1",
        "--staging", "host", "--memory-limit", str(worker_overhead(Backend.CPU) + 2 * budget),
        "--memory-budget", str(budget), "--json"])
    assert result.exit_code == 0, result.output
    edges = rmat(12, seed=0, npartitions=1).compute(scheduler="sync")
    assert json.loads(result.output)["triangles"] == networkx_triangles(edges.to_numpy())
    per_task = budget // usable_cores()  # the one worker's threads share its budget
    assert seen and all(fold_budget == per_task for _, _, fold_budget in seen)
    assert any(len(groups) > 1 for groups, _, _ in seen)  # the folds were cut
    for groups, sizes, _ in seen:
        if sizes is not None:
            assert all(len(g) == 1 or sum(sizes[i] for i in g) <= budget for g in groups)


def test_the_host_report_is_sane_in_json(spilled_count):
    peaks, workers = spilled_count["peak_host_bytes"], spilled_count["worker_host_bytes"]
    assert {"read", "canonicalize", "sort", "overall"} <= set(peaks)
    assert all(50 * MIB < peak <= peaks["overall"] for peak in peaks.values())
    assert len(workers) == 2 and max(workers.values()) == peaks["overall"]
    assert peaks["overall"] < 4 << 30


def test_the_host_report_in_the_text_output_and_explain():
    args = ["count", "--generate", "rmat:12", "--backend", "cpu", "--workers", "2",
            "--memory-limit", str(LIMIT), "--memory-budget", str(BUDGET)]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.output
    peak = [line for line in text.output.splitlines()
            if line.startswith("host peak (worker RSS): ")]
    assert len(peak) == 1 and "read " in peak[0] and " overall " in peak[0], text.output
    assert re.search(r"^spilled +[0-9.]+ [kMG]i?B to disk \(.*\); read back ", text.output,
                     re.M), text.output
    explained = CliRunner().invoke(main, [*args, "--explain"])
    assert explained.exit_code == 0, explained.output
    assert re.search(r"^host memory +[0-9.]+ MiB/worker = overhead .* stored results "
                     r"512.00 kiB \(beyond them, disk\)$", explained.output, re.M), \
        explained.output
    assert "host peak so far (worker RSS): read " in explained.output
    as_json = json.loads(CliRunner().invoke(main, [*args, "--explain", "--json"]).output)
    assert as_json["peak_host_bytes"]["overall"] > 0 and "total" in as_json["spilled_bytes"]
    assert as_json["plan"]["host_memory"]["stored"] == BUDGET


def test_in_process_runs_report_no_host_side():
    result = CliRunner().invoke(main, ["count", "examples/karate.txt", "--json"])
    report = json.loads(result.output)
    assert report["peak_host_bytes"] is None and report["spilled_bytes"] is None


@pytest.mark.gpu
def test_gpu_workers_under_the_least_host_limit_count_exactly_within_it():
    """On a GPU worker under host staging (an RMM pool), the least --memory-limit that dtri
    names holds the whole process: R-MAT 18 counts as uncapped, each worker's measured peak
    resident memory is at or below the limit (the GPU worker's overhead,
    ``dtri.worker-overhead-gpu``, holds the CUDA context and the libraries), and the plan
    counts the page-locked pool."""
    import dtri
    from dtri.input.generate import rmat

    args = ["count", "--generate", "rmat:18", "--backend", "gpu", "--rmm-pool-size", "256MiB",
            "--memory-budget", "64MiB"]
    refused = CliRunner().invoke(main, [*args, "--memory-limit", "64MiB"])
    assert refused.exit_code == 2, refused.output
    least = _least(refused.output.strip())
    result = CliRunner().invoke(main, [*args, "--memory-limit", str(least), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    uncapped = dtri.count(rmat(18, seed=0, backend="gpu"), backend="gpu",
                          scheduler="synchronous")
    assert report["triangles"] == uncapped.triangles
    assert 0 < max(report["worker_host_bytes"].values()) <= least, report["worker_host_bytes"]
    assert report["plan"]["host_memory"]["staging"] > 0


@pytest.mark.gpu
def test_gpu_workers_past_the_host_limit_spill_through_dtris_store_and_count_exactly():
    """Under the least host limit, a GPU worker's store is dtri's
    (:class:`~dtri.runtime.tiered_store.TieredStore`): R-MAT 18's results pass its host
    share, go to disk and come back, and the count equals an uncapped one. The results are
    kept raw (``dtri.wire-format``): packed for TCP (zstd), they fit the host share."""
    import dask

    import dtri
    from dtri.input.generate import rmat
    from dtri.options import Options
    from dtri.runtime.session import open_runtime

    args = ["count", "--generate", "rmat:18", "--backend", "gpu", "--rmm-pool-size", "256MiB",
            "--memory-budget", "64MiB"]
    least = _least(CliRunner().invoke(main, [*args, "--memory-limit", "64MiB"]).output.strip())
    options = Options(backend="gpu", rmm_pool_size=256 * MIB, memory_budget=64 * MIB,
                      memory_limit=least, workers=1)
    with dask.config.set({"dtri.wire-format": "raw"}), open_runtime(options) as session:
        stores = session.client.run(lambda dask_worker: type(dask_worker.data).__name__)
        assert set(stores.values()) == {"TieredStore"}, stores
        capped = dtri.count(rmat(18, seed=0, npartitions=16, backend="gpu"), backend="gpu")
        moved = session.client.run(lambda dask_worker: (dask_worker.data.written_bytes,
                                                        dask_worker.data.read_back_bytes))
    uncapped = dtri.count(rmat(18, seed=0, backend="gpu"), backend="gpu",
                          scheduler="synchronous")
    assert capped.triangles == uncapped.triangles
    (written, read_back), = moved.values()
    assert written > 0 and read_back > 0, moved

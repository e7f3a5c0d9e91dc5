"""Memory caps of the local cluster dtri starts: counts larger than a worker's memory limit
spill to disk and stay exact; caps are refused where they cannot apply; peak memory and
spilled bytes are reported; a spill directory that cannot be written, a disk that fills while
workers spill and a worker killed with spilled results give one line or the exact count, and
leave no spill files behind (the GPU test needs a GPU and runs on the GPU host)."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import dtri
from dtri.cli import main
from dtri.errors import ConfigurationError
from dtri.options import Backend, Options
from dtri.runtime.budget import given_budget
from dtri.runtime.caps import MemoryCaps, default_device_memory_limit, resolve_caps
from dtri.runtime.host_plan import worker_overhead
from dtri.runtime.local_cluster import failsafe_spill_buffer
from dtri.runtime.memory import measured_memory
from dtri.runtime.session import open_runtime
from tests.oracles import REPO_ROOT, networkx_triangles

SCALE = 12
"""R-MAT 12: 65,536 generated edges, 48,416 simple ones: 775 kB as oriented edges (16 B)."""
BUDGET = 512 * 1024
"""Per-worker memory budget: the running task's share of the limit, and the least room for
stored results (a task's inputs)."""
LIMIT = worker_overhead(Backend.CPU) + 2 * BUDGET
"""Per-worker memory limit: a worker's own memory (``dtri.worker-overhead-cpu``), the running
task's budget and 512 KiB of stored results, below that edge list, so workers must spill."""
KARATE = "examples/karate.txt"


@pytest.fixture(scope="module")
def rmat12():
    """The R-MAT 12 edges (as every backend generates them) and their NetworkX count."""
    from dtri.input.generate import rmat

    edges = rmat(SCALE, seed=0, npartitions=1).compute(scheduler="sync")
    return edges, networkx_triangles(edges.to_numpy())


def _spilled(report: dict) -> int:
    return sum(worker["spilled_bytes"] or 0 for worker in report.values())


def leftover_spill_files(spill: Path) -> list[str]:
    """What Dask's workers left in ``spill`` (relative paths): spilled results and worker
    directories, none of which may stay once a run ends. Dask's workspace
    (``dask-scratch-space``) and its empty lock files may: ``global.lock``, ``purge.lock``,
    and a killed worker's ``worker-*.dirlock``, which the next worker started there frees."""
    assert spill.is_dir(), f"{spill} was not created"
    return sorted(str(path.relative_to(spill)) for path in spill.rglob("*")
                  if path != spill / "dask-scratch-space"
                  and not (path.suffix in (".lock", ".dirlock") and path.stat().st_size == 0))


def test_edges_larger_than_the_memory_limit_spill_to_disk_and_count_exactly(rmat12, tmp_path):
    """Two workers that keep 512 KiB of stored results each count R-MAT 12, whose oriented
    edges alone take 775 kB: the NetworkX count, and both the spill directory and Dask's
    spill metric saw data."""
    edges, expected = rmat12
    spill = tmp_path / "spill"
    with open_runtime(Options(backend="cpu", workers=2, memory_limit=LIMIT,
                              memory_budget=BUDGET, spill_directory=spill)) as session:
        assert session.workers == 2 and session.worker_memory == LIMIT
        assert session.caps.memory_limit == LIMIT
        assert session.caps.spill_directory.startswith(str(spill))
        with measured_memory(session) as report:
            result = dtri.count(edges, backend="cpu", memory_budget=BUDGET, join="wedges")
        # the default budget follows the cap: a quarter of the memory limit
        assert dtri.count(KARATE, backend="cpu").memory_budget == LIMIT // 4
    assert result.edges * 16 > session.host_plan.stored, "the graph must not fit in memory"
    assert result.triangles == expected
    assert result.batches > 1 and result.partitions > 2
    assert sorted(report) == sorted(session.addresses)
    assert _spilled(report) > 0, report
    for worker in report.values():
        assert worker["peak_process_bytes"] > 0
        assert worker["peak_device_bytes"] is None and worker["spilled_device_bytes"] is None
    assert leftover_spill_files(spill) == []


def test_cli_count_under_a_memory_limit_is_exact(rmat12, tmp_path):
    """The count is exact, and the spill directory, which dtri created, stays without the
    spilled results (and worker directories) once the run ends."""
    _, expected = rmat12
    spill = tmp_path / "spill"  # in a parent that exists: a missing one is refused
    result = CliRunner().invoke(main, [
        "count", "--generate", f"rmat:{SCALE}", "--backend", "cpu", "--workers", "2",
        "--memory-limit", str(LIMIT), "--memory-budget", str(BUDGET),
        "--spill-directory", str(spill), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["triangles"] == expected and report["memory_budget"] == BUDGET
    assert leftover_spill_files(spill) == []


def test_bench_records_peaks_and_spilled_bytes_per_worker():
    result = CliRunner().invoke(main, [
        "bench", "rmat:10", "--backend", "cpu", "--workers", "2", "--repeat", "1",
        "--peers", "networkx", "--memory-limit", str(worker_overhead(Backend.CPU) + (128 << 10)),
        "--memory-budget", "64KiB"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout.splitlines()[-1])
    assert record["peers"]["networkx"]["agrees"] is True
    assert record["caps"] == {"memory_limit": worker_overhead(Backend.CPU) + (128 << 10),
                              "device_memory_limit": None, "rmm_pool_size": None}
    assert record["memory_budget"] == 64 << 10
    for runs in ("worker_memory", "in_memory_worker_memory"):
        workers = record["dtri"][runs]
        assert len(workers) == 2 and _spilled(workers) > 0, workers
        for worker in workers.values():
            assert set(worker) == {"peak_process_bytes", "peak_device_bytes",
                                   "peak_device_source", "spilled_bytes",
                                   "spilled_device_bytes"}
            assert worker["peak_process_bytes"] > 0


# ------------------------------------------------------------------------- option checks


def _one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dtri: error: "), result.output
    return lines[0]


@pytest.mark.parametrize("scheduler", ["synchronous", "in-process"])
def test_a_task_out_of_memory_is_one_line_naming_its_stage(monkeypatch, scheduler):
    """A task's MemoryError (an RMM pool's ``std::bad_alloc``, CuPy's OutOfMemoryError) stops
    the run with its stage and what to change, not a worker traceback: through the CLI on a
    local scheduler (the one-task path), and through the API on a cluster (the exchanges)."""
    def exhausted(*args):
        raise MemoryError("std::bad_alloc: out_of_memory")

    if scheduler == "synchronous":
        monkeypatch.setattr("dtri.prepared.graph.prepare_inputs", exhausted)
        result = CliRunner().invoke(main, ["count", "--generate", "rmat:8", "--backend", "cpu",
                                           "--scheduler", "synchronous"])
        line, stage = _one_line_error(result), "prepare"
    else:
        from distributed import Client

        monkeypatch.setattr("dtri.prepared.distributed.canonical_keys", exhausted)
        with Client(processes=False, n_workers=1, threads_per_worker=1,
                    dashboard_address=":0"), pytest.raises(MemoryError) as caught:
            dtri.count(dtri.input.generate.rmat(12, seed=0), backend="cpu", memory_budget="1MiB")
        line, stage = str(caught.value), "canonicalize"
    assert f"{stage} stage ran out of memory (std::bad_alloc" in line, line
    # in this process every stage's results stay in memory: the line points to a cluster
    remedy = "--workers 1" if scheduler == "synchronous" else "--rmm-pool-size"
    assert remedy in line and "--memory-budget" in line


@pytest.mark.parametrize("option", ["--rmm-pool-size", "--device-memory-limit"])
def test_gpu_caps_on_the_cpu_backend_are_one_line_errors(option):
    for command in (["count", KARATE], ["bench", "rmat:6"]):
        result = CliRunner().invoke(main, [*command, "--backend", "cpu", option, "1GiB"])
        line = _one_line_error(result)
        assert f"{option} needs the GPU backend" in line and "--memory-limit" in line


@pytest.mark.parametrize("where", [["--scheduler", "threads"], ["--scheduler", "synchronous"],
                                   ["--scheduler", "tcp://127.0.0.1:1"],
                                   ["--scheduler-file", "nowhere.json"]])
def test_caps_with_a_running_scheduler_are_one_line_errors(where):
    result = CliRunner().invoke(main, ["count", KARATE, "--backend", "cpu", *where,
                                       "--memory-limit", "1GiB", "--spill-directory", "/tmp"])
    line = _one_line_error(result)
    assert "--memory-limit, --spill-directory apply only to the local cluster that dtri " \
           "starts" in line
    result = CliRunner().invoke(main, ["bench", "rmat:6", "--backend", "cpu", *where,
                                       "--memory-limit", "1GiB"])
    assert "--memory-limit applies only to the local cluster" in _one_line_error(result)


def test_caps_with_the_active_client_are_refused(monkeypatch):
    for home in ("resolve", "session"):  # where a run is placed, and where it opens
        monkeypatch.setattr(f"dtri.runtime.{home}.active_client", lambda: object())
    with pytest.raises(ConfigurationError, match=r"active distributed\.Client"):
        dtri.count(KARATE, backend="cpu", memory_limit="1GiB")
    with pytest.raises(ConfigurationError, match="not a size"):
        dtri.count(KARATE, backend="cpu", memory_limit="lots")


def test_bad_sizes_exit_2():
    result = CliRunner().invoke(main, ["count", KARATE, "--memory-limit", "lots"])
    assert result.exit_code == 2 and "lots" in result.output


def test_help_lists_the_memory_options():
    for command in ("count", "bench"):
        text = CliRunner().invoke(main, [command, "--help"]).output
        for option in ("--memory-limit", "--spill-directory", "--device-memory-limit",
                       "--rmm-pool-size", "--memory-budget"):
            assert option in text, (command, option)


def test_rmm_pool_caps_are_checked_and_leave_room_for_the_running_tasks():
    gib = 1 << 30
    caps = resolve_caps(MemoryCaps(rmm_pool_size=8 * gib + 100), Backend.GPU, None)
    assert caps.rmm_pool_size == 8 * gib  # rounded down to RMM's 256-byte alignment
    assert caps.device_memory_limit == 4 * gib  # less twice the default budget (2 GiB)
    assert default_device_memory_limit(8 * gib, 3 * gib) == 2 * gib
    assert default_device_memory_limit(8 * gib, 7 * gib) == 2 * gib  # never below a quarter
    explicit = resolve_caps(MemoryCaps(device_memory_limit=gib, rmm_pool_size=8 * gib), Backend.GPU,
                            None)
    assert explicit.device_memory_limit == gib
    assert resolve_caps(MemoryCaps(device_memory_limit=gib), Backend.GPU,
                        None).rmm_pool_size is None
    with pytest.raises(ConfigurationError, match=r"--device-memory-limit 8\.00 GiB is not below"):
        resolve_caps(MemoryCaps(device_memory_limit=8 * gib, rmm_pool_size=8 * gib), Backend.GPU,
                     None)
    with pytest.raises(ConfigurationError, match=r"--memory-budget 8\.00 GiB is not below"):
        resolve_caps(MemoryCaps(rmm_pool_size=8 * gib), Backend.GPU,
                     given_budget(Options(memory_budget=8 * gib)))
    with pytest.raises(ConfigurationError, match="--memory-limit must be positive"):
        resolve_caps(MemoryCaps(memory_limit=0), Backend.CPU, None)
    with pytest.raises(ConfigurationError, match="needs the GPU backend"):
        resolve_caps(MemoryCaps(rmm_pool_size=gib), Backend.CPU, None)


def test_no_client_measures_nothing():
    with open_runtime(Options(backend="cpu", scheduler="synchronous")) as session, \
            measured_memory(session) as report:
        assert session.caps == MemoryCaps()
    assert report == {}


# ---------------------------------------------------------------------------- spill faults


def _count_spilling(spill: Path | None) -> list[str]:
    """``dtri count`` arguments of the R-MAT 12 count that spills (as in the CLI test above)."""
    return ["count", "--generate", f"rmat:{SCALE}", "--backend", "cpu", "--workers", "2",
            "--memory-limit", str(LIMIT), "--memory-budget", str(BUDGET), "--json",
            *(["--spill-directory", str(spill)] if spill is not None else [])]


def test_a_spill_directory_under_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("a file, not a directory\n")
    spill = tmp_path / "file" / "spill"
    line = _one_line_error(CliRunner().invoke(main, _count_spilling(spill)))
    assert line == (f"dtri: error: --spill-directory {spill}: cannot create it: "
                    f"{os.strerror(errno.ENOTDIR)}")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to a directory without write "
                                              "permission all the same")
def test_a_spill_directory_without_write_permission_is_one_line(tmp_path):
    """An existing directory passes ``os.makedirs``; the workers would fail in it later, each
    with its own traceback."""
    spill = tmp_path / "spill"
    spill.mkdir(mode=0o500)
    try:
        line = _one_line_error(CliRunner().invoke(main, _count_spilling(spill)))
    finally:
        spill.chmod(0o700)
    assert line == (f"dtri: error: --spill-directory {spill}: cannot write a file there: "
                    f"{os.strerror(errno.EACCES)}")
    assert leftover_spill_files(spill) == []


def _count_with_file_size_limit(limit: int, spill: Path | None) -> subprocess.CompletedProcess:
    """The spilling count, run by ``python -m dtri`` in a process that, with its workers,
    cannot write a file past ``limit`` bytes (``RLIMIT_FSIZE``): such a write fails with
    ``EFBIG`` (Python ignores ``SIGXFSZ``) as one to a full disk fails with ``ENOSPC``."""
    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "dtri", *_count_spilling(spill)],
                          capture_output=True, text=True, timeout=240, cwd=REPO_ROOT,
                          preexec_fn=limit_file_size, check=False)


def test_a_disk_that_fills_while_workers_spill_still_counts_exactly(rmat12, tmp_path):
    """Spill files cannot grow past 64 KiB: the smaller results spill, the larger stay in
    memory. Before dtri's spill buffer (:func:`failsafe_spill_buffer`) this run stopped
    with "dtri: error: [Errno 27] File too large", naming neither the disk nor an option:
    Dask raised the error where a result read back from disk spilled others."""
    _, expected = rmat12
    spill = tmp_path / "spill"
    done = _count_with_file_size_limit(64 * 1024, spill)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["triangles"] == expected
    assert leftover_spill_files(spill) == []


@pytest.mark.parametrize("given", [True, False], ids=["spill-directory", "default"])
def test_a_full_spill_disk_is_one_line_naming_the_directory(tmp_path, given):
    """Not a byte can be written: dtri says so before it starts a worker, of the directory
    given, or of the system's temporary directories (where Dask's scheduler would fail to
    start, with a traceback)."""
    spill = tmp_path / "spill" if given else None
    done = _count_with_file_size_limit(0, spill)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    if given:
        assert lines[0] == (f"dtri: error: --spill-directory {spill}: cannot write a file "
                            f"there: {os.strerror(errno.EFBIG)}")
        assert leftover_spill_files(spill) == []
    else:
        assert lines[0].startswith("dtri: error: the workers have nowhere to spill to (No "
                                   "usable temporary directory found in ")
        assert lines[0].endswith("): give --spill-directory")


def test_reading_a_result_back_onto_a_full_disk_keeps_the_results_in_memory(tmp_path,
                                                                            monkeypatch):
    """Reading a spilled result back spills older ones to make room; when the disk is full,
    Dask's own spill buffer raised that ``OSError`` into the task that needed the result.
    dtri's keeps them all in memory, as Dask does when storing a result fails; a result
    that cannot be read back still raises."""
    import zict

    buffer = failsafe_spill_buffer(str(tmp_path), stored_bytes=600)
    first, second = b"1" * 400, b"2" * 400  # 433 bytes each to Dask's sizeof
    buffer["first"], buffer["second"] = first, second
    assert set(buffer.fast) == {"second"} and set(buffer.slow) == {"first"}

    def full_disk(self, key, value):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patched:
        patched.setattr(zict.File, "__setitem__", full_disk)
        assert buffer["first"] == first  # spilling "second" failed
        assert set(buffer.fast) == {"first", "second"} and not buffer.slow
        assert buffer["second"] == second

    buffer["third"] = b"3" * 400  # spills "first" and "second"
    for spilled in (tmp_path / "storage").iterdir():
        spilled.unlink()
    with pytest.raises(FileNotFoundError):
        buffer["first"]


def _pid_and_storage(dask_worker) -> tuple[int, str]:
    """A worker's process id and the directory it spills results to."""
    return os.getpid(), os.path.join(dask_worker.local_directory, "storage")


def _spilled_files(storage: str) -> list[str]:
    try:
        return os.listdir(storage)
    except FileNotFoundError:  # before the first spill
        return []


KILL_TIMEOUT = 180
"""Seconds for the count to end after the kill."""


@pytest.mark.timeout(300)
def test_a_worker_killed_with_spilled_results_is_replaced_and_the_count_is_exact(
        rmat12, tmp_path):
    """SIGKILL a worker as soon as it has results on disk, while the count runs: its nanny
    starts another, the scheduler recomputes what was lost, the count equals NetworkX's,
    and once the runtime closes no spill file is left, the killed worker's included."""
    edges, expected = rmat12
    spill = tmp_path / "spill"
    outcome: dict = {}

    def count() -> None:
        try:  # on the runtime's client, the default one
            outcome["result"] = dtri.count(edges, backend="cpu", memory_budget=BUDGET)
        except BaseException as error:  # reported below
            outcome["error"] = error

    with open_runtime(Options(backend="cpu", workers=2, memory_limit=LIMIT,
                              memory_budget=BUDGET, spill_directory=spill)) as session:
        workers = session.client.run(_pid_and_storage)
        runner = threading.Thread(target=count, name="dtri-count", daemon=True)
        runner.start()
        victim, spilled = None, []
        while victim is None and runner.is_alive():
            for pid, storage in workers.values():
                if spilled := _spilled_files(storage):
                    victim = pid
                    os.kill(pid, signal.SIGKILL)
                    break
            time.sleep(0.005)
        runner.join(KILL_TIMEOUT)
        assert victim is not None, f"no worker spilled before the count ended: {outcome}"
        assert not runner.is_alive(), (
            f"the count did not end within {KILL_TIMEOUT} s after worker {victim} was killed")
        if "error" in outcome:
            raise AssertionError(f"the count failed after worker {victim} was killed with "
                                 f"{len(spilled)} results on disk") from outcome["error"]
        pids = set(session.client.run(os.getpid).values())
        assert victim not in pids and len(pids) == 2, pids
    assert outcome["result"].triangles == expected
    assert leftover_spill_files(spill) == []


# ------------------------------------------------------------------------------------ GPU


def check_capped_rmat18(capped: dtri.CountResult, report: dict, pool: int) -> None:
    """A capped R-MAT 18 count equals the uncapped one, and RMM saw no more than the pool."""
    from dtri.input.generate import rmat

    uncapped = dtri.count(rmat(18, seed=0, backend="gpu"), backend="gpu",
                          scheduler="synchronous")
    assert capped.triangles == uncapped.triangles and capped.edges == uncapped.edges
    for worker in report.values():
        assert worker["peak_device_source"] == "rmm", report
        assert 0 < worker["peak_device_bytes"] <= pool, report


@pytest.mark.gpu
def test_rmm_pool_cap_spills_device_data_and_counts_exactly():
    """R-MAT 18 (4 Mi generated edges, 64 MiB as the input alone) under a 128 MiB RMM pool per
    worker: stored results above the default device memory limit (half the pool) move to host
    memory, the count equals an uncapped one, and RMM saw no more than the pool. The edges
    are generated in 16 tasks of 4 MiB, so that the generator fits the pool too. One worker,
    whatever the GPUs: spread over four, each worker's share fitted under its limit and
    nothing had to move (a 4-GPU host)."""
    from dtri.input.generate import rmat

    pool = 128 << 20
    with open_runtime(Options(backend="gpu", rmm_pool_size=pool, workers=1)) as session:
        assert session.caps.rmm_pool_size == pool and session.worker_memory == pool
        assert session.caps.device_memory_limit == pool // 2
        with measured_memory(session) as report:
            capped = dtri.count(rmat(18, seed=0, npartitions=16, backend="gpu"), backend="gpu",
                                staging="device")
    assert capped.memory_budget == pool // 4
    check_capped_rmat18(capped, report, pool)
    assert sum(w["spilled_device_bytes"] or 0 for w in report.values()) > 0, report


@pytest.mark.gpu
def test_host_staging_under_a_128mib_pool_counts_exactly_within_the_pool():
    """The same R-MAT 18 under the same 128 MiB pool with host staging (the default with a
    capped pool): the stages' results wait in host memory, so the device holds one task at a
    time, and RMM saw no more than the pool."""
    from dtri.input.generate import rmat

    pool = 128 << 20
    with open_runtime(Options(backend="gpu", rmm_pool_size=pool)) as session, \
            measured_memory(session) as report:
        capped = dtri.count(rmat(18, seed=0, npartitions=16, backend="gpu"), backend="gpu")
    assert capped.plan["staging"] == "host" and capped.memory_budget == pool // 2
    check_capped_rmat18(capped, report, pool)


def test_cudf_sizeof_is_registered_lazily_so_dask_cuda_can_weigh_stored_frames():
    """Without dask_cudf's sizeof a stored cuDF frame weighs its 48-byte Python object, and
    dask-cuda's device memory limit never spills it (seen on an H200 under an RMM pool)."""
    from dask.sizeof import sizeof

    import dtri.kernels.backends

    assert sizeof._lazy.get("cudf") is dtri.kernels.backends._register_cudf


@pytest.mark.gpu
def test_dask_weighs_cudf_frames_by_their_device_memory_in_a_fresh_process():
    code = ("import cudf, cupy, dtri.kernels.dispatch\n"
            "from dask.sizeof import sizeof\n"
            "print(sizeof(cudf.DataFrame({'a': cupy.arange(1_000_000)})))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert int(out.stdout.split()[-1]) >= 8_000_000

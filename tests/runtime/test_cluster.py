"""dtri on clusters: losing a worker mid-count, several workers against one process, and the
recipes in cluster/ (the SLURM script's job scripts, the Kubernetes values).

The worker-loss tests come first: they start their own three-worker cluster and must not
overlap the module-scoped two-worker ``dask_client`` of the shared-data test at the end.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

import dtri
from dtri.runtime.connect import cluster_workers
from tests.oracles import REPO_ROOT, manifest_rows, networkx_triangles

CLUSTER = REPO_ROOT / "cluster"
ROWS = manifest_rows()

# ---------------------------------------------------------------------------------------------
# A worker killed while a count runs (CPU)
# ---------------------------------------------------------------------------------------------

PHASES = {
    # the counting phase: per-batch closure keys, their radix bins and the joins
    "counting": ("dtri-wedges", "dtri-bins", "dtri-join"),
    # the preparation: vertex merge, canonicalize/sort exchanges, degree and out-degree trees
    "prepare": ("dtri-vertices", "dtri-canonicalize", "dtri-rank", "dtri-orient", "dtri-sort"),
}
COUNT_TIMEOUT = 180  # seconds for the count to finish after the kill
PHASE_TIMEOUT = 60  # seconds for the phase to show up on the scheduler


def _processing(dask_scheduler, prefixes):
    """(key, worker address) of the tasks with one of these prefixes being processed now."""
    return [(str(ts.key), ts.processing_on.address) for ts in dask_scheduler.tasks.values()
            if ts.state == "processing" and ts.processing_on is not None
            and ts.prefix.name in prefixes]


@pytest.fixture(scope="module")
def rmat13():
    """R-MAT scale 13 (131,072 generated edges) and its NetworkX count: a few seconds of
    counting on three single-threaded workers."""
    from dtri.input.generate import rmat

    edges = rmat(13, seed=0, npartitions=1).compute(scheduler="sync")
    return edges, networkx_triangles(edges.to_numpy())


def count_while_killing_a_worker(client, prefixes, count) -> tuple:
    """Run ``count()`` in a thread; SIGKILL the worker process that runs a task whose key
    starts with one of ``prefixes`` as soon as one shows up; return ``(result, killed
    worker address, the task it ran)`` once the count ends. Fails the test if the count
    hangs, raises, or no such task was seen."""
    outcome: dict = {}

    def run() -> None:
        try:  # dtri.count uses the test's Client, the active default one
            outcome["result"] = count()
        except BaseException as error:  # reported below
            outcome["error"] = error

    runner = threading.Thread(target=run, name="dtri-count", daemon=True)
    runner.start()
    deadline = time.monotonic() + PHASE_TIMEOUT
    running: list = []
    while runner.is_alive() and time.monotonic() < deadline:
        running = client.run_on_scheduler(_processing, prefixes=prefixes)
        if running:
            break
        time.sleep(0.02)
    if not running:
        runner.join(COUNT_TIMEOUT)
        pytest.fail(f"no {'/'.join(prefixes)} task was seen running before the count "
                    f"ended or {PHASE_TIMEOUT} s passed; outcome: {outcome}")

    key, address = running[0]
    pid = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGKILL)
    runner.join(COUNT_TIMEOUT)

    assert not runner.is_alive(), (
        f"dtri.count did not finish within {COUNT_TIMEOUT} s after worker {address} "
        f"(pid {pid}) was killed while running {key}")
    if "error" in outcome:
        raise AssertionError(f"dtri.count failed after worker {address} was killed while "
                             f"running {key}: {outcome['error']!r}") from outcome["error"]

    # The scheduler saw the worker die, unexpectedly, while it ran tasks of the phase or held
    # their results. A short task seen running may end before the signal lands; its result,
    # lost with the worker, is then recomputed all the same.
    removals = [event for _, event in client.get_events("all")
                if isinstance(event, dict) and event.get("action") == "remove-worker"
                and event.get("worker") == address]
    assert removals, f"the scheduler logged no removal of the killed worker {address}"
    assert removals[0]["expected"] is False
    lost = [str(k) for k in (*removals[0]["processing-tasks"],
                             *removals[0]["lost-computed-tasks"])]
    assert any(any(p in k for p in prefixes) for k in lost), (
        f"the killed worker was running or holding none of {prefixes} when it was removed: "
        f"{lost[:5]}")
    assert pid not in client.run(os.getpid).values()
    return outcome["result"], address, key


@pytest.mark.slow
@pytest.mark.parametrize("phase", list(PHASES))
def test_count_is_exact_after_a_worker_is_killed(phase, rmat13):
    """SIGKILL the worker that runs a task of ``phase``: the count must finish, and be exact
    (the lost tasks and persisted partitions are recomputed, nothing is counted twice)."""
    from distributed import Client, LocalCluster

    edges, expected = rmat13
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(3, timeout=60)
        result, address, key = count_while_killing_a_worker(
            client, PHASES[phase],
            lambda: dtri.count(edges, backend="cpu", npartitions=6, memory_budget="1MiB",
                               join="wedges"))  # the counting phase's tasks: wedges, bins, joins
        assert result.triangles == expected, (
            f"{result.triangles} triangles after the loss of worker {address} in the {phase} "
            f"phase (it ran {key}), NetworkX counts {expected}")
        assert result.partitions > 1 and "canonicalize" in result.seconds  # the exchange path


def test_a_worker_killed_during_a_count_is_restarted_by_its_nanny():
    from distributed import Client, LocalCluster

    from dtri.options import Options
    from dtri.runtime.session import open_runtime

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        with open_runtime(Options(backend="cpu")):  # the state a count runs in
            killed = next(iter(client.run(os.getpid).values()))
            os.kill(killed, signal.SIGKILL)
            deadline = time.monotonic() + 20
            restarted = False
            while time.monotonic() < deadline and not restarted:
                time.sleep(0.25)
                pids = set(client.run(os.getpid).values())
                restarted = len(pids) == 2 and killed not in pids
                if any(n.status.name in ("closing", "closed", "failed")
                       for n in cluster.workers.values()):
                    break  # the nanny gave up
        assert restarted, f"the killed worker was not restarted: workers {client.run(os.getpid)}"


# ---------------------------------------------------------------------------------------------
# SLURM: cluster/slurm.py builds dask-jobqueue SLURMClusters (nothing is submitted here)
# ---------------------------------------------------------------------------------------------


def _load_slurm_script():
    spec = importlib.util.spec_from_file_location("dtri_cluster_slurm", CLUSTER / "slurm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def slurm():
    return _load_slurm_script()


def test_slurm_without_dask_jobqueue_says_what_to_install(slurm, monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "dask_jobqueue" else real(name, *args))
    assert slurm.main(["--generate", "rmat:8", "--dry-run"]) == 2
    assert capsys.readouterr().err == ('slurm.py: error: needs dask-jobqueue: pip install '
                                       '"dtri[cluster]"\n')


def _job_script(slurm, **options) -> str:
    # dashboard on a free port; the scheduler starts here, no job is submitted (no scale)
    with slurm.build_cluster(scheduler_options={"dashboard_address": ":0"}, **options) as cluster:
        return cluster.job_script()


def test_a_local_cluster_leaves_this_process_environment_as_it_was(monkeypatch):
    """Dask's nannies set OMP_NUM_THREADS=1 (and the rest of their pre-spawn environment) in
    the process that starts them; dtri gives the caller its own values back."""
    from dtri.options import Options
    from dtri.runtime.session import open_runtime

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    with open_runtime(Options(backend="cpu", workers=2)) as session:
        assert session.workers == 2
        assert "OMP_NUM_THREADS" not in os.environ
        assert os.environ["MKL_NUM_THREADS"] == "3"
    assert "OMP_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "3"


@pytest.mark.parametrize("memory_limit", [None, "2GiB"])
def test_workers_without_a_host_limit_keep_glibc_s_adaptive_malloc(monkeypatch, memory_limit):
    """Dask's MALLOC_TRIM_THRESHOLD_=65536 fixes glibc's mmap threshold (R-MAT 20's edges took
    5x as long to generate in such a worker); dtri's workers keep it only where they spill by
    their resident memory, under --memory-limit (dtri.adaptive-malloc)."""
    import dask

    from dtri.options import Options
    from dtri.runtime.session import open_runtime

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with open_runtime(Options(backend="cpu", workers=2, memory_limit=memory_limit)) as session:
        trims = set(session.client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_")).values())
    assert trims == ({None} if memory_limit is None else {"65536"})
    with dask.config.set({"dtri.adaptive-malloc": False}), \
            open_runtime(Options(backend="cpu", workers=1)) as session:
        trims = set(session.client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_")).values())
    assert trims == {"65536"}  # Dask's own setting


def test_slurm_gpu_job_script(slurm):
    script = _job_script(slurm, backend="gpu", nodes=2, gpus_per_node=4, cores=32,
                         memory="256GiB", partition="gpu", account="graphs",
                         walltime="00:30:00", prologue=["source ~/dtri/bin/activate"])
    lines = script.splitlines()
    for directive in ("#SBATCH -p gpu", "#SBATCH -A graphs", "#SBATCH -t 00:30:00",
                      "#SBATCH --gres=gpu:4", "#SBATCH --cpus-per-task=32",
                      "#SBATCH --mem=256G"):
        assert directive in lines, script
    assert "source ~/dtri/bin/activate" in lines
    command = next(line for line in lines if " -m dask cuda worker " in line)
    # one worker process per GPU, one thread each, a quarter of the job's memory each
    assert "--nthreads 1" in command and "--memory-limit 64.00GiB" in command, command
    assert "--nworkers" not in command and "distributed.cli.dask_worker" not in command
    assert slurm.expected_workers("gpu", nodes=2, gpus_per_node=4, cores=32) == 8


def test_slurm_cpu_job_script(slurm):
    script = _job_script(slurm, backend="cpu", cores=8, memory="32GiB", partition="cpu",
                         account="graphs", walltime="02:00:00",
                         extra_directives=["--exclusive"])
    lines = script.splitlines()
    for directive in ("#SBATCH -p cpu", "#SBATCH -A graphs", "#SBATCH -t 02:00:00",
                      "#SBATCH --cpus-per-task=8", "#SBATCH --mem=32G",
                      "#SBATCH --exclusive"):
        assert directive in lines, script
    assert not any("--gres" in line for line in lines)
    command = next(line for line in lines if " -m distributed.cli.dask_worker " in line)
    assert "--nworkers 8" in command and "--nthreads 1" in command, command
    assert "cuda" not in command
    assert slurm.expected_workers("cpu", nodes=3, gpus_per_node=4, cores=8) == 24


def test_slurm_script_dry_run_prints_the_job_script():
    done = subprocess.run(
        [sys.executable, str(CLUSTER / "slurm.py"), "--dry-run", "--partition", "gpu",
         "--account", "graphs", "--gpus-per-node", "2", "--walltime", "00:10:00",
         "examples/karate.txt"],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "#SBATCH --gres=gpu:2" in done.stdout and "dask cuda worker" in done.stdout


def test_slurm_script_keys_its_checkpoint_by_the_job(slurm, tmp_path):
    args = slurm.parse_args(["--dry-run", "examples/karate.txt"])
    inside = slurm.checkpoint_folder(args, {"SLURM_JOB_ID": "4242"}, str(tmp_path))
    assert inside == str(tmp_path / "dtri-checkpoints" / "job-4242")  # a requeue keeps it
    outside = slurm.checkpoint_folder(args, {}, str(tmp_path))
    assert outside.startswith(str(tmp_path / "dtri-checkpoints" / "dtri-"))
    assert outside == slurm.checkpoint_folder(args, {}, str(tmp_path))  # a rerun resumes
    other = slurm.parse_args(["--dry-run", "--generate", "rmat:20"])
    assert slurm.checkpoint_folder(other, {}, str(tmp_path)) != outside
    assert slurm.checkpoint_folder(slurm.parse_args(["--dry-run", "--no-checkpoint"]),
                                   {"SLURM_JOB_ID": "1"}) is None
    given = slurm.parse_args(["--dry-run", "--checkpoint", str(tmp_path / "mine")])
    assert slurm.checkpoint_folder(given, {"SLURM_JOB_ID": "1"}) == str(tmp_path / "mine")


def test_slurm_script_refuses_to_run_without_sbatch(tmp_path):
    done = subprocess.run(
        [sys.executable, str(CLUSTER / "slurm.py"), "examples/karate.txt"],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO_ROOT,
        env={**os.environ, "PATH": str(tmp_path)},
    )
    assert done.returncode == 2 and "sbatch" in done.stderr, done.stderr


# ---------------------------------------------------------------------------------------------
# Kubernetes: the Helm values and the count Job parse and ask for GPUs (untested on Kubernetes)
# ---------------------------------------------------------------------------------------------


def test_kubernetes_values_run_gpu_workers():
    values = yaml.safe_load((CLUSTER / "kubernetes" / "values.yaml").read_text())
    worker = values["worker"]
    # dask-cuda-worker is dask-cuda's console script for `dask cuda worker`
    assert worker["image"]["dask_worker"] == "dask-cuda-worker"
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert worker["threads_per_worker"] == 1
    assert values["scheduler"]["servicePort"] == 8786
    assert values["scheduler"]["image"] == {k: worker["image"][k] for k in values["scheduler"]
                                            ["image"]}  # the same image (dtri + RAPIDS)


def test_kubernetes_count_job_submits_to_the_scheduler_service():
    job = yaml.safe_load((CLUSTER / "kubernetes" / "count-job.yaml").read_text())
    assert job["kind"] == "Job"
    container = job["spec"]["template"]["spec"]["containers"][0]
    command = container["command"] + container.get("args", [])
    assert command[:2] == ["dtri", "count"]
    assert "--scheduler" in command and "--backend" in command
    assert command[command.index("--scheduler") + 1].endswith(":8786")
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1


# ---------------------------------------------------------------------------------------------
# Several workers count what one process counts, on every shared graph
# ---------------------------------------------------------------------------------------------


def _edges(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep=r"\s+", comment="#", header=None, usecols=[0, 1],
                       names=["src", "dst"], dtype="int64")


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_workers_and_one_process_agree_on_shared_graphs(row, shared_data, dask_client, backend):
    """Four partitions (the exchange stages, not the one-partition path) on the two-worker
    cluster and on the synchronous scheduler: both give the published count."""
    edges = _edges(shared_data / row["file"])
    published = int(row["triangles"])
    spread = dtri.count(edges, backend=backend, npartitions=4)
    single = dtri.count(edges, backend=backend, npartitions=4, scheduler="synchronous")
    for result, where in ((spread, f"{spread.workers} workers"), (single, "synchronous")):
        assert "canonicalize" in result.seconds and "prepare" not in result.seconds, where
        assert result.triangles == published, f"{where}: {result.triangles} != {published}"
        assert result.edges == int(row["undirected_edges"]), where
    assert spread.workers == len(cluster_workers(dask_client))
    assert single.workers == 1


def test_the_cluster_s_workers_are_asked_of_the_scheduler_not_the_client_s_cache(
        dask_client, backend, monkeypatch):
    """The client's periodic update caches a scheduler identity that lists no worker, and
    ``Client.scheduler_info`` returns that cache: read at the wrong moment it listed none, and
    a run's memory report came back empty. dtri asks the scheduler itself."""
    expected = set(dask_client.run(lambda: None))  # every worker answers
    monkeypatch.setattr(type(dask_client), "scheduler_info",
                        lambda self, *args, **kwargs: {"workers": {}})  # the cache
    assert set(cluster_workers(dask_client)) == expected
    with dtri.Session(backend=backend) as session:  # the active client's cluster
        assert set(session.open().addresses) == expected


def test_the_input_frames_are_imported_ahead_while_the_cluster_starts(monkeypatch):
    from dtri.options import Backend
    from dtri.runtime import local_cluster

    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    monkeypatch.setitem(local_cluster.IMPORTED_AHEAD, "cpu", ("colorsys",))
    thread = local_cluster.import_ahead(Backend.CPU)
    thread.join(timeout=60)
    assert not thread.is_alive() and thread.daemon and "colorsys" in sys.modules
    # a module that does not import stops the thread quietly: its import raises where needed
    monkeypatch.delitem(sys.modules, "colorsys")
    monkeypatch.setitem(local_cluster.IMPORTED_AHEAD, "cpu", ("dtri_no_such_module", "colorsys"))
    thread = local_cluster.import_ahead(Backend.CPU)
    thread.join(timeout=60)
    assert not thread.is_alive() and "colorsys" not in sys.modules


def test_a_cluster_started_for_the_run_says_how_long_its_start_took():
    import json
    import re

    from distributed import Client, LocalCluster

    # in a new process: this one may hold an active client, which a run would use instead
    done = subprocess.run([sys.executable, "-m", "dtri", "count", "--generate", "rmat:8",
                           "--backend", "cpu", "--workers", "2", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
                          check=True)
    result = json.loads(done.stdout)
    assert re.search(r"^a local cluster of 2 workers .*; the cluster started in \d+\.\d s$",
                     result["placement"]), result["placement"]
    edges = pd.DataFrame({"src": [0, 1, 0, 2], "dst": [1, 2, 2, 3]})
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster):
        running = dtri.count(edges, backend="cpu", workers=1)
    assert running.triangles == 1 and running.workers == 1
    # the active client's cluster, as the run used it: none started, so no start time
    assert running.placement.startswith("the active distributed.Client's cluster, 1 of its "
                                        "workers (--workers)")
    assert "started in" not in running.placement


@pytest.mark.parametrize(("key", "variable", "value", "given", "expected"), [
    ("dtri.direct-device-writes", "KVIKIO_AUTO_DIRECT_IO_WRITE", False, None, "false"),
    ("dtri.direct-device-writes", "KVIKIO_AUTO_DIRECT_IO_WRITE", True, None, "true"),
    ("dtri.direct-device-writes", "KVIKIO_AUTO_DIRECT_IO_WRITE", False, "true", "true"),
    ("dtri.device-read-threads", "KVIKIO_NTHREADS", 8, None, "8"),
    ("dtri.device-read-threads", "KVIKIO_NTHREADS", 3, None, "3"),
    ("dtri.device-read-threads", "KVIKIO_NTHREADS", 8, "2", "2")])
def test_kvikio_settings_come_from_dask_config_unless_the_environment_sets_them(
        monkeypatch, key, variable, value, given, expected):
    """KvikIO writes a GPU run's Parquet files past the page cache by default, so the next
    process reads them from the disk, and reads files with few threads. dtri sets
    KVIKIO_AUTO_DIRECT_IO_WRITE from dtri.direct-device-writes and KVIKIO_NTHREADS from
    dtri.device-read-threads where the environment leaves them unset, and keeps a user's."""
    import dask

    from dtri.runtime.resolve import KVIKIO_DIRECT_WRITES, KVIKIO_THREADS, set_device_io

    assert {variable} <= {KVIKIO_DIRECT_WRITES, KVIKIO_THREADS}
    for name in (KVIKIO_DIRECT_WRITES, KVIKIO_THREADS):  # each given back at the end
        monkeypatch.delenv(name, raising=False)
    if given is not None:
        monkeypatch.setenv(variable, given)
    with dask.config.set({key: value}):
        set_device_io()
    assert os.environ[variable] == expected


def test_a_stage_waiting_on_a_pinned_worker_that_left_fails_in_one_line():
    """Tasks pinned to a worker (the 2D decomposition's blocks and rounds) cannot run
    elsewhere: where that worker has left, the stage fails naming it, rather than waiting
    for ever."""
    from operator import add

    from distributed import Client, LocalCluster

    from dtri.errors import WorkerLostError
    from dtri.runtime.staging import Staging
    from dtri.runtime.tasks import Tasks
    from dtri.runtime.timer import StageTimer

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        addresses = tuple(sorted(client.scheduler_info()["workers"]))
        tasks = Tasks(Staging(), addresses)
        timer = StageTimer(client, pinned=tasks.pinned_workers)
        with tasks.pinned(0):
            (done,) = timer.compute("cannon_rounds", tasks.task("cannon-round", add, 1, 2,
                                                                key=(0,)))
        assert done == 3
        client.retire_workers([addresses[1]])
        with tasks.pinned(1):
            stranded = tasks.task("cannon-round", add, 2, 2, key=(1,))
        started = time.monotonic()
        with pytest.raises(WorkerLostError, match=f"worker {addresses[1]} left the cluster "
                                                  "during the cannon_rounds stage"):
            timer.compute("cannon_rounds", stranded)
        assert time.monotonic() - started < 30


def test_a_run_pauses_work_stealing_and_memory_management_while_it_holds_the_cluster():
    """Every task of a run is placed where its data is: the run pauses Dask's work stealing
    and active memory manager while it holds the cluster, and starts them again after
    (dtri.keep-placement)."""
    import dask
    from distributed import Client, LocalCluster

    from dtri.options import Options
    from dtri.runtime.session import open_runtime

    def stealing(dask_scheduler) -> bool:
        return "stealing" in dask_scheduler.periodic_callbacks

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        assert client.run_on_scheduler(stealing) and client.amm.running()
        with open_runtime(Options(backend="cpu")):
            assert not client.run_on_scheduler(stealing) and not client.amm.running()
        assert client.run_on_scheduler(stealing) and client.amm.running()
        with dask.config.set({"dtri.keep-placement": False}), \
                open_runtime(Options(backend="cpu")):
            assert client.run_on_scheduler(stealing) and client.amm.running()

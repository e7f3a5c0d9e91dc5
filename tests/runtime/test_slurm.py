"""cluster/slurm.py against a real one-node SLURM (slurmctld, slurmd, munge), started by
cluster/slurm-local.sh, or the one CI started (``SLURM_CONF`` set): every shared graph counted
exactly through sbatch-submitted workers, a job cancelled mid-count, a failing count, and no job
left in squeue after any of them. Skips, saying why, where SLURM cannot be installed or
started (it needs root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.oracles import manifest_rows

ROOT = Path(__file__).resolve().parents[2]
START = ["bash", str(ROOT / "cluster" / "slurm-local.sh")]
ROWS = manifest_rows()


def _idle(env: dict[str, str]) -> bool:
    done = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=env,
                          timeout=30, check=False)
    return done.returncode == 0 and "idle" in done.stdout.split()


@pytest.fixture(scope="module")
def slurm(tmp_path_factory) -> dict[str, str]:
    """The environment of a running one-node SLURM (``SLURM_CONF``)."""
    env = dict(os.environ)
    if env.get("SLURM_CONF") and _idle(env):  # CI's, left running after the tests
        yield env
        return
    state = tmp_path_factory.mktemp("slurm")
    env["DTRI_SLURM_DIR"] = str(state)
    started = subprocess.run([*START, "start"], capture_output=True, text=True, env=env,
                             timeout=600, check=False)
    if started.returncode != 0:
        reason = (started.stderr.strip().splitlines() or ["cluster/slurm-local.sh failed"])[-1]
        pytest.skip(f"no SLURM here: {reason}")
    env["SLURM_CONF"] = started.stdout.strip().split("=", 1)[1]
    try:
        yield env
    finally:
        subprocess.run([*START, "stop"], env=env, timeout=120, check=False)


def jobs(env: dict[str, str]) -> list[str]:
    """The jobs SLURM still has (pending, running, completing)."""
    done = subprocess.run(["squeue", "-h", "-o", "%i %T"], capture_output=True, text=True,
                          env=env, timeout=30, check=True)
    return [line for line in done.stdout.splitlines() if line.strip()]


def slurm_script(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "cluster" / "slurm.py"), "--backend", "cpu", "--nodes",
            "1", "--cores", "2", "--memory", "2GiB", "--interface", "lo", "--timeout", "180",
            *args]


def skip_if_workers_late(done: subprocess.CompletedProcess | subprocess.Popen,
                         stderr: str) -> None:
    """Skip, saying why, when slurm.py's workers did not arrive in time (exit status 3: the
    node could not start them, as on a loaded 2-core machine); nothing was counted then."""
    if done.returncode == 3 and "workers arrived within" in stderr:
        pytest.skip(f"the SLURM node did not start the workers in time: {stderr.strip()}")


def no_jobs_left(env: dict[str, str]) -> None:
    """scancel takes a moment to reach slurmctld: wait a little for the queue to empty."""
    for _ in range(40):
        if not jobs(env):
            return
        time.sleep(0.5)
    raise AssertionError(f"jobs left in squeue: {jobs(env)}")


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_real_slurm_counts_every_shared_graph_exactly(row, slurm, shared_data, tmp_path):
    done = subprocess.run(slurm_script("--local-directory", str(tmp_path),
                                       str(shared_data / row["file"])),
                          capture_output=True, text=True, env=slurm, timeout=600, check=False,
                          cwd=tmp_path)
    skip_if_workers_late(done, done.stderr)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["triangles"] == int(row["triangles"]), report
    assert report["workers"] == 2 and report["backend"] == "cpu"
    no_jobs_left(slurm)


def test_a_job_cancelled_mid_count_gives_a_clear_error_or_the_exact_count(slurm, tmp_path):
    import dtri
    from dtri.input.generate import generated

    script = subprocess.Popen(
        slurm_script("--local-directory", str(tmp_path), "--lost-workers-timeout", "10",
                     "--generate", "rmat:18"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=slurm, cwd=tmp_path)
    try:
        while not any(" RUNNING" in job for job in jobs(slurm)):  # the workers' job started
            if script.poll() is not None:  # slurm.py gave up waiting (its own --timeout)
                err = script.stderr.read()
                skip_if_workers_late(script, err)
                raise AssertionError(f"no job ran: {err[-3000:]}")
            time.sleep(0.5)
        time.sleep(5)  # the workers joined and the count is under way (R-MAT 18 takes longer)
        job_ids = [job.split()[0] for job in jobs(slurm)]
        if job_ids:  # none left: the count finished first, and must be exact (below)
            subprocess.run(["scancel", *job_ids], env=slurm, timeout=30, check=True)
        out, err = script.communicate(timeout=300)
    finally:
        if script.poll() is None:
            script.kill()
    if script.returncode == 0:  # it finished before the cancel landed: then exactly
        report = json.loads(out.strip().splitlines()[-1])
        assert report["triangles"] == dtri.count_triangles(generated("rmat:18"))
    elif script.returncode == 3:  # cancelled before every worker had joined: nothing counted
        assert "workers arrived within" in err and "Traceback" not in err, err[-3000:]
    else:
        assert script.returncode == 1, err[-3000:]
        assert "slurm.py: error: the count failed" in err and "Traceback" not in err, err[-3000:]
        no_jobs_left(slurm)
        # the same command again (a requeued job) resumes from the checkpoint it left
        left = list((tmp_path / "dtri-checkpoints").iterdir())
        assert len(left) == 1, left
        again = subprocess.run(
            slurm_script("--local-directory", str(tmp_path), "--generate", "rmat:18"),
            capture_output=True, text=True, env=slurm, timeout=600, check=False, cwd=tmp_path)
        skip_if_workers_late(again, again.stderr)
        assert again.returncode == 0, again.stderr[-3000:]
        report = json.loads(again.stdout.strip().splitlines()[-1])
        assert report["triangles"] == dtri.count_triangles(generated("rmat:18"))
        assert set(report["resumed"]) <= {"prepare", "wedges_join"}
        assert not left[0].exists()  # removed once the count is printed
    no_jobs_left(slurm)


def test_a_failing_count_leaves_no_job(slurm, tmp_path):
    done = subprocess.run(slurm_script("--local-directory", str(tmp_path),
                                       str(tmp_path / "missing.txt")),
                          capture_output=True, text=True, env=slurm, timeout=600, check=False,
                          cwd=tmp_path)
    skip_if_workers_late(done, done.stderr)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "slurm.py: error: the count failed" in done.stderr and "missing.txt" in done.stderr
    no_jobs_left(slurm)

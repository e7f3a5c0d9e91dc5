"""Nothing hangs: an interrupt (Ctrl-C, SIGINT, to dtri or its process group) ends a command
with one line and status 130, SIGTERM with 143, and each removes the folder of the result it
was writing and its local cluster's workers and folders (a closed stdout:
``test_program_end.py``)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from dtri import cli
from tests.cli.test_outputs import KARATE, dtri_process
from tests.cli.test_progress import STAGE_LINE

PROGRESS_BAR = re.compile(r"\[[# ]+\] \| +\d+% Completed \|")
"""A Dask progress bar of ``--progress`` (its last drawing: a cut one ends mid-line)."""


def test_an_interrupted_command_exits_130_in_one_line(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("dtri.prepare", interrupted)
    result = CliRunner().invoke(cli.main, ["count", KARATE])
    assert result.exit_code == 130
    assert result.stderr == "dtri: interrupted\n" and result.stdout == ""


def test_sigint_ends_a_long_run_with_130_and_removes_its_folder(tmp_path):
    out = tmp_path / "tri"
    # a process started with SIGINT ignored (a background job of a shell without job
    # control, as `nohup pytest &`) passes that on to its children; one with a handler
    # passes on the default, as a terminal's command has it
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run = dtri_process("triangles", "--generate", "rmat:20", "--backend", "cpu",
                           "--progress", "-o", str(out))
    finally:
        signal.signal(signal.SIGINT, ignored)
    first = run.stderr.readline()  # the first stage has ended: the command is running
    assert STAGE_LINE.fullmatch(first.strip()), first
    run.send_signal(signal.SIGINT)
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == 130, stderr
    assert "Traceback" not in stderr and "Aborted" not in stderr
    assert stderr.strip().splitlines()[-1] == "dtri: interrupted"
    assert stdout == "" and os.listdir(tmp_path) == []


def local_cluster_run(tmp_path, *args: str) -> subprocess.Popen:
    """``dtri triangles`` of R-MAT 20 on a local cluster of 2 CPU workers, in a process group
    of its own with SIGINT's default handling (as a terminal's command has it), its Dask
    temporary directory under ``tmp_path``, once its first stage has ended."""
    def default_interrupts() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    environ = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(tmp_path / "dask")}
    run = subprocess.Popen(
        [sys.executable, "-m", "dtri", "triangles", "--generate", "rmat:20", "--backend", "cpu",
         "--workers", "2", "--progress", "-o", str(tmp_path / "out" / "tri"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ,
        preexec_fn=default_interrupts, start_new_session=True)
    seen = []  # Dask's progress bars, then dtri's line for the first stage ended
    while not seen or not STAGE_LINE.match(seen[-1]):
        line = run.stderr.readline()
        assert line, seen
        seen.append(line.strip())
    return run


def left_behind(tmp_path) -> list[str]:
    """What a run left in its output's folder and, beyond Dask's own shared scratch folder
    and its locks, in its Dask temporary directory."""
    (tmp_path / "dask").mkdir(exist_ok=True)
    found = [str(p.relative_to(tmp_path)) for p in (tmp_path / "out").rglob("*")]
    found += [str(p.relative_to(tmp_path)) for p in (tmp_path / "dask").rglob("*")
              if p.name != "dask-scratch-space" and p.suffix != ".lock"]
    return found


@pytest.mark.parametrize(("number", "to_group", "status"), [
    (signal.SIGINT, True, 130), (signal.SIGTERM, False, 143), (signal.SIGTERM, True, 143)],
    ids=["ctrl-c-to-the-group", "sigterm", "sigterm-to-the-group"])
def test_a_signal_to_a_local_cluster_run_ends_it_in_one_line(tmp_path, number, to_group,
                                                             status):
    """Ctrl-C in a terminal signals the whole process group (dtri's workers too); SIGTERM
    comes from ``timeout``, SLURM and Kubernetes. Each ends in ``dtri: interrupted``, no
    traceback, and nothing left: no output folder, worker folder or lock."""
    (tmp_path / "out").mkdir()
    run = local_cluster_run(tmp_path)
    (os.killpg if to_group else os.kill)(run.pid, number)
    stdout, stderr = run.communicate(timeout=120)
    assert run.returncode == status, stderr
    *before, last = stderr.strip().splitlines()
    assert last == "dtri: interrupted", stderr  # on a line of its own, a cut bar or not
    assert all(PROGRESS_BAR.match(line) or STAGE_LINE.match(line) for line in before), stderr
    assert stdout == ""
    time.sleep(0.5)
    assert left_behind(tmp_path) == []


"""Nothing hangs: an interrupt (Ctrl-C, SIGINT) ends a command with one line and status 130,
and removes the folder of the result it was writing."""

from __future__ import annotations

import os
import signal

from click.testing import CliRunner

from dtri import cli
from tests.cli.test_outputs import KARATE, dtri_process
from tests.cli.test_progress import STAGE_LINE


def test_an_interrupted_command_exits_130_in_one_line(monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_prepared", interrupted)
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

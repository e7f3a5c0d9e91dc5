"""The ``dtri`` program ends once its output is out (:func:`dtri.cli.run`), with the status,
output and ``atexit`` handlers that Python's own end would give."""

from __future__ import annotations

import json
import subprocess
import sys

import networkx as nx
import pytest

from dtri.cli import exit_status
from tests.cli.test_outputs import KARATE


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (2, 2), (130, 130)])
def test_the_exit_status_is_pythons(code, status):
    assert exit_status(code) == status


def test_a_message_ends_with_status_1_on_stderr(capsys):
    assert exit_status("dtri: stopped") == 1
    assert capsys.readouterr().err == "dtri: stopped\n"


def program(*args: str) -> subprocess.CompletedProcess:
    """``python -m dtri ARGS`` with an ``atexit`` handler of its own, registered first (so it
    runs last), that prints ``atexit ran`` on stderr."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
            "from dtri.cli import run\n"
            f"sys.argv = ['dtri', *{list(args)!r}]\n"
            "run()\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)


def test_a_count_prints_its_whole_result_and_runs_the_atexit_handlers():
    done = program("count", KARATE, "--backend", "cpu", "--json")
    assert done.returncode == 0, done.stderr
    expected = sum(nx.triangles(nx.karate_club_graph()).values()) // 3
    assert json.loads(done.stdout)["triangles"] == expected
    assert done.stderr.strip().splitlines()[-1] == "atexit ran"


def test_an_error_keeps_its_status_and_its_one_line():
    done = program("count", "--generate", "rmat:x")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("dtri: error: bad generator spec 'rmat:x'")
    assert lines[-1] == "atexit ran"


def test_a_closed_pipe_ends_the_program_quietly():
    reader = subprocess.Popen([sys.executable, "-m", "dtri", "count", KARATE, "--backend",
                               "cpu"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert reader.stdout is not None
    reader.stdout.close()  # as `| head -0` would
    _, stderr = reader.communicate(timeout=300)
    # as a process killed by SIGPIPE, and silent (click's main ended it with 1)
    assert reader.returncode == 141 and stderr == "", stderr

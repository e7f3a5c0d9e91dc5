"""``--progress`` prints a line per stage as it ends, in this process too."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys

from click.testing import CliRunner

from dtri import cli

STAGE_LINE = re.compile(r"dtri: [\w-]+ \d+\.\d\d s(, \d+ rows)?( \(\d+\.\d\d s in all\))?")


def test_progress_in_this_process_prints_a_line_per_stage_on_stderr_only():
    done = subprocess.run([sys.executable, "-m", "dtri", "triangles", "--generate", "rmat:12",
                           "--backend", "cpu", "--progress", "--json"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["vertices"] == 3336  # stdout: the one JSON object
    lines = done.stderr.strip().splitlines()
    assert lines and all(STAGE_LINE.fullmatch(line) for line in lines), lines
    stages = {line.split()[1] for line in lines}
    assert {"read", "prepare", "triangles"} <= stages
    for before, line in itertools.pairwise(lines):  # a stage's later steps: with time only
        assert line.split()[1] != before.split()[1] or "in all" in line, lines
    assert "dtri: triangles" in done.stderr and ", 3336 rows" in done.stderr
    quiet = CliRunner().invoke(cli.main, ["triangles", "--generate", "rmat:8", "--backend",
                                          "cpu", "--no-progress"])
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_progress_under_the_threaded_scheduler_adds_the_stage_lines_to_dask_bars():
    done = subprocess.run([sys.executable, "-m", "dtri", "count", "examples/karate.txt",
                           "--json", "--progress", "--scheduler", "threads"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["triangles"] == 45
    lines = [line for line in done.stderr.splitlines() if line.startswith("dtri: ")]
    assert "Completed" in done.stderr and lines
    assert all(STAGE_LINE.fullmatch(line) for line in lines), lines
    assert any(line.startswith("dtri: wedges_join ") for line in lines), lines

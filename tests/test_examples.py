"""The examples a user copies run as they are, on the CPU, and print what they say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXPECTED = {
    "count_api.py": ["count_triangles: 45", "DataFrame: 45", "NumPy array: 45"],
    "analytics_api.py": ["triangles: 45", "4-truss:"],
    "networkx_backend.py": ["triangles at vertex 1: 12 (NetworkX: 12 )", "on the CPU: 45"],
    "out_of_core.py": ["triangles: 2822018 and under the budget: 2822018"],
}


def test_every_example_is_run_here():
    assert set(EXPECTED) == {path.name for path in EXAMPLES.glob("*.py")}


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_the_example_runs_and_prints_its_results(script, tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    for line in EXPECTED[script]:
        assert line in done.stdout, done.stdout

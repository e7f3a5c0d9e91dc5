"""The probes of examples/benchmarks/probes that run on the CPU give lines in the one schema,
with what they claim to measure in order."""

from __future__ import annotations

import json
import subprocess
import sys

import networkx as nx

from tests.test_benchmark_results import BENCHMARKS, ROOT, schema_problems

TIMELINE_MARKS = ("imported", "cluster_start", "scheduler_start", "scheduler_started",
                  "cluster_started", "cluster_close", "cluster_closed", "command_end",
                  "exit_hooks_end")


def test_the_command_timeline_marks_a_cluster_run_in_order():
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "probes" / "command_timeline.py"), "--",
         "count", "examples/karate.txt", "--backend", "cpu", "--workers", "2", "--json"],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [json.loads(text) for text in done.stdout.splitlines()]
    assert schema_problems(line) == []
    assert line["triangles"] == sum(nx.triangles(nx.karate_club_graph()).values()) // 3
    detail = line["detail"]
    assert detail["rc"] == 0 and detail["error"] == []
    marks = [detail["marks"][name] for name in TIMELINE_MARKS]
    assert marks == sorted(marks) and marks[-1] <= line["seconds"]
    assert detail["marks"]["nannies_start"] <= detail["marks"]["nannies_started"]
    assert detail["phases"]["teardown"] >= 0
    assert set(line["stage_seconds"]) >= {"read", "total"}

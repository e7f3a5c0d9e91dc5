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


def test_host_memory_takes_a_stopped_run_s_stages_from_its_progress_lines():
    """A run stopped at --timeout leaves no JSON: its line takes the stages its progress
    lines gave, summed where a stage ran in steps, and says so."""
    from tests.test_benchmark_results import module

    host_memory = module("host_memory")
    stderr = ("dtri: read 3.66 s\n"
              "dtri: canonicalize 38.17 s, host peak 16.74 GiB, spilled 14.13 GiB\n"
              "[####   ] | 40% Completed |  1.2s\r[########] | 100% Completed |  2.0s\x1b[2K\n"
              "dtri: canonicalize 59.32 s, host peak 24.04 GiB\n"
              "dtri: plan 0.67 s, host peak 16.64 GiB\r"
              "dtri: wedges_join 65.75 s, host peak 31.82 GiB, spilled 7.39 GiB\n"
              "dtri: error: not a stage line 1.0 s\n")
    assert host_memory.progress_stages(stderr) == {
        "read": 3.66, "canonicalize": 97.49, "plan": 0.67, "wedges_join": 65.75}
    stopped = {"command": "dtri count --generate rmat:16 --memory-limit 1GiB", "seconds": 9.0,
               "result": {}, "rc": 124, "error": "timed out after 9 s",
               "progress": host_memory.progress_stages(stderr)}
    whole = {"command": "dtri count --generate rmat:16", "seconds": 3.0,
             "result": {"triangles": 15, "seconds": {"read": 1.0, "total": 2.5}}, "rc": 0,
             "error": None, "progress": {"read": 1.0}}
    line = host_memory.limited_line("rmat:16", "cpu", "1GiB", stopped, whole, 1)
    assert schema_problems(line) == []
    assert line["stage_seconds"]["canonicalize"] == 97.49
    assert line["detail"]["stage_seconds_from"] == "progress"
    assert line["triangles"] is None and line["detail"]["rc"] == 124
    unlimited = line["peers"]["unlimited"]
    assert unlimited["stage_seconds"] == {"read": 1.0, "total": 2.5}
    assert unlimited["stage_seconds_from"] == "json" and unlimited["ratio"] == 3.0

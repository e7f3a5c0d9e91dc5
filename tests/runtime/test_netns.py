"""The cluster of nodes on one machine (``cluster/netns.py``): a scheduler and 3 CPU workers,
each in a network namespace of its own behind a shaped link, count karate and a shared SNAP
graph exactly through ``--scheduler``, and leave no namespace, link or process behind, also
when the process that made them is killed. Needs root and iproute2: skipped with the reason
elsewhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.oracles import networkx_triangles

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "cluster"))

import netns  # noqa: E402  (cluster/ is not a package: its scripts run as they are)

pytestmark = pytest.mark.slow

WHY = netns.unavailable()
needs_namespaces = pytest.mark.skipif(WHY is not None, reason=f"no network namespaces: {WHY}")


def ours() -> list[str]:
    return [name for name in netns.namespaces() if name.startswith(f"{netns.PREFIX}-")]


def dtri_count(path: Path, address: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "dtri", "count", str(path), "--backend",
                           "cpu", "--scheduler", address, "--json"], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_namespaces
def test_three_namespaced_workers_count_exactly_and_leave_nothing(shared_data):
    import numpy as np

    before = set(ours())
    karate = ROOT / "examples" / "karate.txt"
    with netns.namespace_cluster(3, rate="1gbit") as cluster:
        assert len(set(ours()) - before) == 3
        result = dtri_count(karate, cluster.address)
        assert result["triangles"] == 45
        graph = shared_data / "ca-GrQc.txt.gz"
        if graph.exists():
            edges = np.loadtxt(graph, comments="#", dtype=np.int64).reshape(-1, 2)
            result = dtri_count(graph, cluster.address)
            assert result["triangles"] == networkx_triangles(edges) == 48260
        received = cluster.nodes.received_bytes()
        assert len(received) == 3 and all(value > 0 for value in received.values())
    assert set(ours()) == before


@needs_namespaces
def test_a_killed_run_leaves_nothing_behind():
    before = set(ours())
    maker = subprocess.Popen([sys.executable, str(ROOT / "cluster" / "netns.py"), "run", "2",
                              "--", "sleep", "60"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while len(set(ours()) - before) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(set(ours()) - before) == 2
    os.kill(maker.pid, signal.SIGKILL)
    maker.wait()
    deadline = time.monotonic() + 30
    while set(ours()) != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert set(ours()) == before


def test_without_root_it_says_why(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert netns.unavailable() == "network namespaces need root"
    with pytest.raises(netns.NamespacesUnavailable, match="need root"), \
            netns.namespace_cluster(2):
        pass

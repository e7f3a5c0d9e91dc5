"""``dtri bench``: one JSON line per graph, peers that agree, a loud failure when one does not."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from dtri import bench
from dtri.cli import main
from tests.oracles import networkx_triangles

TWO_TRIANGLES = "# two triangles sharing an edge, a tail, a loop and a duplicate\n" \
                "1 2\n2 3\n3 1\n3 4\n4 2\n4 5\n5 5\n2 1\n"


def run_bench(*args: str):
    result = CliRunner().invoke(main, ["bench", "--scheduler", "synchronous", "--backend", "cpu",
                                       "--repeat", "1", *args])
    records = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return result, records


def test_bench_reports_a_generated_graph_and_a_file(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text(TWO_TRIANGLES)
    output = tmp_path / "bench.jsonl"
    result, records = run_bench("rmat:8", str(path), "--peers", "networkx",
                                "--output", str(output))
    assert result.exit_code == 0, result.output
    assert [r["graph"] for r in records] == ["rmat:8", str(path)]
    assert [json.loads(line) for line in output.read_text().splitlines()] == records

    generated, small = records
    assert small["triangles"] == 2 and (small["n"], small["m"]) == (5, 6)
    assert generated["seed"] == 0 and "seed" not in small
    for record in records:
        assert {"graph", "n", "m", "wedges", "triangles", "device", "backend", "dtri",
                "peers"} <= set(record)
        assert record["backend"] == "cpu" and record["device"]
        timing = record["dtri"]
        assert timing["end_to_end_seconds"] > 0 and timing["in_memory_seconds"] > 0
        assert {"read", "plan", "wedges_join", "total"} <= set(timing["stage_seconds"])
        assert {"read", "total"} <= set(timing["in_memory_stage_seconds"])
        assert timing["edges_per_second"] == pytest.approx(
            record["m"] / timing["in_memory_seconds"], rel=1e-3)
        peer = record["peers"]["networkx"]
        assert peer["agrees"] is True and peer["triangles"] == record["triangles"]
        assert peer["seconds"] >= 0 and "networkx" in peer["method"]
        assert list(record["peers"]) == ["networkx"]


def test_auto_peers_on_cpu_and_missing_ones_are_skipped(monkeypatch):
    monkeypatch.setitem(sys.modules, "networkit", None)  # as if not installed
    result, (record,) = run_bench("gnm:200:1500")
    assert result.exit_code == 0, result.output
    assert record["peers"]["networkit"] == {"skipped": "not installed"}
    assert record["peers"]["networkx"]["agrees"] is True
    result, (record,) = run_bench("gnm:200:1500", "--peers", "pylibcugraph")
    assert result.exit_code == 0
    assert record["peers"]["pylibcugraph"] == {"skipped": "not installed"}
    result, (record,) = run_bench("gnm:200:1500", "--peers", "none")
    assert result.exit_code == 0 and record["peers"] == {}


def test_networkx_skips_large_graphs(monkeypatch):
    monkeypatch.setattr(bench, "NETWORKX_MAX_EDGES", 100)
    result, (record,) = run_bench("rmat:6", "--peers", "networkx")
    assert result.exit_code == 0
    assert record["peers"]["networkx"] == {"skipped": "too large for networkx"}


def test_networkit_agrees_when_installed():
    pytest.importorskip("networkit")
    result, (record,) = run_bench("rmat:9", "--peers", "networkit,networkx", "--repeat", "2")
    assert result.exit_code == 0, result.output
    assert record["peers"]["networkit"]["agrees"] is True
    assert record["peers"]["networkit"]["triangles"] == record["peers"]["networkx"]["triangles"]


def test_a_disagreeing_peer_fails_the_benchmark_in_one_line(monkeypatch):
    wrong = bench.Peer("networkx", "off by one", lambda edges: edges,
                       lambda edges: networkx_triangles(
                           np.column_stack(edges.host())) + 1)
    monkeypatch.setitem(bench.PEERS, "networkx", wrong)
    result, records = run_bench("rmat:7", "--peers", "networkx")
    assert result.exit_code == 1
    assert records[0]["peers"]["networkx"]["agrees"] is False  # the record still comes out
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dtri: error: rmat:7: networkx counts")
    assert f"dtri counts {records[0]['triangles']}" in lines[0]


def test_bad_graphs_and_peers_exit_2(tmp_path):
    result, _ = run_bench("rmat:zz")
    assert result.exit_code == 2 and "bad generator spec" in result.stderr
    result, _ = run_bench(str(tmp_path / "missing.txt"), "--peers", "none")
    assert result.exit_code == 2 and "no such file" in result.stderr
    result, _ = run_bench("rmat:4", "--peers", "snap")
    assert result.exit_code == 2 and "unknown peer 'snap'" in result.stderr


def test_canonical_edges_are_simple_dense_and_ordered():
    src = np.array([10, 20, 20, 30, 30, 7], dtype=np.int64)
    dst = np.array([20, 10, 30, 30, 10, 7], dtype=np.int64)
    edges = bench.canonical_edges(src, dst)
    assert edges.vertices == 4  # 7, 10, 20, 30; the loop's vertex still counts
    assert list(zip(edges.src.tolist(), edges.dst.tolist(), strict=True)) == [(1, 2), (1, 3),
                                                                              (2, 3)]
    assert bench.parse_peers("auto", "gpu") == ["pylibcugraph"]
    assert bench.parse_peers("auto", "cpu") == ["networkit", "graphblas", "igraph", "networkx"]
    assert bench.parse_peers("networkx, networkx", "cpu") == ["networkx"]


def test_bench_on_a_running_cluster_from_the_environment(dask_client, backend, monkeypatch):
    """One client serves all runs, also when DASK_SCHEDULER_ADDRESS names the scheduler."""
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", dask_client.scheduler.address)
    result = CliRunner().invoke(main, ["bench", "rmat:8", "--backend", backend, "--repeat", "1",
                                       "--peers", "networkx"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["workers"] for r in records] == [len(dask_client.nthreads())]
    assert all(r["peers"]["networkx"]["agrees"] for r in records)
    assert os.environ["DASK_SCHEDULER_ADDRESS"] == dask_client.scheduler.address


@pytest.mark.gpu
def test_bench_on_the_gpu_with_pylibcugraph():
    result = CliRunner().invoke(main, ["bench", "rmat:10", "--backend", "gpu", "--repeat", "1",
                                       "--scheduler", "synchronous",
                                       "--peers", "pylibcugraph,networkx"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["backend"] == "gpu" and record["peers"]["networkx"]["agrees"] is True
    peer = record["peers"]["pylibcugraph"]
    assert peer.get("agrees", True) is True

"""The ``dtri`` command as a user runs it: help, JSON, formats, progress and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import dask
import pytest
from click.testing import CliRunner

from dtri.cli import main
from dtri.report import total_moved
from dtri.runtime import link, session
from dtri.runtime.resolve import ProtocolChoice

TRIANGLE_AND_TAIL = "# a triangle with a tail\n1 2\n2 3\n3 1\n3 4\n"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dtri", *args], capture_output=True, text=True,
                          timeout=300, check=False)


def test_help_documents_every_option():
    runner = CliRunner()
    assert "count" in runner.invoke(main, ["--help"]).output
    text = runner.invoke(main, ["count", "--help"]).output
    for option in ("--format", "--columns", "--header", "--backend", "--scheduler",
                   "--scheduler-file", "--workers", "--memory-budget", "--bins",
                   "--orientation", "--join", "--blocksize", "--json", "--progress"):
        assert option in text
    assert "self-loops" in text and "undirected" in text


def test_json_is_one_object_with_the_statistics(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text(TRIANGLE_AND_TAIL)
    result = CliRunner().invoke(main, ["count", str(path), "--json", "--scheduler",
                                       "synchronous", "--backend", "cpu"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["triangles"] == 1
    # ranks by (degree, id): 4, 1, 2, 3; only vertex 1 has two out-neighbours
    assert (report["vertices"], report["edges"], report["wedges"]) == (4, 4, 1)
    assert {"bins", "batches", "partitions", "backend", "seconds", "memory_budget"} <= set(report)


def test_plain_output_names_count_and_stages(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text(TRIANGLE_AND_TAIL)
    result = CliRunner().invoke(main, ["count", str(path), "--scheduler", "synchronous"])
    assert result.exit_code == 0
    assert result.output.splitlines()[0].split() == ["triangles", "1"]
    assert "wedges_join" in result.output


def test_formats_and_columns_through_the_cli(tmp_path):
    csv_path = tmp_path / "g.csv"
    csv_path.write_text("w,from,to\n0.5,1,2\n0.5,2,3\n0.5,3,1\n")
    mtx_path = tmp_path / "g.mtx"
    mtx_path.write_text(
        "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n2 1\n3 2\n3 1\n"
    )
    runner = CliRunner()
    for args in (["--columns", "from,to"], ["--columns", "1,2", "--header"]):
        out = runner.invoke(main, ["count", str(csv_path), "--json", "--scheduler", "sync", *args])
        assert json.loads(out.output)["triangles"] == 1, out.output
    out = runner.invoke(main, ["count", str(mtx_path), "--json", "--scheduler", "sync"])
    assert json.loads(out.output)["triangles"] == 1


def test_progress_goes_to_stderr_and_keeps_json_clean(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text(TRIANGLE_AND_TAIL)
    done = run("count", str(path), "--json", "--progress", "--scheduler", "threads")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["triangles"] == 1
    assert "Completed" in done.stderr


@pytest.mark.parametrize(("content", "message"), [
    ("1 2\n2 x\n", ":2: expected two non-negative integer vertex ids, got '2 x'"),
    ("1 2\n\n3\n", ":3: expected at least two columns"),
    ("# c\n1 -2\n", ":2: negative vertex id -2"),
])
def test_bad_lines_give_one_line_with_file_and_line(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    done = run("count", str(path), "--scheduler", "synchronous")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]  # one line
    assert done.stderr.startswith(f"dtri: error: {path}") and message in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_missing_file_and_bad_options_exit_2_without_traceback(tmp_path):
    done = run("count", str(tmp_path / "nope.txt"), "--scheduler", "synchronous")
    assert done.returncode == 2 and "no such file" in done.stderr
    assert "Traceback" not in done.stderr
    (tmp_path / "g.txt").write_text(TRIANGLE_AND_TAIL)
    done = run("count", str(tmp_path / "g.txt"), "--bins", "3", "--scheduler", "synchronous")
    assert done.returncode == 2 and "power of two" in done.stderr
    assert "Traceback" not in done.stderr
    done = run("count", str(tmp_path / "g.txt"), "--memory-budget", "lots")
    assert done.returncode == 2 and "lots" in done.stderr


def test_empty_input_has_zero_triangles(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("# nothing here\n")
    result = CliRunner().invoke(main, ["count", str(path), "--json", "--scheduler", "sync"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["triangles"] == 0


def test_bad_line_on_the_embedded_cluster_is_still_one_line(tmp_path):
    """Workers of the local cluster must not print the failed task's traceback."""
    path = tmp_path / "bad.txt"
    path.write_text("1 2\n2 x\n")
    done = run("count", str(path), "--workers", "1")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"dtri: error: {path}:2: expected two non-negative integer vertex ids, got '2 x'"
    )


# ------------------------------------------------------------------------------ analytics

KARATE = "examples/karate.txt"
LOCAL = ["--scheduler", "synchronous", "--backend", "cpu"]


def karate_graph():
    import networkx as nx

    return nx.read_edgelist(KARATE, nodetype=int)


def test_triangles_command_summary_json_and_parquet(tmp_path):
    import networkx as nx
    import pandas as pd

    out = tmp_path / "tri"
    result = CliRunner().invoke(main, ["triangles", KARATE, *LOCAL, "--json", "--top", "3",
                                       "-o", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["triangles"] == 45 and report["vertices"] == 34 and report["edges"] == 78
    expected = nx.triangles(karate_graph())
    assert [row["vertex"] for row in report["top"]] == sorted(
        expected, key=lambda v: (-expected[v], v))[:3]
    written = pd.read_parquet(out)
    assert dict(zip(written["vertex"], written["triangles"], strict=True)) == expected
    plain = CliRunner().invoke(main, ["triangles", KARATE, *LOCAL])
    assert plain.exit_code == 0 and plain.output.splitlines()[2].split() == ["triangles", "45"]
    again = CliRunner().invoke(main, ["triangles", KARATE, *LOCAL, "-o", str(out)])
    assert again.exit_code == 2 and "already exists" in again.output  # never overwritten


def test_clustering_transitivity_support_truss_commands(tmp_path):
    import networkx as nx
    import pandas as pd

    graph = karate_graph()
    runner = CliRunner()
    clustering = json.loads(runner.invoke(main, ["clustering", KARATE, *LOCAL, "--json",
                                                 "-o", str(tmp_path / "c")]).output)
    assert abs(clustering["average_clustering"] - nx.average_clustering(graph)) < 1e-12
    written = pd.read_parquet(tmp_path / "c")
    expected = nx.clustering(graph)
    assert all(abs(c - expected[v]) < 1e-12
               for v, c in zip(written["vertex"], written["clustering"], strict=True))
    transitivity = json.loads(runner.invoke(main, ["transitivity", KARATE, *LOCAL,
                                                   "--json"]).output)
    assert abs(transitivity["transitivity"] - nx.transitivity(graph)) < 1e-12
    support = runner.invoke(main, ["support", KARATE, *LOCAL, "-o", str(tmp_path / "s")])
    assert support.exit_code == 0 and "top" in support.output
    frame = pd.read_parquet(tmp_path / "s")
    assert len(frame) == 78 and (frame["u"] < frame["v"]).all()
    assert all(s == len(set(graph[u]) & set(graph[v]))
               for u, v, s in zip(frame["u"], frame["v"], frame["support"], strict=True))
    truss = json.loads(runner.invoke(main, ["ktruss", "4", KARATE, *LOCAL, "--json",
                                            "-o", str(tmp_path / "k")]).output)
    four = nx.k_truss(graph, 4)
    assert (truss["edges"], truss["vertices"]) == (four.number_of_edges(),
                                                   four.number_of_nodes())
    edges = pd.read_parquet(tmp_path / "k")
    assert set(zip(edges["u"], edges["v"], strict=True)) == {tuple(sorted(e))
                                                             for e in four.edges()}
    numbers = json.loads(runner.invoke(main, ["truss", KARATE, *LOCAL, "--json"]).output)
    assert numbers["max_truss"] == 5 and sum(numbers["edges_per_truss"].values()) == 78


def test_graphlets_command_summary_json_parquet_and_plan(tmp_path):
    import pandas as pd

    from tests.oracles import brute_force_orbits

    out = tmp_path / "g"
    result = CliRunner().invoke(main, ["graphlets", KARATE, *LOCAL, "--json", "--top", "2",
                                       "-o", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["graphlets"]["triangles"] == 45 and report["graphlets"]["edges"] == 78
    assert report["graphlets"]["4-cliques"] == 11
    assert [row["vertex"] for row in report["top"]] == [0, 1]  # most 4-cliques, ties by id
    written = pd.read_parquet(out).set_index("vertex")
    net, _ = brute_force_orbits(karate_graph())
    assert {v: row.tolist() for v, row in written.iterrows()} == net
    raw = json.loads(CliRunner().invoke(main, ["graphlets", KARATE, *LOCAL, "--json",
                                               "--orbits", "sigma0-4", "--kind", "raw"]).output)
    assert raw["graphlets"] == {"edges": 78, "2-paths": 528, "triangles": 45}
    plan = CliRunner().invoke(main, ["graphlets", KARATE, *LOCAL, "--explain",
                                     "--memory-budget", "2KiB"])
    assert plan.exit_code == 0, plan.output
    lines = {line.split()[0]: line for line in plan.output.splitlines()}
    assert "pairs_to_bin 155" in lines["cycles"] and "anchor_ranges" in lines["cycles"]
    assert "groups" in lines["cliques"] and "peak_bytes" in lines["neighbours"]
    bad = CliRunner().invoke(main, ["graphlets", KARATE, *LOCAL, "--orbits", "sigma0-15"])
    assert bad.exit_code == 2 and "sigma0-15" in bad.output


def test_analytic_errors_are_one_line(tmp_path):
    runner = CliRunner()
    bad = runner.invoke(main, ["ktruss", "x", KARATE, *LOCAL])
    assert bad.exit_code == 2 and "x" in bad.output
    missing = runner.invoke(main, ["triangles", str(tmp_path / "nope.txt"), *LOCAL])
    assert missing.exit_code == 2 and missing.output.startswith("dtri: error:")
    assert "no such file" in missing.output
    neither = runner.invoke(main, ["support", *LOCAL])
    assert neither.exit_code == 2 and "give PATHS" in neither.output


@pytest.mark.parametrize(("k", "shown"), [("-1", "-1"), ("1.5", "'1.5'"), ("x", "'x'")])
def test_ktruss_refuses_a_bad_k_as_the_api_does_in_one_line(k, shown):
    bad = CliRunner().invoke(main, ["ktruss", k, KARATE, *LOCAL])
    assert bad.exit_code == 2
    assert bad.output == f"dtri: error: k must be an integer of at least 0, got {shown}\n"


def test_ktruss_still_refuses_unknown_options_and_takes_k_zero():
    runner = CliRunner()
    for args in (["4", KARATE, "--jsn"], ["--jsn", "4", KARATE], ["4", "-x", KARATE]):
        bad = runner.invoke(main, ["ktruss", *args, *LOCAL])
        assert bad.exit_code == 2 and "No such option" in bad.output, args
    assert "Did you mean" in bad.output or "-x" in bad.output
    zero = json.loads(runner.invoke(main, ["ktruss", "0", KARATE, *LOCAL, "--json"]).output)
    assert (zero["k"], zero["edges"], zero["vertices"]) == (0, 78, 34)


def test_analytic_commands_share_the_options_of_count():
    runner = CliRunner()
    count_options = {line.split()[0] for line in
                     runner.invoke(main, ["count", "--help"]).output.splitlines()
                     if line.strip().startswith("--")}
    for command in ("triangles", "clustering", "transitivity", "support", "truss"):
        text = runner.invoke(main, [command, "--help"]).output
        for option in count_options - {"--explain", "--json", "--approx", "--error",
                                        "--confidence", "--samples", "--seconds",
                                        "--sample-seed", "--clustering", "--method"}:
            assert option in text, (command, option)


def test_count_prints_the_note_the_moves_and_with_explain_the_link(monkeypatch):
    """A cluster whose comms have a note (several GPU workers without distributed-ucxx, made
    up here) says it in count's and an analytic's output; count adds the bytes moved, and
    --explain the protocol and the probed link."""
    note = "the GPU workers talk TCP: pip install distributed-ucxx-cu13"
    monkeypatch.setattr(session, "resolve_protocol",
                        lambda *args: ProtocolChoice("tcp", note))
    args = ["--generate", "rmat:8", "--workers", "2", "--backend", "cpu",
            "--memory-budget", "256KiB"]
    with dask.config.set({link.PROBE_BYTES: "1MiB", link.PROBE_REPEATS: 1}):
        text = CliRunner().invoke(main, ["count", *args])
        explained = CliRunner().invoke(main, ["count", *args, "--explain", "--json"])
        plan_text = CliRunner().invoke(main, ["count", *args, "--explain"])
        analytic = CliRunner().invoke(main, ["triangles", *args])
    assert text.exit_code == 0, text.output
    assert f"note           {note}" in text.output.splitlines()
    assert "between workers" in text.output and "most to one worker" in text.output
    assert explained.exit_code == 0, explained.output
    plan = json.loads(explained.output)
    assert plan["protocol"] == "tcp" and plan["protocol_note"] == note
    assert plan["probed_link_bandwidth"] > 0
    assert total_moved(plan["moved_bytes"]) > 0
    assert plan_text.exit_code == 0, plan_text.output
    lines = plan_text.output.splitlines()
    assert any(line.startswith("comms          tcp, ") and "between two workers" in line
               for line in lines), plan_text.output
    assert f"note           {note}" in lines
    assert analytic.exit_code == 0, analytic.output
    assert f"note           {note}" in analytic.output.splitlines()


def test_wedges_are_named_oriented_wherever_they_are_counted():
    """karate's 69 wedges are the oriented ones (pairs of a vertex's later neighbours), not
    NetworkX's 528 paths of length two: the labels say so."""
    runner = CliRunner()
    counted = runner.invoke(main, ["count", KARATE, *LOCAL])
    assert "wedges         69 (oriented: pairs of a vertex's later neighbours" in counted.output
    explained = runner.invoke(main, ["count", KARATE, "--explain", *LOCAL])
    assert "oriented wedges 69" in explained.output
    assert "samples of the 69 oriented wedges" in explained.output

"""``dtri list``: every triangle written to Parquet, once, as input ids ``a < b < c``; with
``--limit`` and ``--vertices``; whole or not at all (a listing killed while it writes leaves
nothing under its name)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import networkx as nx
import pandas as pd
import pytest
from click.testing import CliRunner

from dtri import cli
from tests.cli.test_outputs import KARATE, LOCAL, dtri_process, killed_when, temporary_folders

RMAT_16 = ["--generate", "rmat:16", "--backend", "cpu", "--scheduler", "synchronous",
           "--memory-budget", "256MiB"]
"""R-MAT 16 (15.6 M triangles) listed in about 20 tasks, one file each, one after another."""


def karate_triangles(nbunch=None) -> set[tuple[int, int, int]]:
    graph = nx.read_edgelist(KARATE, nodetype=int)
    return {tuple(sorted(t)) for t in nx.all_triangles(graph, nbunch)}


def listed(out) -> list[tuple[int, int, int]]:
    frame = pd.read_parquet(out)
    assert list(frame.columns) == ["a", "b", "c"]
    found = [tuple(r) for r in frame.to_numpy().tolist()]
    assert all(a < b < c for a, b, c in found)
    return found


def test_list_writes_every_triangle_once(tmp_path):
    out = tmp_path / "triangles"
    result = CliRunner().invoke(cli.main, ["list", KARATE, *LOCAL, "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    found = listed(out)
    assert len(found) == len(set(found)) == summary["listed"] == 45
    assert set(found) == karate_triangles()
    assert summary["output"] == str(out) and summary["vertices"] == 34
    assert summary["limit"] is None and summary["of_vertices"] is None
    assert sorted(os.listdir(tmp_path)) == ["triangles"]


@pytest.mark.parametrize("workers", ["1", "4"])
def test_list_on_a_local_cluster(tmp_path, workers):
    out = tmp_path / "triangles"
    done = subprocess.run([sys.executable, "-m", "dtri", "list", KARATE, "--backend", "cpu",
                           "--workers", workers, "--memory-budget", "1KiB", "-o", str(out)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert len(list(out.glob("*.parquet"))) > 1
    found = listed(out)
    assert len(found) == len(set(found)) and set(found) == karate_triangles()


def test_limit_and_vertices(tmp_path):
    vertices = tmp_path / "vertices.txt"
    vertices.write_text("# the two leaders\n0, 33\n\n999999  # not in the graph\n")
    runner = CliRunner()
    result = runner.invoke(cli.main, ["list", KARATE, *LOCAL, "-o", str(tmp_path / "of"),
                                      "--vertices", str(vertices), "--json"])
    assert result.exit_code == 0, result.output
    assert set(listed(tmp_path / "of")) == karate_triangles([0, 33])
    assert json.loads(result.stdout)["of_vertices"] == 3
    result = runner.invoke(cli.main, ["list", KARATE, *LOCAL, "-o", str(tmp_path / "some"),
                                      "--limit", "10", "--vertices", str(vertices)])
    assert result.exit_code == 0, result.output
    some = listed(tmp_path / "some")
    assert len(some) == 10 and set(some) <= karate_triangles([0, 33])
    result = runner.invoke(cli.main, ["list", KARATE, *LOCAL, "-o", str(tmp_path / "none"),
                                      "--limit", "0"])
    assert result.exit_code == 0 and listed(tmp_path / "none") == []


@pytest.mark.parametrize(("args", "message"), [
    (["--limit", "-1"], "Invalid value for '--limit'"),
    (["--vertices", "VERTICES"], "VERTICES, line 2: 'x7' is not a vertex id"),
    (["--vertices", "MISSING"], "MISSING: cannot read the vertices"),
    ([], None),
])
def test_bad_options_fail_in_one_line_and_write_nothing(tmp_path, args, message):
    (tmp_path / "VERTICES").write_text("1\nx7\n")
    args = [str(tmp_path / a) if a in ("VERTICES", "MISSING") else a for a in args]
    command = ["list", KARATE, *LOCAL, *args]
    if message is None:  # no -o
        message = "Missing option '-o' / '--output'"
    else:
        command += ["-o", str(tmp_path / "out")]
    result = CliRunner().invoke(cli.main, command)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dtri: error: ") and message in lines[0]
    assert not (tmp_path / "out").exists() and temporary_folders(tmp_path) == []


def parquet_written(tmp_path) -> bool:
    """Whether a listing has written a file in its temporary folder."""
    return any(name.endswith(".parquet") for folder in temporary_folders(tmp_path)
               for name in os.listdir(tmp_path / folder))


def test_a_listing_killed_while_it_writes_leaves_nothing_under_its_name(tmp_path):
    out = tmp_path / "tri"
    killed_when(dtri_process("list", *RMAT_16, "-o", str(out)),
                lambda: parquet_written(tmp_path))
    assert not out.exists()


def test_a_listing_terminated_while_it_writes_removes_its_folder(tmp_path):
    out = tmp_path / "tri"
    run = dtri_process("list", *RMAT_16, "-o", str(out))
    killed_when_written = False
    while run.poll() is None and not killed_when_written:
        if parquet_written(tmp_path):
            run.send_signal(signal.SIGTERM)
            killed_when_written = True
        time.sleep(0.005)
    stdout, stderr = run.communicate(timeout=120)
    assert killed_when_written, stderr
    assert run.returncode == 143, stderr
    assert stderr.strip().splitlines()[-1] == "dtri: interrupted" and stdout == ""
    assert os.listdir(tmp_path) == []


def test_list_reads_every_input_count_takes(tmp_path):
    """A saved graph (``dtri prepare``), Parquet and Matrix Market list NetworkX's
    triangles, as the text they came from does."""
    import numpy as np
    import scipy.io
    import scipy.sparse

    edges = np.loadtxt(KARATE, dtype=np.int64)
    pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]}).to_parquet(tmp_path / "k.parquet")
    n = int(edges.max()) + 1
    scipy.io.mmwrite(tmp_path / "k.mtx", scipy.sparse.coo_matrix(
        (np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n)))
    runner = CliRunner()
    saved = runner.invoke(cli.main, ["prepare", KARATE, *LOCAL, "-o", str(tmp_path / "k.dtri")])
    assert saved.exit_code == 0, saved.output
    for name, given in [("saved", "k.dtri"), ("parquet", "k.parquet"), ("mtx", "k.mtx")]:
        result = runner.invoke(cli.main, ["list", str(tmp_path / given), *LOCAL, "-o",
                                          str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        found = listed(tmp_path / name)
        # Matrix Market ids start at 1
        shift = 1 if name == "mtx" else 0
        assert {(a - shift, b - shift, c - shift) for a, b, c in found} == karate_triangles()

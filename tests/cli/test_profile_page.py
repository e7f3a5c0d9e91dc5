"""``dtri profile``: the page parses and holds every figure, its data beside it equals the
numbers printed, and without matplotlib one line names the extra."""

from __future__ import annotations

import json
import subprocess
import sys

import networkx as nx
import pytest
from click.testing import CliRunner

from dtri import cli
from tests.oracles import PAGE_FIGURES, parsed_page

KARATE = "examples/karate.txt"
LOCAL = ["--scheduler", "synchronous", "--backend", "cpu"]


def test_the_page_parses_holds_every_figure_and_its_data(tmp_path):
    out = tmp_path / "report"
    result = CliRunner().invoke(cli.main, ["profile", KARATE, *LOCAL, "-o", str(out),
                                           "--graphlets", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["output"] == str(out) and printed["triangles"] == 45
    page = parsed_page((out / "index.html").read_text(encoding="utf-8"))
    assert set(page.figures) == PAGE_FIGURES | {"orbits", "graphlets"}
    assert page.drawn == set(page.figures)
    assert {"numbers", "seconds", "peaks"} <= set(page.tables)
    assert page.scripts == 0
    data = json.loads((out / "profile.json").read_text())
    karate = nx.read_edgelist(KARATE, nodetype=int)
    assert data["numbers"]["triangles"] == 45
    assert data["numbers"]["average_clustering"] == pytest.approx(
        nx.average_clustering(karate), abs=1e-12)
    assert sum(row["vertices"] for row in data["tables"]["degree"]) == 34
    assert {row["k"]: row["kept"] for row in data["tables"]["truss"]} == {
        k: nx.k_truss(karate, k).number_of_edges() for k in range(2, 6)}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["report"]  # no temporary


def test_the_text_summary_names_the_numbers_and_the_output(tmp_path):
    result = CliRunner().invoke(cli.main, ["profile", KARATE, *LOCAL, "-o",
                                           str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert lines["triangles"] == "45" and lines["max_truss"] == "5"
    assert lines["output"] == str(tmp_path / "r")
    assert not parsed_page((tmp_path / "r" / "index.html").read_text()).figures.count("orbits")


def test_progress_names_the_profile_stages(tmp_path):
    result = CliRunner().invoke(cli.main, ["profile", KARATE, *LOCAL, "--progress", "-o",
                                           str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "dtri: profile-vertices" in result.stderr
    assert "dtri: profile-truss" in result.stderr


WITHOUT_MATPLOTLIB = """\
import sys
sys.modules["matplotlib"] = None  # import matplotlib: ImportError, as if not installed
from dtri.cli import run
sys.argv[0] = "dtri"
run()
"""


def test_without_matplotlib_one_line_names_the_extra(tmp_path):
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-c", WITHOUT_MATPLOTLIB, "profile", KARATE,
                           *LOCAL, "-o", str(out)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("dtri: error: ") and 'pip install "dtri[report]"' in line
    assert list(tmp_path.iterdir()) == []  # refused before anything was made


def test_without_matplotlib_the_numbers_still_come_from_python():
    code = ('import sys; sys.modules["matplotlib"] = None; import dtri; '
            f'print(dtri.profile({KARATE!r}, backend="cpu").numbers["triangles"])')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "45"

"""The benchmark results: every line in the one schema (the archived files' too), INDEX.md as
index.py writes it with each file under Current or Archived, a runner preset for every results
file, docs/performance.md citing the current files and only those (in at most 5,000 words),
docs/history.md every archived one, and every relative link of the docs resolving."""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "examples" / "benchmarks"
RESULTS_FOLDER = BENCHMARKS / "results"
ARCHIVE_FOLDER = RESULTS_FOLDER / "archive"
RESULTS = sorted([*RESULTS_FOLDER.glob("*.jsonl"), *ARCHIVE_FOLDER.glob("*.jsonl")])
"""Every results file, current (``results/``) and archived (``results/archive/``)."""


@functools.cache
def module(name: str) -> ModuleType:
    """A script of examples/benchmarks, imported as its folder's scripts import each other."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = loaded  # its dataclasses look their module up
    spec.loader.exec_module(loaded)
    return loaded


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def schema_problems(line: dict) -> list[str]:
    """What is wrong with one line of a results file (nothing: an empty list)."""
    schema = module("schema")
    if tuple(line) != schema.FIELDS:
        return [f"keys {list(line)}, not {list(schema.FIELDS)}"]
    problems = []
    if line["benchmark"] not in schema.BENCHMARKS:
        problems.append(f"benchmark {line['benchmark']!r} is not in schema.BENCHMARKS")
    for key in ("graph", "device", "backend", "commit", "command"):
        if line[key] is not None and not isinstance(line[key], str):
            problems.append(f"{key} is {line[key]!r}, not a string or null")
    if line["backend"] not in (None, "cpu", "gpu"):
        problems.append(f"backend {line['backend']!r}")
    for key in ("seconds", "triangles"):
        if line[key] is not None and not is_number(line[key]):
            problems.append(f"{key} is {line[key]!r}, not a number or null")
    if line["triangles"] is not None and not isinstance(line["triangles"], int):
        problems.append("triangles is not an integer")
    stages = line["stage_seconds"]
    if stages is not None and not (isinstance(stages, dict)
                                   and all(is_number(v) for v in stages.values())):
        problems.append(f"stage_seconds is {stages!r}, not {{stage: seconds}} or null")
    if not isinstance(line["detail"], dict):
        problems.append("detail is not a dict")
    if not isinstance(line["peers"], dict) or not all(
            isinstance(peer, dict) for peer in line["peers"].values()):
        problems.append("peers is not a dict of dicts")
    else:
        for name, peer in line["peers"].items():
            if peer.get("seconds") is not None and not is_number(peer["seconds"]):
                problems.append(f"peer {name}'s seconds is {peer['seconds']!r}")
    return problems


def test_there_are_results():
    assert len(RESULTS) > 30


@pytest.mark.parametrize("path", RESULTS,
                         ids=lambda path: path.relative_to(RESULTS_FOLDER).as_posix())
def test_every_line_has_the_schema(path):
    for number, text in enumerate(path.read_text().splitlines(), 1):
        assert schema_problems(json.loads(text)) == [], f"{path.name}:{number}"


def test_the_check_finds_a_line_off_the_schema():
    line = json.loads(RESULTS[0].read_text().splitlines()[0])
    assert schema_problems(line) == []
    assert schema_problems({**line, "wall_seconds": 1.0})
    assert schema_problems({**line, "seconds": "1.0"})
    assert schema_problems({**line, "peers": {"x": {"seconds": "fast"}}})
    assert schema_problems({**line, "detail": None})
    assert schema_problems({key: value for key, value in line.items() if key != "peers"})


def test_index_is_what_index_py_writes():
    index = module("index")
    assert (BENCHMARKS / "INDEX.md").read_text() == index.render(), (
        "INDEX.md is stale or edited by hand: run python examples/benchmarks/index.py")


def test_index_changes_with_the_results(tmp_path, monkeypatch):
    index = module("index")
    (tmp_path / "one.jsonl").write_text(RESULTS[0].read_text())
    monkeypatch.setattr(index, "RESULTS", tmp_path)
    before = index.render()
    line = json.loads(RESULTS[0].read_text().splitlines()[0])
    (tmp_path / "one.jsonl").write_text(json.dumps({**line, "seconds": 12345.0}) + "\n")
    assert index.render() != before
    assert "1.234e+04" in index.render()
    (tmp_path / "archive").mkdir()
    (tmp_path / "archive" / "old.jsonl").write_text(RESULTS[0].read_text())
    (tmp_path / "archive" / "old.txt").write_text("a log\n")
    current, archived = index.render().split("\n## Archived\n")
    assert "[one](" in current and "[old](" in archived and "[old](" not in current
    assert "archive/old.txt" in archived


def test_index_marks_each_file_current_or_archived():
    """INDEX.md lists each file of results/ under Current and each of results/archive/
    under Archived, linked where it is."""
    files = module("index").results_files()
    current, archived = (BENCHMARKS / "INDEX.md").read_text().split("\n## Archived\n")
    for path in files["current"]:
        assert f"(results/{path.name})" in current, path.name
        assert f"(results/{path.name})" not in archived, path.name
    for path in files["archived"]:
        assert f"(results/archive/{path.name})" in archived, path.name
        assert f"/{path.name})" not in current, path.name


def test_a_results_file_is_current_or_archived_not_both():
    files = module("index").results_files()
    names = [path.name for paths in files.values() for path in paths]
    assert len(names) == len(set(names))
    assert all(path.is_file() for path in ARCHIVE_FOLDER.iterdir()) \
        if ARCHIVE_FOLDER.is_dir() else True


def test_every_results_file_has_a_runner_preset():
    run = module("run")
    names = {path.name.rsplit(".", 1)[0]
             for paths in module("index").results_files().values() for path in paths}
    assert set(run.PRESETS) == names
    for preset in run.PRESETS.values():
        for command in preset.commands:
            for word in command.argv:
                if word.startswith(("examples/", "cluster/")):
                    assert (ROOT / word).is_file(), word
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "examples").rglob("*.md")), *sorted((ROOT / "cluster").rglob("*.md"))]


def broken_links(path: Path) -> list[str]:
    """The relative links of a markdown file whose target does not exist."""
    broken = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor in the same file
        if not (path.parent / target.split("#")[0]).exists():
            broken.append(target)
    return broken


@pytest.mark.parametrize("path", documents(), ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_resolve(path):
    assert broken_links(path) == []


def test_the_link_check_finds_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("")
    page.write_text("[ok](there.md) [anchor](there.md#a) [web](https://x.org) "
                    "[gone](results/missing.jsonl)")
    assert broken_links(page) == ["results/missing.jsonl"]


PERFORMANCE = ROOT / "docs" / "performance.md"
HISTORY = ROOT / "docs" / "history.md"
PERFORMANCE_WORDS = 5000
"""performance.md gives the current figures only; their story goes to history.md."""


def cited_results(path: Path, folder: Path = RESULTS_FOLDER) -> set[Path]:
    """The results files (current or archived) that a markdown file links, resolved."""
    cited = set()
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor in the same file
        resolved = (path.parent / target.split("#")[0]).resolve()
        if resolved.is_relative_to(folder.resolve()) and resolved.suffix:
            cited.add(resolved)
    return cited


def test_performance_cites_only_current_results():
    cited = cited_results(PERFORMANCE)
    assert len(cited) > 30
    assert not [path.name for path in cited if path.parent != RESULTS_FOLDER.resolve()], (
        "performance.md cites an archived results file: cite the current one")
    assert all(path.is_file() for path in cited)


def test_every_current_result_is_cited():
    """A file in results/ is current because performance.md (or the README) cites it; one
    that no claim cites any more belongs in results/archive/."""
    cited = cited_results(PERFORMANCE) | cited_results(ROOT / "README.md")
    current = module("index").results_files()["current"]
    assert [path.name for path in current if path.resolve() not in cited] == []


def test_history_cites_every_archived_result():
    cited = cited_results(HISTORY)
    archived = module("index").results_files()["archived"]
    assert [path.name for path in archived if path.resolve() not in cited] == []


def test_performance_stays_short():
    assert len(PERFORMANCE.read_text().split()) <= PERFORMANCE_WORDS


def test_the_citation_check_finds_results_links(tmp_path):
    results = tmp_path / "results"
    (results / "archive").mkdir(parents=True)
    page = tmp_path / "page.md"
    page.write_text("[a](results/now.jsonl) [b](results/archive/old.jsonl#x) "
                    "[c](https://x.org/results/y.jsonl) [d](elsewhere.md) [e](#top)")
    assert cited_results(page, results) == {(results / "now.jsonl").resolve(),
                                            (results / "archive" / "old.jsonl").resolve()}

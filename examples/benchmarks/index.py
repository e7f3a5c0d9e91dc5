"""Write INDEX.md, the table of headline figures, from results/*.jsonl and
results/archive/*.jsonl (never by hand).

    python examples/benchmarks/index.py          # writes examples/benchmarks/INDEX.md
    python examples/benchmarks/index.py --check  # exits 1 where INDEX.md is not what it writes

Two tables: the current files (``results/``, each cited by docs/performance.md for the figure
of a claim as the code is now), then the archived ones (``results/archive/``, superseded by a
later measurement of the same claim or by a change to the code; docs/history.md tells how).
One row per results file and benchmark: the graphs, devices, backends and commits of its
lines; the median and the least of their ``seconds``; each peer's median seconds and dtri ÷
peer (per graph, dtri's median over the peer's median, whether on the same line or on the
peer's own line; then the median over the graphs).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from schema import BENCHMARKS

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
ARCHIVE = "archive"
"""The folder of ``results/`` that holds the superseded files."""
INDEX = HERE / "INDEX.md"
SHOWN = 3
"""Graphs and commits listed per row; more are counted."""


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def figure(value: float) -> str:
    return f"{value:.4g}"


def listed(values: list[Any]) -> str:
    """The distinct values in their order, the first few of them."""
    distinct = list(dict.fromkeys(value for value in values if value is not None))
    more = f" +{len(distinct) - SHOWN}" if len(distinct) > SHOWN else ""
    return ", ".join(str(value) for value in distinct[:SHOWN]) + more or "—"


def graph_name(graph: Any) -> str | None:
    """``rmat:24`` as it is, a path by its file's name."""
    if not isinstance(graph, str):
        return None
    return graph if ":" in graph and "/" not in graph else Path(graph).name.split(".")[0]


def device_name(device: Any) -> str | None:
    """The device without a long remark in brackets."""
    return re.sub(r" \([^)]{24,}\)$", "", device) if isinstance(device, str) else None


def peer_figures(lines: list[dict[str, Any]]) -> str:
    """Each peer's median seconds and the median over graphs of dtri ÷ peer."""
    names = list(dict.fromkeys(name for line in lines for name in line["peers"]))
    shown = []
    for name in names:
        theirs = [(line["graph"], seconds) for line in lines
                  if (seconds := number(line["peers"][name].get("seconds")
                                        if name in line["peers"] else None)) is not None]
        if not theirs:
            continue
        ratios = []
        for graph in dict.fromkeys(graph for graph, _ in theirs):
            ours = [s for line in lines if line["graph"] == graph
                    and (s := number(line["seconds"])) is not None]
            peer = statistics.median(s for g, s in theirs if g == graph)
            if ours and peer:
                ratios.append(statistics.median(ours) / peer)
        ratio = f" ({figure(statistics.median(ratios))}×)" if ratios else ""
        shown.append(f"{name} {figure(statistics.median(s for _, s in theirs))} s{ratio}")
    return "; ".join(shown) or "—"


def results_files() -> dict[str, list[Path]]:
    """Every results file (measurements and logs) by status: ``current`` (in ``results/``)
    and ``archived`` (in ``results/archive/``), each sorted by name."""
    return {status: sorted(path for path in folder.iterdir() if path.is_file())
            if folder.is_dir() else []
            for status, folder in (("current", RESULTS), ("archived", RESULTS / ARCHIVE))}


def link(path: Path) -> str:
    """A results file's link from INDEX.md (beside ``results/``)."""
    return path.relative_to(RESULTS.parent).as_posix()


def row(path: Path, lines: list[dict[str, Any]], first: bool) -> str:
    seconds = [s for line in lines if (s := number(line["seconds"])) is not None]
    timed = (f"{figure(statistics.median(seconds))} ({figure(min(seconds))})" if seconds
             else "—")
    cells = [f"[{path.stem}]({link(path)})" if first else "", f"`{lines[0]['benchmark']}`",
             listed([graph_name(line["graph"]) for line in lines]),
             listed([device_name(line["device"]) for line in lines]),
             listed([line["backend"] for line in lines]), str(len(lines)), timed,
             peer_figures(lines), listed([line["commit"] for line in lines])]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def table(paths: list[Path], benchmarks: list[str]) -> list[str]:
    """The rows of the ``.jsonl`` files among ``paths``; their benchmarks go to
    ``benchmarks``."""
    rows = []
    for path in paths:
        if path.suffix != ".jsonl":
            continue
        lines = [json.loads(text) for text in path.read_text().splitlines()]
        groups: dict[str, list[dict[str, Any]]] = {}
        for line in lines:
            groups.setdefault(line["benchmark"], []).append(line)
        for k, (benchmark, group) in enumerate(groups.items()):
            rows.append(row(path, group, k == 0))
            benchmarks.append(benchmark)
    return rows


def logs(paths: list[Path]) -> list[str]:
    """The line that names the logs among ``paths``, if any."""
    named = [f"[{path.name}]({link(path)})" for path in paths if path.suffix != ".jsonl"]
    return ["", "Logs, not measurements: " + ", ".join(named) + "."] if named else []


HEADER = ("| results | benchmark | graphs | device | backend | lines | seconds: median (least) "
          "| peers: median seconds (dtri ÷ peer) | commits |")


def render() -> str:
    files, benchmarks = results_files(), []
    current = table(files["current"], benchmarks)
    archived = table(files["archived"], benchmarks)
    meanings = [f"| `{name}` | {BENCHMARKS.get(name, '—')} |" for name in sorted(set(benchmarks))]
    return "\n".join([
        "# Benchmark results: headline figures",
        "",
        "Written by [`index.py`](index.py) from [`results/`](results/) and its "
        "`archive/` (not by hand: "
        "`tests/test_benchmark_results.py` checks that it is what `index.py` writes now). "
        f"**Current** ({len(files['current'])} files): each is cited by "
        "[docs/performance.md](../../docs/performance.md) for the figure of a claim as the code "
        f"is now. **Archived** ({len(files['archived'])} files): superseded by a later "
        "measurement of the same claim or by a change to the code; "
        "[docs/history.md](../../docs/history.md) tells how each figure was reached. "
        "One row per results file and benchmark: `seconds` is the median of the lines' "
        "`seconds` (the least in brackets; what they time is below), each peer's the median "
        "of its `seconds`, and dtri ÷ peer the median over the graphs of dtri's median over "
        "the peer's (below 1: dtri is faster). Where each file comes from and how to read it: "
        "[README.md](README.md); the commands: `python examples/benchmarks/run.py --list`.",
        "",
        "## Current",
        "",
        HEADER,
        "|---|---|---|---|---|---|---|---|---|",
        *current,
        *logs(files["current"]),
        "",
        "## Archived",
        "",
        HEADER,
        "|---|---|---|---|---|---|---|---|---|",
        *archived,
        *logs(files["archived"]),
        "",
        "## What `seconds` times",
        "",
        "| benchmark | seconds |",
        "|---|---|",
        *meanings,
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 where INDEX.md is not what this writes")
    args = parser.parse_args()
    text = render()
    if args.check:
        same = INDEX.exists() and INDEX.read_text() == text
        print("INDEX.md is up to date" if same else "INDEX.md is stale: run index.py")
        sys.exit(0 if same else 1)
    INDEX.write_text(text)


if __name__ == "__main__":
    main()

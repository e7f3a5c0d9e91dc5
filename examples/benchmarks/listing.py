"""``dtri list`` against ``dtri count`` of the same graph, each in a process of its own
(issue 73: R-MAT 16 listed on the 2-core CPU in at most 5× the count's time; R-MAT 20 on one
GPU in at most 10× the count's time or at 1 GB/s of Parquet written, whichever is slower).

Usage::

    python examples/benchmarks/listing.py rmat:16 ca-CondMat [--rounds 3] [--backend cpu] \\
        [--data DIR] [--dtri-args "--workers 2"] [--timeout SECONDS] [--out FILE]
    python examples/benchmarks/listing.py rmat:20 --backend gpu --rounds 3   # one GPU

A graph is a generator spec (``--generate SPEC``) or the name of a shared SNAP graph
(``DIR/NAME.txt.gz``). First both commands run once on R-MAT 10, untimed, so that numba's
cache holds the kernels either compiles and neither arm pays for it. Then, in each of
``--rounds`` rounds, ``dtri count INPUT --json`` and ``dtri list INPUT -o DIR --json`` run in
new processes, the order alternating from round to round (a busy machine slows both alike).

One line per graph: ``seconds`` is the listing's best wall time over the rounds,
``peers.dtri-count`` the count's; ``detail.ratio`` their quotient (the issue's target: at
most 5) and ``detail.stage_ratio`` that of dtri's own seconds (the stages each command
reports, without the process's start and imports). ``detail`` also holds the rows written,
the Parquet bytes written and their rate over the listing's own stage (``analytic``) and
over the whole command, each round's figures, ``/proc/loadavg`` around each round, and
``exact``: every round's rows written equal the count's triangles (and, for a shared graph,
the published count). ``detail.target`` is the issue's target for the backend, on the best
wall times: ``allowed_seconds`` is ``count_times`` × the count's (10 on the GPU, 5 on the
CPU) or, on the GPU, the Parquet bytes at ``GB_per_s`` (1) where that is slower; ``met``.

With no cluster named, both commands run where dtri puts them: in their own process, on the
CPU or on the one GPU that holds the graph. ``--timeout`` bounds each command (a command
past it ends the script).

Each line is in the schema of ``schema.py`` (family ``listing``).
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # schema.py beside this file
from profile_bench import DTRI, loadavg, run
from schema import ROOT, command_line, emit, to_schema

SHARED = Path(os.environ.get("DTRI_DATA", ROOT.parent / "shared" / "data"))


def source(graph: str, data: Path) -> list[str]:
    """The input arguments of a graph: ``--generate SPEC`` or the shared file."""
    return ["--generate", graph] if ":" in graph else [str(data / f"{graph}.txt.gz")]


def published(graph: str, data: Path) -> int | None:
    """A shared graph's published triangle count (``MANIFEST.tsv``); None for a spec."""
    if ":" in graph:
        return None
    with open(data / "MANIFEST.tsv", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["name"] == graph:
                return int(row["triangles"])
    raise SystemExit(f"{graph} is not in {data / 'MANIFEST.tsv'}")


def own_total(stages: dict[str, float]) -> float:
    """dtri's own seconds: ``total`` where the command reports it, else the stages' sum."""
    return stages["total"] if "total" in stages else sum(stages.values())


def parquet_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*.parquet"))


COUNT_TIMES = {"cpu": 5, "gpu": 10}
"""Issue 73's bound on the listing, in count times, by backend."""
GB_PER_S = {"gpu": 1.0}
"""Issue 73's other bound on the GPU: the Parquet written at this rate (whichever is
slower)."""


def target(backend: str, list_seconds: float, count_seconds: float, written: int
           ) -> dict[str, Any]:
    """The issue's target for ``backend`` on these wall times and bytes written."""
    times, rate = COUNT_TIMES.get(backend, COUNT_TIMES["cpu"]), GB_PER_S.get(backend)
    allowed = max(times * count_seconds, written / (rate * 1e9) if rate else 0.0)
    return {"count_times": times, "GB_per_s": rate, "allowed_seconds": round(allowed, 3),
            "met": list_seconds <= allowed}


def one_round(graph: str, extra: list[str], data: Path, folder: Path, r: int,
              timeout: float | None = None) -> dict[str, Any]:
    """Both commands once, in the round's order: their wall and own seconds, rows and
    bytes."""
    out = folder / f"listing-{graph.replace(':', '')}-{r}"
    commands = {
        "count": [*DTRI, "count", *source(graph, data), *extra, "--json"],
        "list": [*DTRI, "list", *source(graph, data), *extra, "-o", str(out), "--json"],
    }
    order = ["count", "list"] if r % 2 == 0 else ["list", "count"]
    found: dict[str, Any] = {"order": order, "loadavg_before": loadavg()}
    for arm in order:
        seconds, peak, printed = run(commands[arm], timeout)
        found[arm] = {"wall": seconds, "own": own_total(printed["seconds"]),
                      "stages": printed["seconds"], "peak_bytes": peak,
                      "command": shlex.join(commands[arm][2:]).replace(str(out), "DIR")}
        if arm == "count":
            found[arm]["triangles"] = printed["triangles"]
        else:
            found[arm]["rows"] = printed["listed"]
            found[arm]["bytes"] = parquet_bytes(out)
            found[arm]["files"] = len(list(out.rglob("*.parquet")))
            shutil.rmtree(out)
    found["loadavg_after"] = loadavg()
    return found


def line(graph: str, backend: str, rounds: list[dict[str, Any]], data: Path
         ) -> dict[str, Any]:
    """The schema's line of a graph's rounds."""
    best = {arm: min(rounds, key=lambda r: r[arm]["wall"])[arm] for arm in ("count", "list")}
    own = {arm: min(r[arm]["own"] for r in rounds) for arm in ("count", "list")}
    triangles = best["count"]["triangles"]
    expected = published(graph, data)
    listed = best["list"]
    analytic = min(r["list"]["stages"]["analytic"] for r in rounds)
    return {
        "graph": graph, "backend": backend, "command": command_line(),
        "seconds": round(listed["wall"], 3), "stage_seconds": listed["stages"],
        "triangles": triangles,
        "peers": {"dtri-count": {"seconds": round(best["count"]["wall"], 3),
                                 "own_seconds": round(own["count"], 3),
                                 "triangles": triangles,
                                 "agrees": all(r["count"]["triangles"] == triangles
                                               for r in rounds),
                                 "command": best["count"]["command"]}},
        "ratio": round(listed["wall"] / best["count"]["wall"], 3),
        "stage_ratio": round(own["list"] / own["count"], 3),
        "list_command": listed["command"],
        "own_seconds": round(own["list"], 3),
        "rows": listed["rows"], "parquet_bytes": listed["bytes"],
        "parquet_files": listed["files"],
        "parquet_GB_per_s": round(listed["bytes"] / analytic / 1e9, 4),
        "parquet_GB_per_s_of_command": round(listed["bytes"] / listed["wall"] / 1e9, 4),
        "rows_per_s": round(listed["rows"] / analytic),
        "target": target(backend, listed["wall"], best["count"]["wall"], listed["bytes"]),
        "exact": all(r["list"]["rows"] == r["count"]["triangles"] == triangles
                     for r in rounds) and expected in (None, triangles),
        "published_triangles": expected,
        "rounds": [{"order": r["order"],
                    "wall": {arm: round(r[arm]["wall"], 3) for arm in ("count", "list")},
                    "own": {arm: round(r[arm]["own"], 3) for arm in ("count", "list")},
                    "analytic": round(r["list"]["stages"]["analytic"], 3),
                    "ratio": round(r["list"]["wall"] / r["count"]["wall"], 3),
                    "peak_bytes": {arm: r[arm]["peak_bytes"] for arm in ("count", "list")},
                    "loadavg_before": r["loadavg_before"],
                    "loadavg_after": r["loadavg_after"]} for r in rounds],
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+", help="generator specs or shared graphs' names")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=SHARED,
                        help="the folder of the shared SNAP graphs")
    parser.add_argument("--dtri-args", default="", help="more options of both commands")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds each command may take (default: no limit)")
    parser.add_argument("--out")
    args = parser.parse_args()
    extra = ["--backend", args.backend, *shlex.split(args.dtri_args)]
    with tempfile.TemporaryDirectory(prefix="dtri-listing-") as tmp:
        folder = Path(tmp)
        run([*DTRI, "count", "--generate", "rmat:10", *extra, "--json"])  # numba's cache
        run([*DTRI, "list", "--generate", "rmat:10", *extra, "-o", str(folder / "warm"),
             "--json"])
        for graph in args.graphs:
            rounds = [one_round(graph, extra, args.data, folder, r, args.timeout)
                      for r in range(args.rounds)]
            emit(to_schema("listing", line(graph, args.backend, rounds, args.data)), args.out)


if __name__ == "__main__":
    main()

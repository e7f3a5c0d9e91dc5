"""A saved prepared graph against raw Parquet files, and a count resumed after a SIGKILL.

Usage::

    python examples/benchmarks/saved_graph.py count rmat:18 [--files 4] [--repeat 1] \\
        [--dtri-args "--backend cpu"] [--out FILE]
    python examples/benchmarks/saved_graph.py resume rmat:20 [--kill-at 0.5] \\
        [--dtri-args "--memory-budget 64MiB"] [--out FILE]

``count``: the graph is written as ``--files`` Parquet files (``dtri generate``, on the
``--backend`` of ``--dtri-args`` where they name one) and saved prepared once (``dtri prepare
FILES -o SAVED``); then, in the same run, ``dtri count FILES`` and ``dtri count SAVED`` each
run ``--repeat`` times in a new process, the best wall time kept. The line's ``seconds`` is the
saved graph's count, ``peers.raw-parquet`` the count of the raw files (``ratio``: saved over
raw, in ``detail``), with the per-vertex triangles of both compared (``triangles_agree``).

``resume``: ``dtri count --generate SPEC --checkpoint DIR`` runs whole in a new process
(``peers.full``, and ``peers.no-checkpoint`` the same command without a checkpoint); then
again into a fresh folder, killed with SIGKILL ``--kill-at`` times the full run's join
seconds after its prepared graph is saved (mid-join by default), and run again: the line's
``seconds`` is that rerun's wall time, with the seconds it reports saved, its ``ratio`` to
the full run's, and the join's units done at the kill of all. The rerun is exact where it
agrees with the full run's count (``agrees``).

Each line is in the schema of ``schema.py`` (family ``saved-graph``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # schema.py beside this file
from schema import command_line, emit, to_schema

DTRI = [sys.executable, "-m", "dtri"]


def timed(argv: list[str]) -> tuple[float, dict[str, Any]]:
    """Wall seconds of a dtri command in a new process, and its ``--json`` object."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed: {done.stderr.strip()[-2000:]}")
    return seconds, json.loads(done.stdout)


def best(argv: list[str], repeat: int) -> tuple[float, dict[str, Any]]:
    runs = [timed(argv) for _ in range(repeat)]
    return min(runs, key=lambda run: run[0])


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def vertex_triangles(argv: list[str], out: Path) -> Any:
    """The per-vertex triangles of a graph, written by ``dtri triangles -o`` and read back."""
    import pandas as pd

    subprocess.run([*DTRI, "triangles", *argv, "-o", str(out)], capture_output=True,
                   check=True)
    return pd.read_parquet(out).sort_values("vertex").reset_index(drop=True)


def backend_of(extra: list[str]) -> list[str]:
    """``--backend X`` where the dtri arguments name one (the generator takes it too)."""
    if "--backend" in extra and extra.index("--backend") + 1 < len(extra):
        return ["--backend", extra[extra.index("--backend") + 1]]
    return [arg for arg in extra if arg.startswith("--backend=")]


def count_line(args: argparse.Namespace, extra: list[str], work: Path) -> dict[str, Any]:
    raw, saved = work / "raw", work / "saved"
    subprocess.run([*DTRI, "generate", args.graph, "-o", str(raw), "--partitions",
                    str(args.files), *backend_of(extra)], capture_output=True, check=True)
    prepare_seconds, prepared = timed([*DTRI, "prepare", str(raw), "-o", str(saved), "--json",
                                       *extra])
    raw_seconds, from_raw = best([*DTRI, "count", str(raw), "--json", *extra], args.repeat)
    saved_seconds, from_saved = best([*DTRI, "count", str(saved), "--json", *extra],
                                     args.repeat)
    same = vertex_triangles([str(raw), *extra], work / "t-raw").equals(
        vertex_triangles([str(saved), *extra], work / "t-saved"))
    own = {"graph": args.graph, "backend": from_saved["backend"],
           "command": command_line(), "seconds": round(saved_seconds, 6),
           "stage_seconds": from_saved["seconds"], "triangles": from_saved["triangles"],
           "peers": {"raw-parquet": {"seconds": round(raw_seconds, 6),
                                     "triangles": from_raw["triangles"],
                                     "agrees": from_raw["triangles"] == from_saved["triangles"],
                                     "stage_seconds": from_raw["seconds"]}},
           "measure": "count", "ratio": round(saved_seconds / raw_seconds, 4),
           "triangles_agree": bool(same), "files": args.files,
           "raw_bytes": folder_bytes(raw), "saved_bytes": folder_bytes(saved),
           "prepare_and_save_seconds": round(prepare_seconds, 6),
           "prepared_seconds": prepared["seconds"], "repeat": args.repeat,
           "dtri_args": extra}
    return to_schema("saved-graph", own)


def units(checkpoint: Path) -> int:
    return len(list(checkpoint.glob("count-*/*.json")))


def resume_line(args: argparse.Namespace, extra: list[str], work: Path) -> dict[str, Any]:
    base = [*DTRI, "count", "--generate", args.graph, "--json", *extra]
    plain_seconds, plain = timed(base)
    full_seconds, full = timed([*base, "--checkpoint", str(work / "full")])
    total = units(work / "full")
    checkpoint = work / "killed"
    join_seconds = full["seconds"].get("wedges_join", 0.0)
    run = subprocess.Popen([*base, "--checkpoint", str(checkpoint)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    started = time.perf_counter()
    while not (checkpoint / "prepared" / "dtri-graph.json").exists() and run.poll() is None:
        time.sleep(0.005)
    join_began = time.perf_counter()
    while time.perf_counter() - join_began < args.kill_at * join_seconds \
            and run.poll() is None:
        time.sleep(0.005)
    killed_after = time.perf_counter() - started
    if run.poll() is None:
        os.kill(run.pid, signal.SIGKILL)
    run.wait()
    done_units = units(checkpoint)
    rerun_seconds, rerun = timed([*base, "--checkpoint", str(checkpoint)])
    saved = sum(stage["seconds"] for stage in rerun.get("resumed", {}).values())
    own = {"graph": args.graph, "backend": rerun["backend"], "command": command_line(),
           "seconds": round(rerun_seconds, 6), "stage_seconds": rerun["seconds"],
           "triangles": rerun["triangles"],
           "peers": {"full": {"seconds": round(full_seconds, 6),
                              "triangles": full["triangles"],
                              "agrees": full["triangles"] == rerun["triangles"],
                              "stage_seconds": full["seconds"]},
                     "no-checkpoint": {"seconds": round(plain_seconds, 6),
                                       "triangles": plain["triangles"],
                                       "agrees": plain["triangles"] == rerun["triangles"]}},
           "measure": "resume", "ratio": round(rerun_seconds / full_seconds, 4),
           "killed": run.returncode == -signal.SIGKILL,
           "killed_after_seconds": round(killed_after, 6),
           "units_done_at_kill": done_units, "units": total, "kill_at": args.kill_at,
           "resumed": rerun.get("resumed", {}), "reported_saved_seconds": round(saved, 6),
           "dtri_args": extra}
    return to_schema("saved-graph", own)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("measure", choices=("count", "resume"))
    parser.add_argument("graph", help="a generator spec, e.g. rmat:18")
    parser.add_argument("--files", type=int, default=4, help="count: Parquet files written")
    parser.add_argument("--repeat", type=int, default=1, help="count: runs of each, best")
    parser.add_argument("--kill-at", type=float, default=0.5,
                        help="resume: the kill comes this share of the full run's join "
                             "seconds after the prepared graph is saved (the join begins)")
    parser.add_argument("--dtri-args", default="",
                        help="options given to every dtri command, e.g. '--backend gpu'")
    parser.add_argument("--out", help="also append each line to this file")
    args = parser.parse_args(argv)
    extra = shlex.split(args.dtri_args)
    with tempfile.TemporaryDirectory(prefix="dtri-saved-") as folder:
        line = (count_line if args.measure == "count" else resume_line)(
            args, extra, Path(folder))
    emit(line, args.out)


if __name__ == "__main__":
    main()

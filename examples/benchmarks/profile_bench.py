"""``dtri profile`` against ``dtri truss`` on the same graph, each in its own process.

Usage::

    python examples/benchmarks/profile_bench.py rmat:20 [--backend cpu] [--repeat 1] \\
        [--dtri-args "--workers 2"] [--out FILE]

First both commands run once on R-MAT 10, untimed, so that numba's cache holds the kernels
either command compiles and neither arm pays for it. Then, ``--repeat`` times, ``dtri truss
--generate SPEC --json --top 0`` and ``dtri profile --generate SPEC -o DIR --json`` run one
after the other, each in a new process. One line per pair: ``seconds`` is the profile's wall
time, ``peers.dtri-truss`` the truss command's, and ``detail.ratio`` profile over truss (the
issue's target: at most 2). ``detail`` also holds each command's own ``seconds`` by stage, the
profile's ``client_peak_bytes`` (the peak resident memory of the ``dtri`` process, as it
reports it), each process's peak resident memory as the kernel reports it to this script
(``wait4``: the process and those of its children it waited for), the size of the page and
its data, ``/proc/loadavg`` before and after (the machine may be shared), and whether the
two commands agree on the largest truss number and the edges per truss number.

Each line is in the schema of ``schema.py`` (family ``profile``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # schema.py beside this file
from schema import command_line, emit, to_schema

DTRI = [sys.executable, "-m", "dtri"]


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def run(argv: list[str]) -> tuple[float, int, dict[str, Any]]:
    """Wall seconds of a dtri command in a new process, its peak resident bytes (``wait4``)
    and its ``--json`` object."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise SystemExit(f"{shlex.join(argv)} failed: {err.read().strip()[-2000:]}")
        return seconds, usage.ru_maxrss * 1024, json.loads(out.read())


def folder_bytes(path: Path) -> dict[str, int]:
    return {f.name: f.stat().st_size for f in sorted(path.iterdir())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--dtri-args", default="", help="more options of both commands")
    parser.add_argument("--out")
    args = parser.parse_args()
    extra = ["--backend", args.backend, *shlex.split(args.dtri_args)]
    with tempfile.TemporaryDirectory() as tmp:
        for warm in ("truss", "profile"):  # numba's cache filled, untimed
            page = ["-o", f"{tmp}/warm"] if warm == "profile" else ["--top", "0"]
            run([*DTRI, warm, "--generate", "rmat:10", *extra, "--json", *page])
        for r in range(args.repeat):
            before = loadavg()
            truss = [*DTRI, "truss", "--generate", args.spec, *extra, "--json", "--top", "0"]
            truss_seconds, truss_rss, truss_json = run(truss)
            out = Path(tmp) / f"page-{r}"
            profile = [*DTRI, "profile", "--generate", args.spec, *extra, "-o", str(out),
                       "--json"]
            profile_seconds, profile_rss, profile_json = run(profile)
            data = json.loads((out / "profile.json").read_text())
            per_truss = {str(row["k"]): row["edges"] for row in data["tables"]["truss"]
                         if row["edges"]}
            own = {
                "graph": args.spec, "backend": args.backend, "command": command_line(),
                "seconds": round(profile_seconds, 3),
                "stage_seconds": profile_json["seconds"],
                "triangles": profile_json["triangles"],
                "peers": {"dtri-truss": {"seconds": round(truss_seconds, 3),
                                         "command": shlex.join(truss[2:])}},
                "ratio": round(profile_seconds / truss_seconds, 3),
                "profile_command": shlex.join(profile[2:]),
                "truss_stage_seconds": truss_json["seconds"],
                "client_peak_bytes": profile_json["client_peak_bytes"],
                "profile_process_peak_bytes": profile_rss,
                "truss_process_peak_bytes": truss_rss,
                "page_bytes": folder_bytes(out),
                "vertices": profile_json["vertices"], "edges": profile_json["edges"],
                "max_truss": profile_json["max_truss"],
                "truss_agrees": truss_json["max_truss"] == profile_json["max_truss"]
                and {str(k): v for k, v in truss_json["edges_per_truss"].items()} == per_truss,
                "loadavg_before": before, "loadavg_after": loadavg(),
                "cpus": os.cpu_count(),
            }
            emit(to_schema("profile", own), args.out)


if __name__ == "__main__":
    main()

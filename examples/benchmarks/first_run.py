"""A machine's first count against its second (issue 69): numba compiles dtri's CPU kernels on
first use and caches them on disk, so a new user's first big run pays the compile.

    python examples/benchmarks/first_run.py rmat:18 --baseline cff943c --repeat 3

Each arm runs ``dtri count --generate SPEC --backend cpu --json`` in a fresh process twice:
first with an empty numba cache of its own (``NUMBA_CACHE_DIR``, a new temporary folder, as
in a fresh install), then again with the cache that run filled. Arms: ``dtri`` (this tree)
and, with ``--baseline COMMIT``, that commit's tree (a git worktree, run from there, with a
cache of its own). Wall seconds of each command from outside, the median of ``--repeat``
fresh caches; the count's own ``compile`` seconds beside them. One line per graph, in the
schema of ``schema.py``: ``seconds`` is this tree's first run, ``peers`` its second run and
the baseline's two.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scale_out import worktree
from schema import ROOT, command_line, emit, to_schema

FAMILY = "first-run"


def timed(tree: Path, spec: str, cache: str) -> tuple[float, dict[str, Any]]:
    """Wall seconds of one ``dtri count`` from ``tree`` with numba's cache in ``cache``, and
    its JSON result."""
    environ = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dtri", "count", "--generate", spec,
                           "--backend", "cpu", "--json"], cwd=tree, env=environ,
                          capture_output=True, text=True, check=True)
    return time.perf_counter() - started, json.loads(done.stdout)


def arm(tree: Path, spec: str, repeat: int) -> dict[str, Any]:
    """Median first and second runs over ``repeat`` fresh caches."""
    firsts, seconds, compiles, triangles = [], [], [], set()
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="dtri-numba-") as cache:
            for runs, compiled in ((firsts, True), (seconds, False)):
                wall, result = timed(tree, spec, cache)
                runs.append(wall)
                triangles.add(result["triangles"])
                if compiled:
                    compiles.append(result["seconds"].get("compile", 0.0))
    (count,) = triangles  # every run the same count
    return {"first": round(statistics.median(firsts), 3),
            "second": round(statistics.median(seconds), 3),
            "compile_first": round(statistics.median(compiles), 3), "triangles": count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="+", help="generated graph specs, e.g. rmat:18")
    parser.add_argument("--baseline", help="a commit to run beside this tree")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", help="where the baseline's worktree goes")
    parser.add_argument("--out")
    args = parser.parse_args()
    folder = Path(args.folder or tempfile.mkdtemp(prefix="dtri-first-run-"))
    base = worktree(args.baseline, folder) if args.baseline else None
    for spec in args.graphs:
        own = arm(ROOT, spec, args.repeat)
        peers: dict[str, Any] = {"second": {"seconds": own["second"]}}
        if base is not None:
            other = arm(base, spec, args.repeat)
            assert other["triangles"] == own["triangles"], (other, own)
            peers[f"{args.baseline}-first"] = {"seconds": other["first"],
                                               "compile": other["compile_first"]}
            peers[f"{args.baseline}-second"] = {"seconds": other["second"]}
        line = {"graph": spec, "backend": "cpu", "seconds": own["first"],
                "triangles": own["triangles"], "peers": peers,
                "first_over_second": round(own["first"] / own["second"], 3),
                "compile_first": own["compile_first"], "repeat": args.repeat}
        emit(to_schema(FAMILY, line, command=command_line()), args.out)


if __name__ == "__main__":
    main()

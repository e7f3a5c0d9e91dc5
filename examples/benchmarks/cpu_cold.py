"""Cold start and peak memory of dtri on the CPU, as a new user meets it (issue 17).

Each command runs in a fresh process, timed from outside (wall seconds, best of ``--repeat``)
with its peak resident memory (``ru_maxrss`` of that process alone): ``import dtri``, the
unguarded two-line script, ``dtri count`` on karate and on the shared SNAP graphs, and
``dtri count --generate rmat:SCALE`` against a NetworKit process that generates the same
R-MAT edges, builds its graph and counts (its whole-process peak). Prints one JSON line per
command, in the schema of ``schema.py`` (family ``cold-start``: NetworKit's process is the
peer of ``dtri count --generate``).

    python examples/benchmarks/cpu_cold.py --shared ../shared/data > cpu-cold.jsonl
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from schema import emit as emit_line
from schema import to_schema

ROOT = Path(__file__).resolve().parents[2]
MEASURE = """
import json, resource, subprocess, sys, time
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
seconds = time.perf_counter() - started
print(json.dumps({"rc": done.returncode, "seconds": seconds, "stdout": done.stdout[-400:],
                  "stderr": done.stderr[-400:],
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
                  * 1024}))
"""
NETWORKIT_RMAT = """
import sys
import networkit
import numpy as np
from dtri.input.generate import rmat_arrays
scale = int(sys.argv[1])
src, dst = rmat_arrays(np, 0, 16 << scale, scale, 0.57, 0.19, 0.19, 0)
low, high = np.minimum(src, dst), np.maximum(src, dst)
keys = np.unique((low << 32 | high)[low != high])
del src, dst, low, high
graph = networkit.graph.Graph(1 << scale)
graph.addEdges(((keys >> 32).astype(np.uint64), (keys & 0xFFFFFFFF).astype(np.uint64)))
del keys
graph.indexEdges()
score = networkit.sparsification.TriangleEdgeScore(graph)
score.run()
print(int(sum(score.scores())) // 3)
"""


def measure(command: list[str], repeat: int) -> dict:
    """Best wall time of ``repeat`` fresh runs of ``command``, with the peak memory of the
    fastest."""
    best = None
    for _ in range(repeat):
        run = json.loads(subprocess.run([sys.executable, "-c", MEASURE, *command],
                                        capture_output=True, text=True, check=True).stdout)
        if run["rc"] != 0:
            raise SystemExit(f"{command} failed: {run['stderr']}")
        if best is None or run["seconds"] < best["seconds"]:
            best = run
    best["seconds"] = round(best["seconds"], 4)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scale", type=int, default=18)
    args = parser.parse_args()
    dtri = str(Path(sys.executable).with_name("dtri"))
    machine = {"device": platform.processor() or platform.machine(),
               "cpus": len(__import__("os").sched_getaffinity(0))}

    def emit(name: str, command: list[str], repeat: int, **extra: object) -> dict:
        run = measure(command, repeat)
        record = {"name": name, "command": " ".join(command[-3:]) if command[0] == sys.executable
                  else " ".join(Path(c).name if c == dtri else c for c in command),
                  "seconds": run["seconds"], "peak_rss_bytes": run["peak_rss_bytes"],
                  "output": run["stdout"].strip().splitlines()[:1], **machine, **extra}
        emit_line(to_schema("cold-start", record), None)
        return record

    emit("import dtri", [sys.executable, "-c", "import dtri"], args.repeat)
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "first.py"
        karate = str(ROOT / "examples" / "karate.txt")
        script.write_text(f"import dtri\nprint(dtri.count_triangles({karate!r}))\n")
        emit("unguarded two-line script", [sys.executable, str(script)], args.repeat)
    emit("dtri count karate", [dtri, "count", str(ROOT / "examples" / "karate.txt")], args.repeat)
    for path in sorted(args.shared.glob("*.txt.gz")):
        emit(f"dtri count {path.name}", [dtri, "count", str(path)], args.repeat)
    ours = emit(f"dtri count rmat:{args.scale}",
                [dtri, "count", "--generate", f"rmat:{args.scale}"], 1)
    theirs = emit(f"networkit rmat:{args.scale} (whole process)",
                  [sys.executable, "-c", NETWORKIT_RMAT, str(args.scale)], 1)
    emit_line(to_schema("cold-start", {"name": f"peak memory ratio rmat:{args.scale}",
                                       "dtri_over_networkit": round(ours["peak_rss_bytes"]
                                                                    / theirs["peak_rss_bytes"],
                                                                    3)},
                        device=machine["device"]), None)


if __name__ == "__main__":
    main()

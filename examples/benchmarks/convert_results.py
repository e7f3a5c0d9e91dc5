"""One-off: the results made before the one schema, rewritten in it (issue 30). Kept so that the
mapping can be reviewed and run again.

    python examples/benchmarks/convert_results.py --rev 93995e9          # into results/
    python examples/benchmarks/convert_results.py --rev 93995e9 --check  # compare with results/

A converted file goes where its results file is now: ``results/archive/`` for one archived
since (superseded: INDEX.md says which), else ``results/``.

Each old file ``NAME.jsonl`` (or ``.json``, or ``transfer-probe-h200x4.txt``), read from the
folder ``--source`` or from the commit ``--rev`` (the last one that has them), becomes
``results/NAME.jsonl``, line for line, by the family of :mod:`schema` that its script writes
now: keys named like a field become that field, a few move (see ``schema.FAMILIES``), the rest
goes to ``detail`` under its own name. Where an old line lacks a field that
``README.md`` states for its file (the command that made it, the device, the commit), that
value is filled in and named in ``detail.filled_from_readme``. Every line is checked: each key
and value of the old line is in the new one, at its own path in ``detail`` or in a field.
``capped-rmat24-h200.txt`` is a log, not measurements: it moves as it is.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from schema import FAMILIES, FIELDS, complete, lookup, transfer_lines

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
LOGS = ("capped-rmat24-h200.txt",)
"""Moved to ``results/`` as they are."""

Fill = str | Callable[[dict[str, Any], int], str | None]
H200 = "NVIDIA H200"
SHARED = "../shared/data/"
BENCH = "python -m dtri bench"


def per_line(*commands: str) -> Fill:
    """The command of each line, in order."""
    return lambda own, index: commands[index]


def bench_cpu(*extra: str) -> str:
    return f"{BENCH} --backend cpu --peers none --repeat 2 rmat:18{''.join(extra)} --output OUT"


def scaling(own: dict[str, Any], index: int) -> str:
    """``scaling-gpu.sh``'s command for the line's workers and graph."""
    pool = " --rmm-pool-size 100GiB" if "--rmm-pool-size 100GiB" in own.get("note", "") else ""
    return (f"{BENCH} --backend gpu --workers {own['workers']} --peers none --repeat 2 "
            f"{own['graph']}{pool} --output OUT")


def stage_profile(arguments: dict[str, str]) -> Fill:
    """``stage_profile.py``'s arguments by the line's commit."""
    return lambda own, index: ("python examples/benchmarks/stage_profile.py "
                               + arguments[own["commit"]])


def graphlets_gpu(own: dict[str, Any], index: int) -> str:
    """The line's command of ``graphlets_gpu.sh``."""
    extra = {"all": "", "sigma0-4": " --orbits sigma0-4"}[own["orbits"]]
    if own.get("rmm_pool_size"):
        extra += f" --rmm-pool-size {own['rmm_pool_size']}"
    repeat = 3 if own["graph"] == "rmat:18" else 1
    return (f"python examples/benchmarks/graphlets_bench.py --backend gpu --no-peer "
            f"{own['graph']} --repeat {repeat}{extra}")


def budget(own: dict[str, Any], index: int) -> str:
    """``rmat26-budgets-h200.jsonl``: the budget given, or the default with pylibcugraph."""
    given = own["runs"][0]["memory_budget"]
    base = ("python examples/benchmarks/orientation_bench.py rmat:26 --orientations degree "
            "--orders rank --repeat 2")
    if given == 37527470080:  # a quarter of the H200's memory: none given
        return base
    return f"{base} --memory-budget {given >> 30}GiB --peer none"


ORIENTATION_26 = ("python examples/benchmarks/orientation_bench.py rmat:26 --repeat 2 --peer none "
                  "--orientations degree --orders rank")
GRAPHLETS_CPU = ("python examples/benchmarks/graphlets_bench.py rmat:16 " + " ".join(
    f"{SHARED}{name}.txt.gz" for name in ("facebook_combined", "email-Eu-core", "wiki-Vote",
                                          "p2p-Gnutella24", "ca-HepTh", "ca-CondMat", "ca-GrQc"))
                 + " --cold --repeat 3")

SOURCES: dict[str, tuple[str, dict[str, Fill]]] = {
    "analytics-rmat18-cpu-2core.jsonl": ("analytics", {
        "command": "python examples/benchmarks/analytics_bench.py rmat:18 --backend cpu "
                   "--workers 2 --repeat 3"}),
    "analytics-rmat24-h200.jsonl": ("analytics", {
        "command": "python examples/benchmarks/analytics_bench.py rmat:24 --backend gpu "
                   "--repeat 3"}),
    "bench-cpu-2core.jsonl": ("bench", {
        "command": f"{BENCH} --backend cpu --repeat 3 --peers networkit,networkx rmat:16 "
                   f"{SHARED}wiki-Vote.txt.gz {SHARED}ca-CondMat.txt.gz --output OUT"}),
    "bench-cpu-capped.jsonl": ("bench", {"command": per_line(bench_cpu(), bench_cpu(
        " --memory-limit 15MB --memory-budget 15MB --spill-directory /tmp/dtri-spill"))}),
    "bench-cpu-in-process.jsonl": ("bench", {
        "commit": "ae3ee44",
        "command": f"{BENCH} --backend cpu --repeat 3 --output OUT {SHARED}facebook_combined"
                   f".txt.gz {SHARED}wiki-Vote.txt.gz {SHARED}ca-CondMat.txt.gz rmat:16 "
                   "rmat:18"}),
    "bench-gpu-h200-a9e1761.jsonl": ("bench", {
        "commit": "a9e1761",
        "command": f"{BENCH} --backend gpu --repeat 3 --peers pylibcugraph rmat:22 rmat:24 "
                   "--output OUT"}),
    "bench-gpu-h200.jsonl": ("bench", {
        "command": lambda own, index: (
            f"{BENCH} --backend gpu --repeat 3 rmat:20 rmat:22 rmat:24 --output OUT"
            if own["graph"].startswith("rmat:") else
            f"{BENCH} --backend gpu --repeat 3 /tmp/dtri-bench/rmat22.parquet "
            "/tmp/dtri-bench/rmat24.parquet --output OUT")}),
    "capped-rmat26-h200.jsonl": ("count", {"backend": "gpu"}),
    "copy-probe-h200.jsonl": ("copy-probe", {
        "device": H200, "command": "python examples/benchmarks/copy_probe.py"}),
    "cpu-cold-2core.jsonl": ("cold-start", {"commit": "ae3ee44"}),
    "cpu-hash-2core.jsonl": ("cpu-hash", {
        "commit": "b99e3b8",
        "command": f"python examples/benchmarks/cpu_hash_bench.py rmat:16 rmat:18 "
                   f"{SHARED}facebook_combined.txt.gz {SHARED}ca-CondMat.txt.gz --repeat 3"}),
    "estimates-cpu-2core.jsonl": ("schema", {}),
    "estimates-h100.jsonl": ("schema", {}),
    "graphlets-cpu-2core.jsonl": ("graphlets", {
        "commit": "9552af4", "device": "AMD EPYC, 2 cores", "command": GRAPHLETS_CPU}),
    "graphlets-gpu-h200.jsonl": ("graphlets", {"device": H200, "command": graphlets_gpu}),
    "graphlets-rmat18-cpu-2core.jsonl": ("graphlets", {
        "command": "python examples/benchmarks/graphlets_bench.py rmat:18 --repeat 1 "
                   "--no-peer"}),
    "gzip-read-cpu.jsonl": ("schema", {}),
    "in-process-h100.jsonl": ("schema", {}),
    "in-process-regression-h100.jsonl": ("regression", {
        "command": "python examples/benchmarks/orientation_bench.py rmat:22 rmat:24 "
                   "--orientations degree --orders rank --repeat 3 --peer none"}),
    "intersect-balance-h200.jsonl": ("intersect-balance", {
        "device": H200, "graph": "rmat:25",
        "command": "python examples/benchmarks/intersect_balance.py 25"}),
    "issue2-largest-shared-h200.jsonl": ("count", {
        "device": lambda own, index: H200 if own["backend"] == "gpu"
        else "the H200 host's CPU, 16 cores",
        "command": lambda own, index: (f"python -m dtri count --json --backend "
                                       f"{own['backend']} {own['paths'][0]}")}),
    "kernel-probe-h200.jsonl": ("kernel-probe", {
        "device": H200, "commit": "b8b7e36",
        "command": "python examples/benchmarks/kernel_probe.py rmat:24 --repeat 2 "
                   "--tunings 2"}),
    "kernel-tuning-h200.jsonl": ("kernel-probe", {
        "device": H200,
        "command": "python examples/benchmarks/kernel_probe.py rmat:20 rmat:24 --repeat 2"}),
    "ktruss-rmat22-h200.jsonl": ("analytics", {
        "command": "python examples/benchmarks/analytics_bench.py rmat:22 --backend gpu "
                   "--repeat 2 --k 3 8 32"}),
    "local-gpu-h200x2-ca-CondMat.json": ("count", {
        "device": H200,
        "command": lambda own, index: f"DTRI_ARGS=--json bash cluster/local-gpu.sh "
                                      f"{own['paths'][0]}"}),
    "local-gpu-h200x2-karate.json": ("count", {
        "device": H200,
        "command": lambda own, index: f"DTRI_ARGS=--json bash cluster/local-gpu.sh "
                                      f"{own['paths'][0]}"}),
    "nx-backend-rmat18-cpu-2core.jsonl": ("nx-backend", {
        "command": "python examples/benchmarks/nx_backend_bench.py rmat:18"}),
    "nx-backend-rmat18-h200.jsonl": ("nx-backend", {
        "device": H200,
        "command": "python examples/benchmarks/nx_backend_bench.py rmat:18 --backend gpu "
                   "--nx-repeat 0"}),
    "orientation-order-h200.jsonl": ("orientation", {
        "command": lambda own, index: ORIENTATION_26 if own["graph"] == "rmat:26" else
        "python examples/benchmarks/orientation_bench.py rmat:22 rmat:24 .shared-data/*.txt.gz "
        "--repeat 2"}),
    "out-of-core-h100.jsonl": ("schema", {}),
    "out-of-core-h200.jsonl": ("schema", {}),
    "rmat26-budgets-h200.jsonl": ("orientation", {"command": budget}),
    "scaling-gpu-h200x2.jsonl": ("bench", {"command": scaling}),
    "scaling-gpu-h200x4.jsonl": ("bench", {"command": scaling}),
    "stage-profile-h200x2.jsonl": ("stage-profile", {
        "device": H200, "command": stage_profile({"7f5e866": "rmat:25 1 2",
                                                  "d9da77b": "rmat:25 2",
                                                  "6325b27": "rmat:25 2"})}),
    "stage-profile-h200x4.jsonl": ("stage-profile", {
        "device": H200, "command": stage_profile({"ee15829": "rmat:25 1 4",
                                                  "001713b": "rmat:26 1 4",
                                                  "c8c9e0d": "rmat:26 1 4"})}),
    "staged-pinned-h200.jsonl": ("staged-count", {}),
    "staged-rmat26-h200.jsonl": ("staged-count", {}),
    "staged-triangles-h200.jsonl": ("staged-triangles", {}),
    "transfer-probe-h200x4.txt": ("transfer-probe", {
        "device": H200, "command": "python examples/benchmarks/transfer_probe.py"}),
    "verify-shared-cpu.jsonl": ("verify-shared", {
        "command": "python examples/benchmarks/verify_shared.py"}),
}
"""Each old file: the family of its lines and what README.md states for it."""


def family_of(family: str, own: dict[str, Any]) -> str:
    """``in-process-regression-h100.jsonl`` holds orientation lines and lines in the schema."""
    if family == "regression":
        return "schema" if "benchmark" in own else "orientation"
    return family


def converted(family: str, own: dict[str, Any], fill: dict[str, Fill],
              index: int) -> dict[str, Any]:
    """One old line in the schema, the README's values where the line has none."""
    fields = FAMILIES[family_of(family, own)](own)
    filled = []
    for key, value in fill.items():
        value = value(own, index) if callable(value) else value
        if key not in fields and value is not None:
            if family == "regression" and "benchmark" in own:
                continue  # written in the schema already
            fields[key] = value
            filled.append(key)
    if filled:
        fields["detail"]["filled_from_readme"] = filled
    return complete(fields)


def leaves(data: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """Every (path, value) at the ends of nested dicts (lists are values)."""
    if isinstance(data, dict) and data:
        return [leaf for key, value in data.items() for leaf in leaves(value, (*path, key))]
    return [(path, data)]


def check_kept(own: dict[str, Any], line: dict[str, Any]) -> None:
    """Every key and value of ``own`` is in ``line``: at its path in ``detail``, or moved into
    a field (itself, or within the field's value)."""
    assert tuple(line) == FIELDS, line
    fields = [value for key, value in line.items() if key != "detail"]
    moved = [leaf for value in fields for _, leaf in leaves(value)] + fields
    for path, value in leaves(own):
        if path and lookup(line["detail"], path) == (True, value):
            continue
        if own.get("detail") is not None and lookup(own, path) == lookup(line, path):
            continue  # a line in the schema already
        assert any(value == candidate for candidate in moved), (path, value, line)


def read_source(name: str, source: Path | None, rev: str | None) -> str:
    if rev is not None:
        return subprocess.run(["git", "show", f"{rev}:examples/benchmarks/{name}"], cwd=HERE,
                              capture_output=True, text=True, check=True).stdout
    assert source is not None
    return (source / name).read_text()


def convert(name: str, text: str) -> list[dict[str, Any]]:
    """The lines of one old file in the schema, each checked against its old line."""
    family, fill = SOURCES[name]
    if name.endswith(".txt"):
        owns = transfer_lines(text)
        assert "\n".join(own["line"] for own in owns) + "\n" == text
    elif name.endswith(".json"):
        owns = [json.loads(text)]
    else:
        owns = [json.loads(row) for row in text.splitlines() if row.strip()]
        assert len(owns) == len(text.splitlines()), f"{name}: blank lines"
    lines = [converted(family, own, fill, index) for index, own in enumerate(owns)]
    for own, line in zip(owns, lines, strict=True):
        check_kept(own, line)
    return lines


def home(name: str) -> Path:
    """Where the results file ``name`` is now: ``results/archive/`` once archived, else
    ``results/``."""
    archived = RESULTS / "archive" / name
    return archived if archived.exists() else RESULTS / name


def write_all(target: Path, source: Path | None, rev: str | None) -> None:
    target.mkdir(exist_ok=True)
    for name in SOURCES:
        lines = convert(name, read_source(name, source, rev))
        with open(target / f"{name.rsplit('.', 1)[0]}.jsonl", "w") as handle:
            handle.writelines(json.dumps(line) + "\n" for line in lines)
    for name in LOGS:
        (target / name).write_text(read_source(name, source, rev))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, help="the folder of the old files")
    parser.add_argument("--rev", help="read the old files from this commit instead")
    parser.add_argument("--check", action="store_true",
                        help="write to a temporary folder and compare with results/")
    args = parser.parse_args()
    if (args.source is None) == (args.rev is None):
        parser.error("give --source or --rev")
    with tempfile.TemporaryDirectory() as folder:
        write_all(Path(folder), args.source, args.rev)
        if not args.check:
            for path in sorted(Path(folder).iterdir()):
                home(path.name).write_bytes(path.read_bytes())
            return
        differ = [path.name for path in sorted(Path(folder).iterdir())
                  if not home(path.name).exists()
                  or home(path.name).read_bytes() != path.read_bytes()]
    print("results/ differs in: " + ", ".join(differ) if differ else "results/ is as converted")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()

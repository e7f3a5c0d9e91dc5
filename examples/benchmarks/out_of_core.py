"""Out-of-core runs on one GPU: counts under RMM pools of several sizes, from generated graphs
and from Parquet files, each in a fresh ``dtri`` process, with pylibcugraph as a peer.

    python examples/benchmarks/out_of_core.py write rmat:26 /tmp/rmat26 --files 4
    python examples/benchmarks/out_of_core.py write rmat:26 /tmp/rmat26txt --files 16 --text
    python examples/benchmarks/out_of_core.py run --out FILE.jsonl --graph rmat:26 \\
        /tmp/rmat26 /tmp/rmat26@4GiB rmat:26@2GiB rmat:28@16GiB rmat:24+triangles
    python examples/benchmarks/out_of_core.py peer rmat:26 --out FILE.jsonl

``write`` generates a graph on the GPU and writes it as Parquet with cuDF's defaults (row
groups of a million rows), one file per part, ``--int32`` for int32 ids, ``--text`` one SNAP
text file written part by part instead. A run is ``INPUT``
(a generator spec or a path), ``@POOL`` an RMM pool (``--rmm-pool-size``), ``:BUDGET`` a
``--memory-budget``, ``+triangles`` the per-vertex command instead of the count (its sum / 3
is the count). Each run prints and appends one JSON line in the schema of ``schema.py``:
``benchmark``, ``graph``, ``device``, ``backend``, ``commit``, ``command``, ``seconds`` (wall,
the whole command), ``stage_seconds``, ``triangles``, ``peers`` and in ``detail`` the rest of
:data:`FIELDS`: ``analytic``, ``input_files``, ``rmm_pool_size``, ``memory_budget``,
``peak_device_bytes``, ``task_device_bytes``, ``host_tasks`` (tasks that ran out of device
memory and went on on the host), ``vertex_sum``, ``edges``, ``partitions``, ``staging``,
``rc`` and ``error`` (its last stderr line), ``note``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from schema import commit, emit, to_schema  # this folder's one schema

BENCHMARK = "out-of-core"
FIELDS = ("benchmark", "graph", "device", "backend", "commit", "command", "analytic",
          "input_files", "rmm_pool_size", "memory_budget", "seconds", "stage_seconds",
          "peak_device_bytes", "task_device_bytes", "host_tasks", "triangles", "vertex_sum",
          "edges", "partitions", "staging", "rc", "error", "peers", "note")
"""Every run's keys, in this order (``None`` where a run has no value); those that are not
fields of the schema go to its ``detail``."""


def record(**values: Any) -> dict[str, Any]:
    """One benchmark line: the :data:`FIELDS`, with ``values`` and the run's machine, in the
    schema."""
    unknown = set(values) - set(FIELDS)
    if unknown:
        raise ValueError(f"not a field of the benchmark's lines: {sorted(unknown)}")
    base = {"benchmark": BENCHMARK, "device": device(), "backend": "gpu", "commit": commit()}
    return to_schema("schema", {key: values.get(key, base.get(key)) for key in FIELDS})


def device() -> str:
    from dtri.bench import gpu_name

    return gpu_name()


def write(spec: str, directory: str, files: int, int32: bool, text: bool = False) -> None:
    """The graph ``spec`` as ``files`` Parquet files written by cuDF, generated on the GPU;
    ``text``: as one SNAP text file (``edges.txt``) written in ``files`` pieces."""
    import cudf
    import cupy

    from dtri.input.generate import generated

    graph = generated(spec)
    maker = graph.maker("gpu")
    Path(directory).mkdir(parents=True, exist_ok=False)
    started = time.perf_counter()
    for k, bounds in enumerate(graph.ranges(files)):
        src, dst = maker.arrays(bounds)
        dtype = cupy.int32 if int32 else cupy.int64
        frame = cudf.DataFrame({"src": src.astype(dtype), "dst": dst.astype(dtype)})
        del src, dst
        if text:
            with open(f"{directory}/edges.txt", "ab") as handle:
                frame.to_csv(handle, sep=" ", header=False, index=False)
        else:
            frame.to_parquet(f"{directory}/part-{k:05d}.parquet", index=False)
        del frame
    print(json.dumps({"wrote": spec, "directory": directory, "files": 1 if text else files,
                      "rows": graph.edges, "int32": int32,
                      "seconds": round(time.perf_counter() - started, 3),
                      "bytes": sum(p.stat().st_size for p in Path(directory).iterdir())}),
          flush=True)


def parse_run(run: str) -> dict[str, Any]:
    """``INPUT[@POOL[:BUDGET]][+triangles]``."""
    command = "count"
    if run.endswith("+triangles"):
        run, command = run[: -len("+triangles")], "triangles"
    source, _, memory = run.partition("@")
    pool, _, budget = memory.partition(":")
    return {"input": source, "pool": pool or None, "budget": budget or None,
            "command": command}


def input_files(source: str) -> int | None:
    path = Path(source)
    if path.is_dir():
        return sum(1 for p in path.iterdir() if p.is_file() and not p.name.startswith((".", "_")))
    return 1 if path.exists() else None


def run_one(run: dict[str, Any], timeout: int, extra: list[str]) -> dict[str, Any]:
    from dtri.input.generate import is_spec

    source = ["--generate", run["input"]] if is_spec(run["input"]) else [run["input"]]
    args = [sys.executable, "-m", "dtri", run["command"], *source, "--backend", "gpu",
            "--json", *extra]
    if run["pool"]:
        args += ["--rmm-pool-size", run["pool"]]
    if run["budget"]:
        args += ["--memory-budget", run["budget"]]
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as errors:  # stage names and bars (--progress), errors
        try:
            done = subprocess.run([*args, "--progress"], stdout=subprocess.PIPE,
                                  stderr=errors, text=True, timeout=timeout)
            rc, stdout = done.returncode, done.stdout
        except subprocess.TimeoutExpired as expired:
            rc, stdout = 124, (expired.stdout or b"").decode() if isinstance(
                expired.stdout, bytes) else (expired.stdout or "")
        errors.seek(0)
        stderr = errors.read()
    wall = round(time.perf_counter() - started, 3)
    sys.stderr.write(stderr)
    if rc == 124:
        stderr += f"\ntimed out after {timeout} s"
    result: dict[str, Any] = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return record(
        graph=run["input"], command=" ".join(["dtri", *args[3:]]), analytic=run["command"],
        input_files=input_files(run["input"]), rmm_pool_size=run["pool"],
        memory_budget=result.get("memory_budget", run["budget"]), seconds=wall,
        stage_seconds=result.get("seconds"), peak_device_bytes=result.get("peak_device_bytes"),
        task_device_bytes=result.get("task_device_bytes"), host_tasks=result.get("host_tasks"),
        triangles=result.get("triangles"), vertex_sum=result.get("vertex_sum"),
        edges=result.get("edges"), partitions=result.get("partitions"),
        staging=(result.get("plan") or {}).get("staging"), rc=rc,
        error=lines[-1] if rc and lines else None, peers={})


def peer(spec: str) -> dict[str, Any]:
    """pylibcugraph's count of the generated graph ``spec`` (the same edges dtri reads)."""
    import cupy

    from dtri.bench import canonical_edges, run_peer
    from dtri.input.generate import generated

    graph = generated(spec)
    maker = graph.maker("gpu")
    src, dst = maker.arrays((0, graph.edges))
    edges = canonical_edges(src, dst)
    del src, dst
    cupy.get_default_memory_pool().free_all_blocks()
    report = run_peer("pylibcugraph", edges, 1)
    return record(graph=spec, command=f"out_of_core.py peer {spec}",
                  peers={"pylibcugraph": report})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="what", required=True)
    writing = commands.add_parser("write")
    writing.add_argument("spec")
    writing.add_argument("directory")
    writing.add_argument("--files", type=int, default=4)
    writing.add_argument("--int32", action="store_true")
    writing.add_argument("--text", action="store_true", help="one SNAP text file")
    running = commands.add_parser("run")
    running.add_argument("runs", nargs="+")
    running.add_argument("--out")
    running.add_argument("--timeout", type=int, default=480)
    running.add_argument("--extra", default="", help="more dtri options, one string")
    peering = commands.add_parser("peer")
    peering.add_argument("spec")
    peering.add_argument("--out")
    args = parser.parse_args()
    if args.what == "write":
        write(args.spec, args.directory, args.files, args.int32, args.text)
    elif args.what == "run":
        for run in args.runs:
            emit(run_one(parse_run(run), args.timeout, args.extra.split()), args.out)
    else:
        emit(peer(args.spec), args.out)


if __name__ == "__main__":
    main()

"""Host memory bounded: a count under ``--memory-limit`` against the same count without it,
each in a fresh ``dtri`` process, with each worker's measured peak resident memory.

    python examples/benchmarks/host_memory.py overhead --backend cpu --workers 2 [--out FILE]
    python examples/benchmarks/host_memory.py run rmat:22 --backend cpu --workers 2 \\
        --memory-limit 2GiB --repeat 2 [--out FILE]
    python examples/benchmarks/host_memory.py run rmat:28 --backend gpu --memory-limit 32GiB \\
        --repeat 1 --timeout 1800 -- --rmm-pool-size 16GiB

``overhead``: a local cluster of ``--workers`` workers (as dtri starts them; on the GPU with
``--rmm-pool-size`` after ``--`` if given) counts R-MAT 16 once, then each worker's resident
memory is read: what ``dtri.worker-overhead-cpu`` / ``-gpu`` (``dask.config``) must hold.
One line, ``seconds`` null, ``detail.idle_worker_bytes`` by worker.

``run``: ``--repeat`` times, the count without a host limit, then the same count with
``--memory-limit`` (and ``--spill-directory``, default a fresh temporary folder), the rest of
the arguments after ``--`` given to both. One JSON line per limited run, in the schema of
``schema.py`` (family ``host-memory``): ``seconds`` is its wall time (the whole command),
``stage_seconds`` dtri's, ``peers.unlimited`` the run without the limit just before it (its
seconds, triangles, ``agrees``, ``ratio`` = limited / unlimited, and its workers' peaks);
``detail`` holds the limit, each worker's measured peak resident memory
(``worker_host_bytes``, from the workers' host meters: ``dtri.runtime.host_meter``) and
``within_limit`` (every worker at or below the limit), the peaks per stage, the bytes spilled
to disk and read back, the limit's plan (``host_memory``), the device peaks, and the exit
status with the last line of stderr where a run failed. A run stopped at ``--timeout`` (or
failed) leaves no JSON: its ``stage_seconds`` are then those its progress lines gave
(``dtri: sort 49.94 s, ...``, summed where a stage ran in several steps), and
``detail.stage_seconds_from`` says which (``json``, ``progress`` or ``None``), for the peer
too. Each ``--config KEY=VALUE`` sets a ``dask.config`` key for both runs, through Dask's
environment variables (``--config dtri.read-ahead=false``); ``detail.config`` keeps them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # schema.py beside this file
from schema import command_line, emit, to_schema

FAMILY = "host-memory"
PROGRESS_LINE = re.compile(r"^dtri: (?P<stage>[a-z_]+) (?P<seconds>[0-9.]+) s\b", re.MULTILINE)
"""A stage's line of ``--progress`` (:meth:`dtri.runtime.timer.StageTimer._record`)."""


def progress_stages(stderr: str) -> dict[str, float]:
    """Each stage's seconds from a run's ``--progress`` lines, summed where a stage ran in
    several steps, as its JSON sums them; the progress bars' carriage returns are line
    ends here."""
    stages: dict[str, float] = {}
    for found in PROGRESS_LINE.finditer(stderr.replace("\r", "\n")):
        stage = found["stage"]
        stages[stage] = round(stages.get(stage, 0.0) + float(found["seconds"]), 2)
    return stages


def stage_seconds(run: dict[str, Any]) -> tuple[dict[str, float] | None, str | None]:
    """A run's stage seconds and where they come from: its JSON, else its progress lines."""
    if run["result"].get("seconds"):
        return run["result"]["seconds"], "json"
    return (run["progress"], "progress") if run["progress"] else (None, None)


def config_environ(settings: dict[str, str]) -> dict[str, str]:
    """This process's environment with each ``dask.config`` key of ``settings`` set as the
    environment variable that Dask reads (``dtri.read-ahead``: ``DASK_DTRI__READ_AHEAD``)."""
    environ = dict(os.environ)
    for key, value in settings.items():
        name = "__".join(part.replace("-", "_").upper() for part in key.split("."))
        environ[f"DASK_{name}"] = value
    return environ


def run_count(graph: str, backend: str, workers: int | None, limit: str | None,
              spill: str | None, extra: list[str], timeout: int,
              settings: dict[str, str] | None = None) -> dict[str, Any]:
    """One ``dtri count --json`` in a fresh process, with ``settings`` of ``dask.config``
    (:func:`config_environ`): its wall seconds, its JSON, its exit."""
    from dtri.input.generate import is_spec

    source = ["--generate", graph] if is_spec(graph) else [graph]
    args = ["count", *source, "--backend", backend, "--json", "--progress", *extra]
    if workers:
        args += ["--workers", str(workers)]
    if limit:
        args += ["--memory-limit", limit]
    if spill:
        args += ["--spill-directory", spill]
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as errors:  # the stages' lines and bars, errors
        try:
            done = subprocess.run([sys.executable, "-m", "dtri", *args], stdout=subprocess.PIPE,
                                  stderr=errors, text=True, timeout=timeout,
                                  env=config_environ(settings or {}))
            rc, stdout = done.returncode, done.stdout
        except subprocess.TimeoutExpired:
            rc, stdout = 124, ""
        errors.seek(0)
        stderr = errors.read()
    wall = round(time.perf_counter() - started, 3)
    sys.stderr.write(stderr)
    result: dict[str, Any] = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if rc == 124:
        lines.append(f"timed out after {timeout} s")
    return {"command": " ".join(["dtri", *args]), "seconds": wall, "result": result, "rc": rc,
            "error": lines[-1] if rc and lines else None, "progress": progress_stages(stderr)}


def limited_line(graph: str, backend: str, limit: str, limited: dict[str, Any],
                 unlimited: dict[str, Any], repeat: int,
                 settings: dict[str, str] | None = None) -> dict[str, Any]:
    """One line of the schema: the limited run, the unlimited one as its peer, run with
    ``settings`` of ``dask.config``."""
    from dask.utils import parse_bytes

    mine, theirs = limited["result"], unlimited["result"]
    workers = mine.get("worker_host_bytes") or {}
    stages, stages_from = stage_seconds(limited)
    peer_stages, peer_stages_from = stage_seconds(unlimited)
    peer = {"seconds": unlimited["seconds"], "triangles": theirs.get("triangles"),
            "agrees": theirs.get("triangles") is not None
            and theirs.get("triangles") == mine.get("triangles"),
            "ratio": round(limited["seconds"] / unlimited["seconds"], 3),
            "stage_seconds": peer_stages, "stage_seconds_from": peer_stages_from,
            "worker_host_bytes": theirs.get("worker_host_bytes"),
            "command": unlimited["command"], "rc": unlimited["rc"],
            "error": unlimited["error"]}
    own = {"graph": graph, "backend": backend, "command": limited["command"],
           "seconds": limited["seconds"], "stage_seconds": stages,
           "stage_seconds_from": stages_from,
           "triangles": mine.get("triangles"), "peers": {"unlimited": peer},
           "memory_limit": parse_bytes(limit), "worker_host_bytes": workers,
           "within_limit": bool(workers) and all(peak <= parse_bytes(limit)
                                                 for peak in workers.values()),
           "peak_host_bytes": mine.get("peak_host_bytes"),
           "spilled_bytes": mine.get("spilled_bytes"),
           "read_back_bytes": mine.get("read_back_bytes"),
           "host_memory": (mine.get("plan") or {}).get("host_memory"),
           "peak_device_bytes": mine.get("peak_device_bytes"),
           "caps": mine.get("caps"), "memory_budget": mine.get("memory_budget"),
           "partitions": mine.get("partitions"), "batches": mine.get("batches"),
           "edges": mine.get("edges"), "workers": mine.get("workers"),
           "rc": limited["rc"], "error": limited["error"], "repeat": repeat,
           "config": dict(settings or {})}
    return to_schema(FAMILY, own)


def idle_workers(backend: str, workers: int | None, extra: list[str]) -> dict[str, Any]:
    """Each worker's resident memory after a count of R-MAT 16 on a local cluster."""
    import psutil

    import dtri
    from dtri.input.generate import generated

    options: dict[str, Any] = {"backend": backend}
    if workers:
        options["workers"] = workers
    if "--rmm-pool-size" in extra:
        options["rmm_pool_size"] = extra[extra.index("--rmm-pool-size") + 1]
    with dtri.Session(**options) as session:
        runtime = session.open(input_rows=0)
        with session.prepare(generated("rmat:16", seed=0)) as graph:
            triangles = graph.count().triangles
        resident = runtime.client.run(lambda: psutil.Process().memory_info().rss)
    return {"graph": "rmat:16", "backend": backend, "triangles": triangles,
            "idle_worker_bytes": resident, "most_bytes": max(resident.values()),
            "workers": len(resident)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("run", "overhead"))
    parser.add_argument("graph", nargs="?", default="rmat:22")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--memory-limit", default="2GiB")
    parser.add_argument("--spill-directory", default=None)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--timeout", type=int, default=3600)
    parser.add_argument("--out", default=None)
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a dask.config setting for both runs, as dtri.read-ahead=false")
    words = sys.argv[1:]
    cut = words.index("--") if "--" in words else len(words)
    args = parser.parse_args(words[:cut])
    args.extra = words[cut + 1:]  # after --: more dtri count options, for every run
    settings = dict(setting.partition("=")[::2] for setting in args.config)
    if args.mode == "overhead":
        own = idle_workers(args.backend, args.workers, args.extra)
        emit(to_schema(FAMILY, own, command=command_line()), args.out)
        return
    with tempfile.TemporaryDirectory(prefix="dtri-host-memory-") as scratch:
        spill = args.spill_directory or str(Path(scratch) / "spill")
        for repeat in range(args.repeat):
            unlimited = run_count(args.graph, args.backend, args.workers, None, None,
                                  args.extra, args.timeout, settings)
            limited = run_count(args.graph, args.backend, args.workers, args.memory_limit,
                                spill, args.extra, args.timeout, settings)
            line = limited_line(args.graph, args.backend, args.memory_limit, limited,
                                unlimited, repeat, settings)
            line["command"] = f"{command_line()}  # {line['command']}"
            emit(line, args.out)


if __name__ == "__main__":
    main()

"""The one schema of every benchmark line, and how each script's own fields map into it.

Every line of ``results/*.jsonl`` and ``results/archive/*.jsonl``, and every line a script of
this folder writes, is one JSON object with exactly the keys of :data:`FIELDS`, in that order:

* ``benchmark``: the family of the line (:data:`BENCHMARKS` says what its ``seconds`` are);
* ``graph``: a generator spec (``rmat:24``) or a file (its name, or its path as given), or null;
* ``device``: the GPU's or the CPU's name, or null; ``backend``: ``cpu`` or ``gpu``, or null;
* ``commit``: the commit that ran (``DTRI_COMMIT`` where the host's ``.git`` is not the
  tree's), or null; ``command``: what ran (a command line or a call), or null;
* ``seconds``: the line's headline time, a number or null; ``stage_seconds``: dtri's seconds
  per stage (``{stage: seconds}``), or null; ``triangles``: the count, or null;
* ``peers``: ``{name: {"seconds", "triangles", "agrees", ...}}``, the other tools (or dtri
  with another setting) timed in the same run on the same edges;
* ``detail``: everything else the line holds, under its script's own names.

A script builds its own dict as it always did and hands it to :func:`to_schema` with the name
of its family: the keys named like a field become that field, the family's ``moves`` take others
(``"seconds": "wall_seconds"``; a dotted path into a nested dict or list is copied, a top-level
key is moved), and what is left goes to ``detail`` unchanged. ``convert_results.py`` maps the
results made before this schema by the same families, so old and new lines read alike.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIELDS = ("benchmark", "graph", "device", "backend", "commit", "command", "seconds",
          "stage_seconds", "triangles", "peers", "detail")
"""Every line's keys, in this order."""

ROOT = Path(__file__).resolve().parents[2]
"""The repository (commands are written relative to it)."""

BENCHMARKS = {
    "analytics": "`dtri.prepare` + per-vertex `triangles()`, best of `--repeat`",
    "bench": "`dtri bench`: `dtri.count` of the persisted edges (`dtri.in_memory_seconds`)",
    "cli-generate": "`dtri count --generate --json`: dtri's own total",
    "cli-new-process": "`dtri count --json` in a new process: its wall time",
    "cold-start": "a fresh process, best wall of `--repeat`",
    "command-timeline": "a `dtri` command in a new process: its wall seconds",
    "copy-probe": "one copy or page-locking step",
    "count": "`dtri count --json`: dtri's own total (`seconds.total`)",
    "count-by-size": "`dtri.count` in an open session, median",
    "cpu-fresh-count": "`dtri.count(edges, backend='cpu')` in a fresh process of its own, "
                       "best of calls 3 to 8, best over the rounds",
    "dense-cpu-clustering": "`dtri.prepare` + `clustering().compute()` in process, best of "
                            "`--repeat`",
    "dense-cpu-count": "`dtri.count(edges, backend='cpu')` in process, best of `--repeat`",
    "dense-cpu-file": "`dtri count FILE` (the CLI's `main`) in process, best of `--repeat`",
    "dense-cpu-triangles": "`dtri.prepare` + `triangles().compute()` in process, best of "
                           "`--repeat`",
    "cpu-hash": "`count()` with hash probes (the default), best of `--repeat`",
    "estimate-coverage": "`PreparedGraph.estimate`, median over the seeds",
    "estimate-speed": "`PreparedGraph.estimate` on a prepared graph, median",
    "estimate-speed-one-shot": "`dtri.count(approx=...)`, preparing the graph, median",
    "graphlets": "`dtri.prepare` + `graphlets()`, best of `--repeat`",
    "gzip-read": "`read_edges` of one gzip file, partitions counted",
    "host-memory": "a fresh `dtri count --json` under `--memory-limit`: wall seconds of the "
                   "whole command (the idle-worker lines: none)",
    "intersect-balance": "no headline (each range's seconds in detail)",
    "join-per-call": "`dtri.count` in an open GPU session, median",
    "k-truss": "`dtri.prepare` + `k_truss(k)`, best of `--repeat`",
    "kernel-probe": "the fused join under one tuning, best of `--repeat`",
    "listing": "`dtri list INPUT -o DIR --json` in a new process: wall seconds of the "
               "command, best of the rounds (peer: `dtri count` of the same input, in its own "
               "process)",
    "multi-gpu": "prepare + count of edges persisted on the workers, best of `--repeat`",
    "multi-gpu-cli": "`dtri count --generate --workers W --json` in a new process: wall "
                     "seconds of the command, best of `--repeat`",
    "first-run": "`dtri count --generate SPEC --backend cpu --json` in a fresh process with "
                 "an empty numba cache: wall seconds of the command, median of `--repeat`",
    "ncu-join": "a join kernel launch's `gpu__time_duration.sum` under Nsight Compute (the "
                "summary line: the profiled join launches' total)",
    "nx-backend": "`nx.triangles(G, backend='dtri')`, conversion included, best of `--repeat`",
    "nx-backend-per-call": "`nx.<analytic>(G, backend='dtri')`, median",
    "one-liner-per-call": "`dtri.count` with every default, median",
    "orientation": "prepare + count of the persisted edges, `auto` choices, best of `--repeat`",
    "out-of-core": "a fresh `dtri` process: wall seconds of the whole command",
    "profile": "`dtri profile --generate SPEC -o DIR --json` in a new process: wall seconds "
               "of the command (peer: `dtri truss` of the same graph, in its own process)",
    "placement": "`dtri count --generate --json` in a new process where dtri places it: "
                 "wall seconds of the command, best of `--runs`",
    "saved-graph": "`dtri count` of a saved prepared graph, or the rerun of a killed "
                   "`--checkpoint` count: wall seconds of the command",
    "scale-out": "`dtri count FILE --scheduler ADDRESS --json` in a new process, against P "
                 "single-threaded CPU workers started for it: wall seconds of the command",
    "session-per-call": "a call in an open GPU session, median",
    "stage-profile": "the third warm count's wall seconds",
    "staged-count": "`dtri count --json` under `staged_gpu.sh`: wall seconds of the command",
    "staged-triangles": "`dtri triangles -o DIR` under `staged_triangles.sh`: wall seconds",
    "transfer-probe": "one copy or transfer (the measurement lines)",
    "verify-shared": "every check of one graph against NetworkX",
    "wire-format": "packing and unpacking every 2D block of a graph once in one wire format, "
                   "best of `--repeat`",
    "weighted-clustering": "`dtri.clustering(rows, weight=..., directed=...)` in a fresh "
                           "process of its own, best of calls 2.., best over the rounds "
                           "(peer: NetworkX's graph build + `nx.clustering`)",
    "worker-malloc": "`dtri.count` on a local CPU cluster dtri starts: dtri's own total",
}
"""What ``seconds`` is in each benchmark's lines (the index prints it)."""


# ---------------------------------------------------------------------------- writing lines


def commit() -> str | None:
    """The commit that runs: ``DTRI_COMMIT`` where the copy of ``.git`` is not the tree's,
    else ``git rev-parse --short HEAD`` of this repository; None where neither answers."""
    if named := os.environ.get("DTRI_COMMIT"):
        return named
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True, cwd=ROOT).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def device_of(backend: str | None) -> str:
    """The GPU's name, or the CPU's with its count (``dtri.bench.device_name``)."""
    from dtri.bench import device_name

    return device_name(backend or "cpu")


def command_line() -> str:
    """This process's command line, the script named from the repository root."""
    script = Path(sys.argv[0]).resolve()
    name = script.relative_to(ROOT) if script.is_relative_to(ROOT) else Path(sys.argv[0])
    return shlex.join(["python", str(name), *sys.argv[1:]])


def record(**values: Any) -> dict[str, Any]:
    """One line of :data:`FIELDS` from ``values``: ``commit`` and ``device`` (from
    ``backend``) of this machine where not given, ``peers`` and ``detail`` empty, None for
    the rest."""
    unknown = set(values) - set(FIELDS)
    if unknown:
        raise ValueError(f"not a field of the benchmark's lines: {sorted(unknown)}")
    if "commit" not in values:
        values["commit"] = commit()
    if "device" not in values:
        values["device"] = device_of(values.get("backend"))
    return complete(values)


def complete(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` in the order of :data:`FIELDS`: ``peers`` and ``detail`` empty, None for
    the rest where not given."""
    empty = {"peers": {}, "detail": {}}
    return {key: values.get(key, copy.deepcopy(empty.get(key))) for key in FIELDS}


def to_schema(family: str, own: dict[str, Any], **values: Any) -> dict[str, Any]:
    """A script's own dict as a line of the schema (:data:`FAMILIES`), with ``values`` for
    the fields it does not hold and this machine's commit and device where neither does."""
    fields = FAMILIES[family](own)
    for key, value in values.items():
        fields.setdefault(key, value)
    return record(**fields)


def emit(record: dict[str, Any], out: str | None) -> None:
    """Print one line, and append it to ``out`` when given."""
    text = json.dumps(record)
    print(text, flush=True)
    if out:
        with open(out, "a") as handle:
            handle.write(text + "\n")


# ---------------------------------------------------------------------------- the families


def _path(dotted: str) -> tuple[str | int, ...]:
    return tuple(int(part) if part.isdigit() else part for part in dotted.split("."))


def lookup(data: Any, path: str | tuple[str | int, ...]) -> tuple[bool, Any]:
    """``(True, value)`` at the path (dotted, list items by number; or a tuple of keys),
    ``(False, None)`` where there is nothing."""
    for part in _path(path) if isinstance(path, str) else path:
        within = part in data if isinstance(data, dict) else (
            isinstance(data, list) and isinstance(part, int) and part < len(data))
        if not within:
            return False, None
        data = data[part]
    return True, data


def take(own: dict[str, Any], moves: dict[str, str] | None = None,
         **fixed: Any) -> dict[str, Any]:
    """The fields of ``own``: each of ``moves`` (target ← source, dotted paths; a target
    such as ``peers.networkx.seconds`` builds the peer), then the keys of ``own`` named like
    a field, then ``fixed`` (None there: not given). A source at the top level leaves
    ``own``; a deeper one is copied. ``detail`` is what is left of ``own``, in its order."""
    own = copy.deepcopy(own)
    fields: dict[str, Any] = {}
    used: set[str] = set()
    for target, source in (moves or {}).items():
        found, value = lookup(own, source)
        if not found:
            continue
        *parents, last = target.split(".")
        place = fields
        for part in parents:
            place = place.setdefault(part, {})
        place[last] = value
        if "." not in source:
            used.add(source)
    for key in FIELDS[:-1]:
        if key in own and key not in used and key not in fields:
            fields[key] = own[key]
            used.add(key)
    for key, value in fixed.items():
        if value is not None:
            fields.setdefault(key, value)
    fields["detail"] = {key: value for key, value in own.items() if key not in used}
    return fields


def _schema(own: dict[str, Any]) -> dict[str, Any]:
    """Lines written in the schema (``in_process.py``, ``estimates.py``): as they are; the
    extra keys of ``out_of_core.py``'s and ``gzip_read.py``'s lines into ``detail``."""
    fields = take({key: value for key, value in own.items() if key != "detail"})
    fields["detail"] = {**own.get("detail", {}), **fields["detail"]}
    return fields


def _bench(own: dict[str, Any]) -> dict[str, Any]:
    """``dtri bench``: the in-memory count is the one its peers are compared with."""
    return take(own, {"seconds": "dtri.in_memory_seconds",
                      "stage_seconds": "dtri.in_memory_stage_seconds"}, benchmark="bench")


def _orientation(own: dict[str, Any]) -> dict[str, Any]:
    """``orientation_bench.py``: the first run is ``auto``'s."""
    return take(own, {"seconds": "runs.0.seconds", "stage_seconds": "runs.0.stage_seconds"},
                benchmark="orientation", backend="gpu")


def _analytics(own: dict[str, Any]) -> dict[str, Any]:
    """``analytics_bench.py``: the per-vertex triangles (what both peers are compared
    with), or the k-truss."""
    if "k" in own:
        return take(own, {"seconds": "dtri.seconds.k_truss"}, benchmark="k-truss")
    return take(own, {"seconds": "dtri.seconds.triangles"}, benchmark="analytics")


def _cpu_hash(own: dict[str, Any]) -> dict[str, Any]:
    """``cpu_hash_bench.py``: hash probes on (the default), search only as the peer."""
    return take(own, {"seconds": "hash.count_seconds", "triangles": "hash.triangles",
                      "peers.dtri-search.seconds": "search.count_seconds",
                      "peers.dtri-search.triangles": "search.triangles",
                      "peers.dtri-search.agrees": "agrees"},
                benchmark="cpu-hash", backend="cpu")


def _cold_graph(name: str) -> str | None:
    if found := re.search(r"rmat:\d+", name):
        return found.group(0)
    if name.startswith("dtri count "):
        return name.removeprefix("dtri count ").split(".")[0]
    return "karate" if name == "unguarded two-line script" else None


def _cold_start(own: dict[str, Any]) -> dict[str, Any]:
    """``cpu_cold.py``: the NetworKit process is the peer of ``dtri count --generate``."""
    graph = _cold_graph(own.get("name", ""))
    if own.get("name", "").startswith("networkit"):
        return take(own, {"peers.networkit.seconds": "seconds",
                          "peers.networkit.peak_rss_bytes": "peak_rss_bytes"},
                    benchmark="cold-start", backend="cpu", graph=graph)
    return take(own, benchmark="cold-start", backend="cpu", graph=graph)


def _graphlets(own: dict[str, Any]) -> dict[str, Any]:
    """``graphlets_bench.py``: FGlT's line holds FGlT as the peer."""
    if own.get("tool") == "fglt":
        return take(own, {"peers.fglt.seconds": "seconds",
                          "peers.fglt.reported_seconds": "reported_seconds",
                          "peers.fglt.threads": "threads",
                          "peers.fglt.agrees": "frequencies_equal_dtri"},
                    benchmark="graphlets")
    return take(own, benchmark="graphlets")


def _nx_backend(own: dict[str, Any]) -> dict[str, Any]:
    """``nx_backend_bench.py``: NetworkX's own ``nx.triangles`` as the peer."""
    return take(own, {"seconds": "dtri_seconds", "peers.networkx.seconds": "networkx_seconds",
                      "peers.networkx.agrees": "equal"}, benchmark="nx-backend")


def _count(own: dict[str, Any]) -> dict[str, Any]:
    """``dtri count --json`` (its ``seconds`` are per stage), the graph named by its file."""
    paths = own.get("paths") or [None]
    graph = Path(paths[0]).name.split(".")[0] if paths[0] else None
    return take(own, {"seconds": "seconds.total", "stage_seconds": "seconds"},
                benchmark="count", graph=graph)


def _staged(benchmark: str, moves: dict[str, str]) -> Callable[[dict[str, Any]], Any]:
    """The lines of ``staged_gpu.sh`` and ``staged_triangles.sh``: the wall seconds of the
    command, dtri's per stage."""
    return lambda own: take(own, {"seconds": "wall_seconds", "stage_seconds": "seconds",
                                  **moves}, benchmark=benchmark, backend="gpu")


def _gpu(benchmark: str, moves: dict[str, str] | None = None,
         graph: Callable[[dict[str, Any]], str | None] | None = None,
         ) -> Callable[[dict[str, Any]], Any]:
    """A GPU script's lines: ``moves``, and the graph from the line where it says."""
    return lambda own: take(own, moves, benchmark=benchmark, backend="gpu",
                            graph=graph(own) if graph else None)


def _transfer(own: dict[str, Any]) -> dict[str, Any]:
    return take(own, benchmark="transfer-probe", backend="gpu")


FAMILIES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "schema": _schema,
    "bench": _bench,
    "orientation": _orientation,
    "analytics": _analytics,
    "cpu-hash": _cpu_hash,
    "cold-start": _cold_start,
    "graphlets": _graphlets,
    "nx-backend": _nx_backend,
    "verify-shared": lambda own: take(own, benchmark="verify-shared"),
    "count": _count,
    "staged-count": _staged("staged-count", {}),
    "staged-triangles": _staged("staged-triangles", {"triangles": "count_uncapped"}),
    "stage-profile": _gpu("stage-profile", {"seconds": "wall_seconds",
                                            "stage_seconds": "seconds"}),
    "intersect-balance": _gpu("intersect-balance", graph=lambda own: f"rmat:{own['scale']}"
                              if "scale" in own else None),
    "kernel-probe": _gpu("kernel-probe", {"stage_seconds": "prepare_seconds"}),
    "multi-gpu": _gpu("multi-gpu"),
    "multi-gpu-cli": _gpu("multi-gpu-cli"),
    "saved-graph": lambda own: take(own, benchmark="saved-graph"),
    "host-memory": lambda own: take(own, benchmark="host-memory"),
    "copy-probe": _gpu("copy-probe"),
    "transfer-probe": _transfer,
    "scale-out": lambda own: take(own, benchmark="scale-out"),
    "wire-format": lambda own: take(own, benchmark="wire-format"),
    "first-run": lambda own: take(own, benchmark="first-run"),
    "profile": lambda own: take(own, benchmark="profile"),
    "listing": lambda own: take(own, benchmark="listing"),
    "ncu-join": lambda own: take(own, benchmark="ncu-join"),
    "weighted-clustering": lambda own: take(own, benchmark="weighted-clustering"),
}
"""Each script's (or command's) own dict → the fields it gives (``detail`` among them)."""


# ---------------------------------------------------------------------------- text output

_RATE = r"(?P<GB_per_s>[0-9.]+) GB/s"
_TRANSFER = (
    re.compile(rf"^(?P<measurement>peer copy \S+|D2H pinned) {_RATE}$"),
    re.compile(rf"^(?P<protocol>\w+) (?P<measurement>make\w*) (?P<GB>[0-9.]+) GB "
               rf"(?P<seconds>[0-9.]+) s {_RATE}$"),
)


def transfer_lines(text: str) -> list[dict[str, Any]]:
    """``probes/transfer_probe.py``'s printed lines as dicts of the family
    ``transfer-probe``: each keeps its ``line``; a measurement also its numbers."""
    parsed = []
    for text_line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        own: dict[str, Any] = {"line": text_line}
        for pattern in _TRANSFER:
            if found := pattern.match(text_line):
                own.update({key: value if key in ("measurement", "protocol") else float(value)
                            for key, value in found.groupdict().items()})
                break
        parsed.append(own)
    return parsed

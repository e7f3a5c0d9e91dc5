"""The join's kernels under Nsight Compute, and every kernel of a count ranked by time (issue 71,
item 1): one GPU, ``ncu`` on ``PATH``.

Usage::

    python examples/benchmarks/ncu_join.py [--scale 24] [--launch-count 40] \\
        [--rank-launches 4000] [--timeout 270] [--out FILE] [--keep DIR]

It runs ``dtri count --generate rmat:SCALE --backend gpu --scheduler synchronous --json`` three
times, each a new process that counts by itself on the one GPU (no cluster: the synchronous
scheduler is named so that no size rule starts one):

1. plainly, for the count and dtri's own stage seconds without a profiler (and CuPy's
   compiled kernels in its cache, so that the profiled runs do not compile them);
2. under ``ncu``, profiling only the join's probe kernels (``--kernels``, a regular expression
   on the kernel's function name: ``hash_pieces`` and ``hash_warps``, the hashed probes,
   and ``search_edges``, the binary searches), at most ``--launch-count`` launches, with the
   sections ``SpeedOfLight``, ``MemoryWorkloadAnalysis``, ``Occupancy``, ``LaunchStats`` and
   ``WarpStateStats`` and the metrics of :data:`JOIN_METRICS`; each profiled launch is
   replayed once per pass (about ten), its memory restored between passes;
3. under ``ncu`` again with one metric, ``gpu__time_duration.sum`` (one pass, no replay, caches
   not flushed), for every kernel launch of the run up to ``--rank-launches``: generation,
   preparation and join, to rank the preparation's kernels by time.

Clocks are left to the GPU (``--clock-control none``), so durations are those of a plain
run. Each report is read back with ``ncu --import REPORT --csv --page raw --print-units base
--print-metric-name name --print-kernel-base function``: one row per launch, a column per
metric, a row of units under the header; :func:`read_raw_csv` parses it.

``--timeout`` is the whole script's time, shared out: the plain run may take
:data:`PLAIN_SECONDS`, step 2 half of what is left, step 3 what is left then but
:data:`RESERVE_SECONDS`. A step past its share gets SIGINT (``ncu`` then writes what it has
profiled; the step is marked ``stopped``), and SIGKILL :data:`GRACE_SECONDS` later. Without
``ncu`` on ``PATH`` the script stops with one line saying so before anything runs; without
access to the GPU's performance counters (``ERR_NVGPUCTRPERM``) it says that.

Output, in the schema of ``schema.py`` (family ``ncu-join``): one line per profiled join
launch (``detail.kind`` ``launch``: ``seconds`` its duration; DRAM bytes read and written,
achieved DRAM throughput in % of peak and in GB/s, shared-memory wavefronts and their
throughput in % of peak, bank conflicts, achieved and theoretical occupancy, registers,
grid and block, the top 3 stall reasons in cycles per issued instruction), printed as soon
as step 2 ends, then one summary line (``detail.kind`` ``summary``: ``seconds`` the profiled
join launches' total, ``stage_seconds`` and ``triangles`` the plain run's; ``join_total``
their DRAM bytes read and its rate; per join kernel the same figures over its launches,
weighted by duration; the top 10 kernels of step 3 by total time, each with its
instantiations' count and the costliest one's demangled name; whether every run counted the
same triangles). With ``--keep DIR`` (default: the
folder of ``--out``) the step's report, raw CSV and ``ncu`` log are kept there as
``STEM-join.*`` and ``STEM-kernels.*`` (``STEM`` the name of ``--out``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # schema.py beside this file
from schema import command_line, emit, to_schema

FAMILY = "ncu-join"
JOIN_KERNELS = r"^(hash_pieces|hash_warps|search_edges)(<.*>)?$"
"""The join's probe kernels (dtri/kernels/intersect/intersect.cu), by function name."""
SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "Occupancy", "LaunchStats",
            "WarpStateStats")
JOIN_METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
)
"""Asked for by name beside the sections (each a name that published ncu command lines use);
the stall reasons come with ``WarpStateStats``. A name ncu does not know fails the step."""
RANK_METRIC = "gpu__time_duration.sum"
GRACE_SECONDS = 15
"""After SIGINT at a step's timeout, how long ``ncu`` may take to write its report."""
PLAIN_SECONDS = 60
"""The plain run's limit (R-MAT 24 took 2.9 s from a new process on one H100)."""
JOIN_SHARE = 0.5
"""The share of the time left that the join's step may take."""
IMPORT_SECONDS = 60
"""The longest a report's import may take (a few seconds for thousands of launches)."""
RESERVE_SECONDS = 40
"""Kept back from the last step: its stop's grace, the reports' import, the lines."""
TOP_KERNELS = 10
NAME_CHARS = 300
"""A demangled name kept to this many characters (CUB's run to thousands)."""
TOP_STALLS = 3

FIELDS = {
    "seconds": "gpu__time_duration.sum",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "dram_throughput_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "shared_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "shared_throughput_pct":
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
    "shared_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "l2_hit_rate_pct": "lts__t_sector_hit_rate.pct",
    "warp_cycles_per_issued": "smsp__average_warp_latency_per_inst_issued.ratio",
    "registers_per_thread": "launch__registers_per_thread",
    "shared_bytes_per_block": "launch__shared_mem_per_block_dynamic",
}
"""A launch's figures, each from one column of the raw page (None where it is absent)."""
WEIGHTED = ("dram_throughput_pct", "shared_throughput_pct", "achieved_occupancy_pct",
            "theoretical_occupancy_pct", "l2_hit_rate_pct", "warp_cycles_per_issued")
"""Figures a kernel's summary averages over its launches, weighted by their durations."""
SUMMED = ("seconds", "dram_read_bytes", "dram_write_bytes", "shared_wavefronts",
          "shared_bank_conflicts")
STALLS = (
    (re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$"),
     "cycles per issued instruction"),
    (re.compile(r"^smsp__average_warp_latency_issue_stalled_(\w+?)\.(?:pct|ratio)$"),
     "share of warp latency"),
    (re.compile(r"^smsp__warps?_issue_stalled_(\w+?)_per_warp_active\.pct$"),
     "% of active warps"),
    (re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+)$"), "PC samples"),
)
"""The families of stall metrics that ncu versions report, the first found used: the
``WarpStateStats`` section's first; the reason is the group."""
NOT_STALLS = {"selected"}
"""A warp issuing is no stall; PC samples' ``*_not_issued`` are skipped too."""
UNITS = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
         "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0,
         "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}
"""Units scaled to seconds and bytes (``--print-units base`` gives ``ns`` and ``byte`` with
ncu 2025.3)."""
COLUMNS = ("ID", "Kernel Name")
"""Columns the raw page's header holds whatever else it holds."""
METRIC = re.compile(r"^[a-z0-9]+__\w")
"""A metric's column (``unit__counter...``), apart from the launch's own columns."""


# ---------------------------------------------------------------------------- the raw page


def number(text: str, unit: str = "") -> float | int | str | None:
    """A raw-page cell as a number in seconds or bytes (its unit scaled; a whole count an
    ``int``), text where it is not a number, None where ncu has no value (``n/a``, empty)."""
    text = text.strip()
    if text in ("", "n/a", "N/A"):
        return None
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return text
    scale = UNITS.get(unit, 1.0)
    return int(value) if scale == 1.0 and value.is_integer() else value * scale


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def read_raw_csv(text: str) -> list[dict[str, Any]]:
    """The launches of ncu's raw page as CSV (``--csv --page raw``), in order: per launch
    its ``id``, ``kernel``, ``grid``, ``block`` and ``metrics`` (every metric column,
    numbers in seconds and bytes). Lines before the header (ncu's ``==PROF==`` lines, the
    application's own output) and after the table are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')
                  and all(f'"{c}"' in line for c in COLUMNS)), None)
    if start is None:
        return []
    rows = csv.reader(io.StringIO("\n".join(line for line in lines[start:]
                                            if not line.startswith("=="))))
    header = next(rows)
    at = {name: header.index(name) for name in header}
    metrics = [i for i, name in enumerate(header) if METRIC.match(name)]
    units = [""] * len(header)
    launches = []
    for row in rows:
        if len(row) != len(header):
            continue
        if row[at["ID"]] == "":  # the units under the header
            units = row
            continue
        if not row[at["ID"]].isdigit():
            continue
        launches.append({
            "id": int(row[at["ID"]]), "kernel": row[at["Kernel Name"]],
            "grid": row[at["Grid Size"]] if "Grid Size" in at else None,
            "block": row[at["Block Size"]] if "Block Size" in at else None,
            "metrics": {header[i]: number(row[i], units[i]) for i in metrics}})
    return launches


def stall_reasons(metrics: dict[str, Any]) -> tuple[dict[str, float], str | None]:
    """A launch's stall reasons and their values, from the first family of :data:`STALLS`
    it holds, and what the values are; ``({}, None)`` where it holds none."""
    for pattern, meaning in STALLS:
        found = {}
        for name, value in metrics.items():
            match = pattern.match(name)
            if match and is_number(value):
                reason = match.group(1)
                if reason not in NOT_STALLS and not reason.endswith("_not_issued"):
                    found[reason] = value
        if found:
            return found, meaning
    return {}, None


def top(values: dict[str, float], count: int = TOP_STALLS) -> list[dict[str, Any]]:
    ranked = sorted(values.items(), key=lambda item: -item[1])[:count]
    return [{"reason": reason, "value": round(value, 4)} for reason, value in ranked]


def launch_figures(launch: dict[str, Any]) -> dict[str, Any]:
    """A profiled launch's figures (:data:`FIELDS`), its achieved DRAM read rate and its top
    stall reasons."""
    metrics = launch["metrics"]
    figures: dict[str, Any] = {"kernel": base_name(launch["kernel"]), "id": launch["id"],
                               "grid": launch["grid"], "block": launch["block"]}
    for key, metric in FIELDS.items():
        value = metrics.get(metric)
        figures[key] = value if is_number(value) else None
    seconds, read = figures["seconds"], figures["dram_read_bytes"]
    figures["dram_read_GB_per_s"] = round(read / seconds / 1e9, 2) if seconds and read \
        is not None else None
    stalls, meaning = stall_reasons(metrics)
    figures["stalls_top"] = top(stalls)
    figures["stalls_unit"] = meaning
    figures["stalls"] = {reason: round(value, 4) for reason, value in stalls.items()}
    return figures


def base_name(kernel: str) -> str:
    """A kernel's function name: without a template's arguments or a parameter list."""
    return re.sub(r"[<(].*$", "", kernel).strip()


def kernel_summary(launches: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per join kernel (by function name) over its profiled launches (each as
    :func:`launch_figures` gives it): the launches, the sums of :data:`SUMMED`, the
    duration-weighted means of :data:`WEIGHTED` and of each stall reason, its top 3, and the
    DRAM read rate over the summed duration."""
    by_kernel: dict[str, list[dict[str, Any]]] = {}
    for figures in launches:
        by_kernel.setdefault(figures["kernel"], []).append(figures)
    summary = {}
    for kernel, group in by_kernel.items():
        weights = [f["seconds"] or 0.0 for f in group]
        total = sum(weights)
        entry: dict[str, Any] = {"launches": len(group)}
        for key in SUMMED:
            values = [f[key] for f in group if f[key] is not None]
            entry[key] = sum(values) if values else None
        for key in (*WEIGHTED, *{reason for f in group for reason in f["stalls"]}):
            pairs = [(f[key] if key in WEIGHTED else f["stalls"].get(key), w)
                     for f, w in zip(group, weights, strict=True)]
            pairs = [(v, w) for v, w in pairs if v is not None]
            weight = sum(w for _, w in pairs)  # of the launches that have the figure
            mean = sum(v * w for v, w in pairs) / weight if weight else None
            if key in WEIGHTED:
                entry[key] = None if mean is None else round(mean, 3)
            elif mean is not None:
                entry.setdefault("stalls", {})[key] = round(mean, 4)
        entry["stalls_top"] = top(entry.get("stalls", {}))
        entry["dram_read_GB_per_s"] = round(entry["dram_read_bytes"] / total / 1e9, 2) \
            if total and entry["dram_read_bytes"] is not None else None
        summary[kernel] = entry
    return summary


def ranked_kernels(launches: list[dict[str, Any]], names: dict[int, str] | None = None,
                   count: int = TOP_KERNELS) -> dict[str, Any]:
    """Every profiled launch's duration (:data:`RANK_METRIC`) summed by kernel (function)
    name: the ``count`` kernels of the most time, with their launches, share of the total
    and longest launch; with ``names`` (each launch's demangled name, by id), how many
    instantiations a kernel's launches were and the one of the most time (its first
    :data:`NAME_CHARS` characters)."""
    by_kernel: dict[str, dict[str, float]] = {}
    launched: dict[str, list[float]] = {}
    for launch in launches:
        seconds = launch["metrics"].get(RANK_METRIC)
        if is_number(seconds):
            kernel = base_name(launch["kernel"])
            full = (names or {}).get(launch["id"], kernel)
            variants = by_kernel.setdefault(kernel, {})
            variants[full] = variants.get(full, 0.0) + seconds
            launched.setdefault(kernel, []).append(seconds)
    total = sum(map(sum, launched.values()))
    ranked = sorted(launched.items(), key=lambda item: -sum(item[1]))[:count]
    top_kernels = []
    for kernel, times in ranked:
        entry = {"kernel": kernel, "launches": len(times), "seconds": round(sum(times), 6),
                 "share": round(sum(times) / total, 4) if total else None,
                 "longest_seconds": round(max(times), 6)}
        if names:
            variants = by_kernel[kernel]
            entry["variants"] = len(variants)
            entry["top_variant"] = max(variants, key=lambda v: variants[v])[:NAME_CHARS]
        top_kernels.append(entry)
    return {"launches": sum(map(len, launched.values())), "kernels": len(launched),
            "seconds": round(total, 6), "top": top_kernels}


# ---------------------------------------------------------------------------- the runs


@dataclass
class Step:
    """One command run in a new process group: what it printed, its exit status (None where
    it was stopped at its timeout) and its wall seconds."""

    argv: list[str]
    seconds: float
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def printed(self) -> dict[str, Any] | None:
        """dtri's ``--json`` object: the last line of its output that is one."""
        for line in reversed(self.stdout.splitlines()):
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    continue
        return None


def run_step(argv: list[str], timeout: float) -> Step:
    """Run ``argv`` in a new process group; past ``timeout`` seconds the group gets SIGINT
    (``ncu`` writes what it has), and SIGKILL :data:`GRACE_SECONDS` later."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        code = None
        os.killpg(process.pid, signal.SIGINT)
        try:
            out, err = process.communicate(timeout=GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
    return Step(argv, time.perf_counter() - started, code, out, err)


def shown(argv: list[str]) -> str:
    """A command as the lines record it: ``python`` for this interpreter, the files it writes
    and the ncu it runs by their names."""
    words = ["python" if word == sys.executable else word for word in argv]
    return shlex.join(Path(w).name if i == 0 or w.endswith((".ncu-rep", ".log")) else w
                      for i, w in enumerate(words))


def find_ncu(name: str) -> str:
    """The ``ncu`` to run, or a stop with one line saying it is not there."""
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"ncu_join.py: {name!r} (Nsight Compute's command line) is not on "
                         "PATH: install Nsight Compute or put its folder on PATH (CUDA "
                         "toolkits have it in nsight-compute-*/ or bin/)")
    return found


def ncu_version(ncu: str) -> str | None:
    done = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60,
                          check=False)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return lines[-1].strip() if lines else None


def imported(ncu: str, report: Path, names: str, timeout: float) -> tuple[str, str]:
    """A report's raw page as CSV, kernels named by ``names`` (``function``, ``demangled``),
    and what ncu said besides (its ``==`` lines and stderr)."""
    done = subprocess.run(
        [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base",
         "--print-kernel-base", names],
        capture_output=True, text=True, timeout=min(timeout, IMPORT_SECONDS), check=False)
    said = [line for line in done.stdout.splitlines() if line.startswith("==")]
    return done.stdout, "\n".join([*said, done.stderr.strip()]).strip()[-1500:]


def profiled(ncu: str, options: list[str], dtri: list[str], files: dict[str, Path],
             timeout: float, demangled: bool = False) -> dict[str, Any]:
    """One ``ncu`` step: ``dtri`` under ``ncu`` with ``options``, its report read back as
    the raw page. Returns the step's record with its ``launches`` (``[]`` where none) and,
    with ``demangled``, each launch's demangled name by id (``names``)."""
    for path in files.values():  # nothing of an earlier run in a kept folder
        path.unlink(missing_ok=True)
    argv = [ncu, "--target-processes", "all", *options, "--export", str(files["report"]),
            "--force-overwrite", "--log-file", str(files["log"]), *dtri]
    print(f"ncu_join.py: {shown(argv)}", file=sys.stderr, flush=True)
    step = run_step(argv, timeout)
    log = files["log"].read_text(errors="replace") if files["log"].exists() else ""
    if "ERR_NVGPUCTRPERM" in log + step.stderr:
        raise SystemExit("ncu_join.py: ncu may not read this GPU's performance counters "
                         "(ERR_NVGPUCTRPERM): run as root, or with the nvidia module's "
                         "NVreg_RestrictProfilingToAdminUsers=0")
    record: dict[str, Any] = {
        "command": shown(argv), "seconds": round(step.seconds, 3), "rc": step.returncode,
        "stopped": step.returncode is None, "timeout": timeout,
        "ncu_messages": sorted({line.strip() for line in log.splitlines()
                                if line.startswith(("==WARNING==", "==ERROR=="))})[:20]}
    printed = step.printed
    record["triangles"] = None if printed is None else printed.get("triangles")
    record["dtri_seconds"] = None if printed is None else printed.get("seconds")
    report = files["report"]
    if not report.exists() and Path(f"{report}.ncu-rep").exists():
        report = Path(f"{report}.ncu-rep")
    if not report.exists():
        record["error"] = (f"no report (rc {step.returncode}): "
                           + (log.strip()[-1500:] or step.stderr.strip()[-1500:]))
        print(f"ncu_join.py: {record['error']}", file=sys.stderr, flush=True)
        return {**record, "launches": []}
    text, error = imported(ncu, report, "function", timeout)
    files["csv"].write_text(text)
    launches = read_raw_csv(text)
    record["profiled_launches"] = len(launches)
    if not launches:
        record["error"] = f"no launch in the report: {error}"
        print(f"ncu_join.py: {record['error']}", file=sys.stderr, flush=True)
    if launches and demangled:
        text, _ = imported(ncu, report, "demangled", timeout)
        record["names"] = {launch["id"]: launch["kernel"] for launch in read_raw_csv(text)}
    return {**record, "launches": launches}


def device() -> str | None:
    """The GPU's name as ``nvidia-smi`` gives it (no CUDA context in this process)."""
    if shutil.which("nvidia-smi") is None:
        return None
    done = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i",
                           "0"], capture_output=True, text=True, timeout=60, check=False)
    return done.stdout.strip() or None


def outputs(folder: Path, stem: str, step: str) -> dict[str, Path]:
    return {"report": folder / f"{stem}-{step}.ncu-rep", "log": folder / f"{stem}-{step}.log",
            "csv": folder / f"{stem}-{step}.csv"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=24, help="the R-MAT graph's scale")
    parser.add_argument("--launch-count", type=int, default=40,
                        help="join launches profiled with the sections (ncu --launch-count)")
    parser.add_argument("--rank-launches", type=int, default=4000,
                        help="launches timed for the ranking of every kernel")
    parser.add_argument("--kernels", default=JOIN_KERNELS,
                        help="the join's kernels: a regular expression on function names")
    parser.add_argument("--timeout", type=float, default=270,
                        help="seconds for the whole script, shared out among its steps")
    parser.add_argument("--ncu", default="ncu", help="the ncu to run")
    parser.add_argument("--dtri-args", default="", help="more options of every dtri count")
    parser.add_argument("--out", help="append the lines to this file")
    parser.add_argument("--keep", type=Path,
                        help="keep reports, raw CSVs and logs here (default: --out's folder)")
    parser.add_argument("--reparse", type=Path,
                        help="run nothing: read a kept run's lines (ncu.jsonl) and raw CSVs "
                             "in this folder again and print its lines")
    args = parser.parse_args()
    if args.reparse:
        return reparse(args.reparse, args.out)
    ncu = find_ncu(args.ncu)
    deadline = time.monotonic() + args.timeout

    def left(share: float = 1.0, reserve: float = 0.0) -> float:
        return max(10.0, share * (deadline - time.monotonic()) - reserve)

    graph = f"rmat:{args.scale}"
    dtri = [sys.executable, "-m", "dtri", "count", "--generate", graph, "--backend", "gpu",
            "--scheduler", "synchronous", "--json", *shlex.split(args.dtri_args)]
    keep = args.keep or (Path(args.out).resolve().parent if args.out else None)
    stem = Path(args.out).stem if args.out else "ncu"
    with tempfile.TemporaryDirectory(prefix="dtri-ncu-") as tmp:
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        print(f"ncu_join.py: {shown(dtri)}", file=sys.stderr, flush=True)
        plain = run_step(dtri, min(PLAIN_SECONDS, left()))
        if plain.returncode != 0 or plain.printed is None:
            raise SystemExit(f"ncu_join.py: {shown(dtri)} failed (rc {plain.returncode}): "
                             f"{plain.stderr.strip()[-2000:]}")
        counted: dict[str, Any] = plain.printed
        common = {"graph": graph, "backend": "gpu", "device": device(),
                  "command": command_line()}
        join = profiled(ncu, ["--kernel-name-base", "function", "--kernel-name",
                              f"regex:{args.kernels}", "--launch-count",
                              str(args.launch_count),
                              *(word for s in SECTIONS for word in ("--section", s)),
                              "--metrics", ",".join(JOIN_METRICS), "--clock-control", "none"],
                        dtri, outputs(folder, stem, "join"), left(JOIN_SHARE))
        figures = [launch_figures(launch) for launch in join.pop("launches")]
        for one in figures:
            emit(to_schema(FAMILY, {**common, "seconds": one["seconds"], "kind": "launch",
                                    **one}), args.out)
        kernels = profiled(ncu, ["--metrics", RANK_METRIC, "--launch-count",
                                 str(args.rank_launches), "--clock-control", "none",
                                 "--cache-control", "none"],
                           dtri, outputs(folder, stem, "kernels"),
                           left(reserve=RESERVE_SECONDS), demangled=True)
        ranking = ranked_kernels(kernels.pop("launches"), kernels.pop("names", None))
        ranking["capped"] = ranking["launches"] >= args.rank_launches
        join["capped"] = len(figures) >= args.launch_count
        triangles = [counted["triangles"], join["triangles"], kernels["triangles"]]
        total = sum(f["seconds"] or 0.0 for f in figures)
        read = sum(f["dram_read_bytes"] or 0 for f in figures)
        emit(to_schema(FAMILY, {
            **common, "seconds": round(total, 6) if figures else None,
            "stage_seconds": counted["seconds"], "triangles": counted["triangles"],
            "kind": "summary", "ncu_version": ncu_version(ncu),
            "plain": {"command": shown(dtri), "seconds": round(plain.seconds, 3),
                      "partitions": counted.get("partitions"), "join": counted.get("join")},
            "join_total": {"launches": len(figures), "seconds": round(total, 6),
                           "dram_read_bytes": read,
                           "dram_read_GB_per_s": round(read / total / 1e9, 2) if total else None},
            "join_kernels": kernel_summary(figures),
            "join_profile": join, "kernels_by_time": ranking, "kernels_profile": kernels,
            "same_triangles": None if None in triangles else len(set(triangles)) == 1,
            "kept": str(keep) if keep else None}), args.out)


def reparse(folder: Path, out: str | None) -> None:
    """A kept run's lines again, their figures read anew from its raw CSVs (the run's plain
    count, commands and device kept from its own lines)."""
    lines = [json.loads(line) for line in (folder / "ncu.jsonl").read_text().splitlines()
             if line.startswith("{")]
    summary = lines[-1]
    common = {k: summary[k] for k in ("graph", "backend", "device", "command", "commit")}
    launches = read_raw_csv((folder / "ncu-join.csv").read_text())
    figures = [launch_figures(launch) for launch in launches]
    for one in figures:
        emit(to_schema(FAMILY, {**common, "seconds": one["seconds"], "kind": "launch",
                                **one}), out)
    detail = dict(summary["detail"])
    kernels = read_raw_csv((folder / "ncu-kernels.csv").read_text())
    ranking = ranked_kernels(kernels)
    ranking["capped"] = detail["kernels_by_time"]["capped"]
    total = sum(f["seconds"] or 0.0 for f in figures)
    read = sum(f["dram_read_bytes"] or 0 for f in figures)
    detail.update({
        "join_total": {"launches": len(figures), "seconds": round(total, 6),
                       "dram_read_bytes": read,
                       "dram_read_GB_per_s": round(read / total / 1e9, 2) if total else None},
        "join_kernels": kernel_summary(figures), "kernels_by_time": ranking,
        "reparsed": f"python examples/benchmarks/ncu_join.py --reparse {folder.name}"})
    emit(to_schema(FAMILY, {**common, "seconds": round(total, 6) if figures else None,
                            "stage_seconds": summary["stage_seconds"],
                            "triangles": summary["triangles"], **detail}), out)


if __name__ == "__main__":
    main()

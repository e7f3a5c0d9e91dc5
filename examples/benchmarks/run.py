"""The one runner of the benchmarks: a preset for each file of ``results/`` and of
``results/archive/`` (the superseded ones), the command(s) that made it, as ``README.md``
records them.

    python examples/benchmarks/run.py --list
    python examples/benchmarks/run.py NAME [--out FILE] [--data DIR] [--dry-run]

Commands run from the repository root, one after the other. Their lines come out in the one
schema of ``schema.py``: the scripts of this folder write it; the lines of ``dtri bench`` and
``dtri count --json``, and the transfer probe's text, are mapped into it here by the same
families that converted the old results. Each line is printed, and appended to ``--out``
where given (to add a run to a results file, name it). A preset of a log (``capped-rmat24``)
writes the commands' output as it is. ``{data}`` in a command is the folder of the shared
SNAP graphs (``--data``, else ``$DTRI_DATA``, else ``../shared/data`` beside the repository),
``{tmp}`` a fresh folder for the preset's files.

The commit in each line is the tree's (``git rev-parse``); set ``DTRI_COMMIT`` on a host where
the copy of ``.git`` is not the tree's. The GPU presets want the host's environment: on this
project's GPU hosts ``in_process_gpu.sh``, ``orientation_gpu.sh`` and ``nx_backend_gpu.sh``
set it up (pylibcugraph's libraries, NetworkX's entry point for dtri) before their commands.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schema import ROOT, emit, to_schema, transfer_lines

HERE = Path(__file__).resolve().parent
B = "examples/benchmarks"
DTRI = ("python", "-m", "dtri")


@dataclass(frozen=True)
class Command:
    """One command: ``argv`` (``python`` is this interpreter), its time limit, the family
    that maps its own lines into the schema (None: it writes the schema), where its lines
    are (``{out}`` in ``argv``: that file; else its standard output), and ``keep=False``
    for a step whose output is not a result (writing input files). ``commit``: run it from a
    copy of that commit's ``dtri/`` and ``examples/benchmarks/`` (:func:`commit_tree`), an
    older tree to alternate with this one."""

    argv: tuple[str, ...]
    timeout: int | None = None
    family: str | None = None
    keep: bool = True
    env: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    commit: str | None = None


@dataclass(frozen=True)
class Preset:
    what: str
    host: str
    commands: tuple[Command, ...]
    note: str = ""
    log: bool = False


def script(name: str, *args: str, timeout: int | None = None, **options: Any) -> Command:
    """``python examples/benchmarks/NAME args``."""
    return Command(("python", f"{B}/{name}", *args), timeout, **options)


def dtri(*args: str, timeout: int | None = None, **options: Any) -> Command:
    """``python -m dtri args``: ``bench`` and ``count --json`` lines are mapped here."""
    family = {"bench": "bench", "count": "count"}.get(args[0])
    return Command((*DTRI, *args), timeout, family=family, **options)


def profile_rmat20_cpu(commit: str | None = None) -> tuple[Command, ...]:
    """``profile_bench.py`` of R-MAT 20 on the CPU (``dtri profile`` against ``dtri truss``),
    of this tree or of ``commit``'s."""
    return (script("profile_bench.py", "rmat:20", "--backend", "cpu", "--out", "{out}",
                   commit=commit),)


def shared(*names: str) -> tuple[str, ...]:
    return tuple(f"{{data}}/{name}.txt.gz" for name in names)


def gpu_host_memory(graph: str, limit: str, pool: str, timeout: int,
                    setting: str | None = None) -> Command:
    """``host_memory.py run`` of ``graph`` on one GPU worker under ``--memory-limit limit``
    and ``--rmm-pool-size pool``, against the same count without the limit, its spill folder
    named after the graph's scale, with ``setting`` of ``dask.config`` where given, and the
    bytecode written (the GPU host sets ``PYTHONDONTWRITEBYTECODE``)."""
    config = ("--config", setting) if setting else ()
    return script("host_memory.py", "run", graph, "--backend", "gpu", "--workers", "1",
                  "--memory-limit", limit, "--repeat", "1", "--timeout", str(timeout),
                  "--spill-directory", f"/tmp/spill{graph.split(':')[1]}", *config,
                  "--out", "{out}", "--", "--rmm-pool-size", pool,
                  env={"PYTHONDONTWRITEBYTECODE": ""})


def bench_gpu_workers(pairs: list[tuple[int, str]]) -> tuple[Command, ...]:
    """What ``scaling-gpu.sh`` ran: one ``dtri bench`` per worker count and graph."""
    return tuple(dtri("bench", "--backend", "gpu", "--workers", str(workers), "--peers", "none",
                      "--repeat", "2", graph, "--output", "{out}", timeout=280)
                 for workers, graph in pairs)


def multi_gpu(*graphs: str, workers: str, protocols: str, decompositions: str, repeat: int,
              cli: bool = False, devices: str | None = None,
              device_memory_limit: str | None = None, cli_timeout: int | None = None,
              worker_starts: str | None = None) -> Command:
    """``multi_gpu.py`` (issue 39), its options in the order its results' commands give
    them; ``cli_timeout`` is its own ``--timeout``, the seconds one ``--cli`` command may
    take."""
    return script("multi_gpu.py", *graphs, *(["--cli"] if cli else []), "--workers", workers,
                  *(["--devices", devices] if devices else []), "--protocols", protocols,
                  "--decompositions", decompositions, "--repeat", str(repeat),
                  *(["--worker-starts", worker_starts] if worker_starts else []),
                  *(["--device-memory-limit", device_memory_limit]
                    if device_memory_limit else []),
                  *(["--timeout", str(cli_timeout)] if cli_timeout else []), "--out", "{out}")


def orientation(*args: str, timeout: int | None = None) -> Command:
    return script("orientation_bench.py", *args, timeout=timeout)


def out_of_core(*args: str, **options: Any) -> Command:
    keep = args[0] != "write"
    return script("out_of_core.py", *args, keep=keep, **options)


def staged(runs: str) -> Command:
    return Command(("bash", f"{B}/staged_gpu.sh", "{out}", runs))


CPU = "this project's 2-core CPU machine"
H200 = "one NVIDIA H200"
ONE_GRAPH = ("--orientations", "degree", "--orders", "rank")
SNAP = ("facebook_combined", "email-Eu-core", "wiki-Vote", "p2p-Gnutella24", "ca-HepTh",
        "ca-CondMat", "ca-GrQc")
R26 = "{tmp}/r26"

PRESETS: dict[str, Preset] = {
    "analytics-rmat18-cpu-2core": Preset(
        "the analytics against NetworKit's clustering, two single-threaded workers", CPU, (
            script("analytics_bench.py", "rmat:18", "--backend", "cpu", "--workers", "2",
                   "--repeat", "3"),)),
    "analytics-rmat24-h200": Preset(
        "the analytics against pylibcugraph's per-vertex triangle_count", H200, (
            script("analytics_bench.py", "rmat:24", "--backend", "gpu", "--repeat", "3"),),
        "pylibcugraph's libraries set up as orientation_gpu.sh sets them"),
    "bench-cpu-2core": Preset(
        "dtri bench against NetworKit and NetworkX, two single-threaded workers", CPU, (
            dtri("bench", "--backend", "cpu", "--repeat", "3", "--peers", "networkit,networkx",
                 "rmat:16", *shared("wiki-Vote", "ca-CondMat"), "--output", "{out}"),)),
    "bench-cpu-capped": Preset(
        "out of core on the CPU: RMAT 18 uncapped, then spilling under a 15 MB memory limit",
        CPU, (
            dtri("bench", "--backend", "cpu", "--peers", "none", "--repeat", "2", "rmat:18",
                 "--output", "{out}"),
            dtri("bench", "--backend", "cpu", "--peers", "none", "--repeat", "2", "rmat:18",
                 "--memory-limit", "15MB", "--memory-budget", "15MB", "--spill-directory",
                 "/tmp/dtri-spill", "--output", "{out}")),
        "was bench-cpu-capped.sh: RMAT 18 (3,804,995 edges, 60.9 MB as oriented edges of 16 B) "
        "counted by two single-threaded workers, then with a per-worker memory limit and budget "
        "of a quarter of that, so that they spill (dtri.worker_memory records spilled_bytes); "
        "the counts must be equal; nothing else busy. Since the host memory plan (issue 41) "
        "--memory-limit is a worker's whole resident memory, and 15MB is refused (the least "
        "that works is named): host-memory-cpu-2core is its successor"),
    "host-memory-bins-cpu-2core": Preset(
        "host memory with a copy of each edge bin on every worker that reads it (871f3ef) "
        "against one copy (99b471e): R-MAT 20 on two CPU workers under --memory-limit 1GiB",
        CPU, (
            script("host_memory.py", "run", "rmat:20", "--backend", "cpu", "--workers", "2",
                   "--memory-limit", "1GiB", "--repeat", "1", "--out", "{out}"),),
        "issue 39's bin copies checked against issue 41's bound: the command at 871f3ef, then "
        "from a copy of 99b471e's tree (each line's commit), one after the other"),
    "host-memory-cpu-sampled-2core": Preset(
        "host memory bounded, again: R-MAT 22 on two workers under --memory-limit 2GiB "
        "against the same count without it, at e76b9de (the join's ranges cut by work summed "
        "over the keys' sample, 8c437fc)", CPU, (
            script("host_memory.py", "run", "rmat:22", "--backend", "cpu", "--workers", "2",
                   "--memory-limit", "2GiB", "--repeat", "1", "--out", "{out}"),),
        "issue 41, the unlimited run just before the limited one, right after the fresh-clone "
        "CI had ended; nothing else ran on the machine"),
    "host-memory-cpu-2core": Preset(
        "host memory bounded: R-MAT 22 on two workers under --memory-limit 2GiB against the "
        "same count without it, with the idle workers' resident memory", CPU, (
            script("host_memory.py", "overhead", "--backend", "cpu", "--workers", "2",
                   "--out", "{out}"),
            script("host_memory.py", "run", "rmat:22", "--backend", "cpu", "--workers", "2",
                   "--memory-limit", "2GiB", "--repeat", "2", "--out", "{out}"),
            script("host_memory.py", "run", "rmat:22", "--backend", "cpu", "--workers", "2",
                   "--memory-limit", "1GiB", "--repeat", "1", "--out", "{out}")),
        "each count a fresh dtri process, the unlimited run just before the limited one; the "
        "machine was shared with other work, so compare a line with its own peer only. The "
        "2 GiB runs keep every result in memory (the issue's target); under 1 GiB the "
        "workers spill. The first 2 GiB line's peer ran at 68cbf42, the limited run at "
        "2f44fb2: the same code but the progress lines' host note"),
    "bench-cpu-in-process": Preset(
        "dtri bench in process (synchronous scheduler) against every CPU peer", CPU, (
            dtri("bench", "--backend", "cpu", "--repeat", "3", "--output", "{out}",
                 *shared("facebook_combined", "wiki-Vote", "ca-CondMat"), "rmat:16", "rmat:18"),
        )),
    "bench-gpu-h200": Preset(
        "dtri bench against pylibcugraph: RMAT in GPU memory, then from local Parquet", H200, (
            dtri("bench", "--backend", "gpu", "--repeat", "3", "rmat:20", "rmat:22", "rmat:24",
                 "--output", "{out}", timeout=420),
            dtri("generate", "rmat:22", "-o", "{tmp}/rmat22.parquet", "--backend", "gpu",
                 timeout=120, keep=False),
            dtri("generate", "rmat:24", "-o", "{tmp}/rmat24.parquet", "--backend", "gpu",
                 timeout=120, keep=False),
            dtri("bench", "--backend", "gpu", "--repeat", "3", "{tmp}/rmat22.parquet",
                 "{tmp}/rmat24.parquet", "--output", "{out}", timeout=300)),
        "was bench-gpu.sh (issue 3): RMAT graphs (Graph500 parameters, seed 0), dtri and "
        "pylibcugraph in the same process on the same edge list"),
    "bench-gpu-h200-a9e1761": Preset(
        "dtri bench against pylibcugraph after the redesign", H200, (
            dtri("bench", "--backend", "gpu", "--repeat", "3", "--peers", "pylibcugraph",
                 "rmat:22", "rmat:24", "--output", "{out}"),)),
    "capped-rmat24-h200": Preset(
        "a log: a capped GPU count's task states every 10 s, then the count", H200, (
            script("probes/capped_diag.py", "24", "2GiB"),
            dtri("count", "--backend", "gpu", "--generate", "rmat:24", "--rmm-pool-size",
                 "2GiB", "--json")), log=True),
    "capped-rmat26-h200": Preset(
        "RMAT 26 uncapped and under an 8 GiB RMM pool", H200, (
            dtri("count", "--backend", "gpu", "--generate", "rmat:26", "--json"),
            dtri("count", "--backend", "gpu", "--generate", "rmat:26", "--rmm-pool-size", "8GiB",
                 "--json")),
        "the results' peaks were sampled by hand with nvidia-smi; staged_gpu.sh samples them"),
    "copy-probe-h200": Preset(
        "host<->device copy rates and the costs of page-locking", H200, (
            script("probes/copy_probe.py"),)),
    "cpu-balance-2core": Preset(
        "a CPU count over two workers with the join's ranges cut by the hash kernel's own "
        "per-edge cost (73) against 1024: R-MAT 21, alternated", CPU, tuple(
            dtri("bench", "--backend", "cpu", "--workers", "2", "--peers", peers, "--repeat",
                 "2", "rmat:21", "--output", "{out}")
            for peers in ("none", "none", "networkit", "none")),
        "issue 39: the first and third at 10f54af, the second and fourth from a copy of "
        "bef7183's tree right after each; networkit was not installed, so no line has a peer"),
    "sort-balance-cpu-2core": Preset(
        "the sort's ranges where one task runs at a time, cut by the fused join's work model "
        "(5b5ea55) or by the out-degrees alone: edges and wedges (fdc1d8f), then edges "
        "(8636f03); R-MAT 20 in memory on one CPU worker and in this process, under a 1 GiB "
        "budget (two partitions)", CPU, tuple(
            dtri("bench", "--backend", "cpu", *where, "--memory-budget", "1GiB", "--peers",
                 "none", "--repeat", "3", "rmat:20", "--output", "{out}")
            for _ in range(8)
            for where in (("--workers", "1"), ("--scheduler", "synchronous"))),
        "issue 41: .scratch's driver ran each pair of commands at the newer commit, then from "
        "a copy of 5b5ea55's tree, twice for fdc1d8f and twice for 8636f03; each line's commit "
        "says which tree ran"),
    "sampled-bounds-cpu-2core": Preset(
        "R-MAT 20 on two CPU workers (join tasks at once), the sort's ranges cut by the join's "
        "work summed over the keys' sample by a tree over the senders (3f1a8f6) or in one "
        "task beside the out-degrees (e08c415), alternated three times", CPU, tuple(
            dtri("bench", "--backend", "cpu", "--workers", "2", "--peers", "none", "--repeat",
                 "3", "rmat:20", "--output", "{out}",
                 values={"detail": {"note": note}})
            for _ in range(3)
            for note in ("the work summed over the sample by a tree (3f1a8f6)",
                         "the bounds cut from the samples in one task (e08c415)")),
        "issues 39 and 41: a driver in /tmp ran each pair, 3f1a8f6 from a git worktree of "
        "it, e08c415 from the repository; each line's commit says which tree ran"),
    "sort-sample-inproc-cpu-2core": Preset(
        "the sort's ranges where one task runs at a time, cut by the out-degrees of every key "
        "(dtri.sort-sample-stride 0) or of every 128th, sampled as the keys are made (the "
        "default since ba9d42b); R-MAT 20 in this process under a 1 GiB budget, alternated",
        CPU, tuple(
            dtri("bench", "--backend", "cpu", "--scheduler", "synchronous", "--memory-budget",
                 "1GiB", "--peers", "none", "--repeat", "3", "rmat:20", "--output", "{out}",
                 env={"DASK_DTRI__SORT_SAMPLE_STRIDE": stride},
                 values={"detail": {"note": f"dtri.sort-sample-stride {stride}"}})
            for _ in range(2) for stride in ("0", "128")),
        "issue 41"),
    "sort-sample-limit-cpu-2core": Preset(
        "the same on one CPU worker of one thread under --memory-limit 1GiB, R-MAT 21, each "
        "against the same count without the limit, strides 0, 128, 128, 0", CPU, tuple(
            script("host_memory.py", "run", "rmat:21", "--backend", "cpu", "--workers", "1",
                   "--memory-limit", "1GiB", "--repeat", "1", "--config",
                   f"dtri.sort-sample-stride={stride}", "--out", "{out}")
            for stride in (0, 128, 128, 0)),
        "issue 41"),
    "cpu-cold-2core": Preset(
        "cold start and peak memory of fresh processes, against NetworKit", CPU, (
            script("cpu_cold.py", "--repeat", "5", "--shared", "{data}"),)),
    "cpu-hash-2core": Preset(
        "the CPU kernel with and without hash probes", CPU, (
            script("cpu_hash_bench.py", "rmat:16", "rmat:18",
                   *shared("facebook_combined", "ca-CondMat"), "--repeat", "3"),)),
    "cpu-fresh-2core": Preset(
        "issue 71: dtri.count(edges, backend='cpu') in a fresh process of its own, 8 calls, "
        "against GraphBLAS's C<L> = L plus.pair L' and L plus.pair L, each arm a process of "
        "its own, and the tree before the change (fc0f982)", CPU, (
            script("cpu_fresh.py", "--baseline", "fc0f982", "--rounds", "3", "--data",
                   "{data}", "--out", "{out}"),),
        "the machine shared with other work: each round runs every arm once, so the ratios "
        "within a round (detail.round_ratios) are what count"),
    "cpu-fresh-cache-2core": Preset(
        "issue 71: the same against the tree before the compile wait (d56cf2d), numba's cache "
        "warm (each tree's kernels cached before the rounds), then cold (every process an "
        "empty NUMBA_CACHE_DIR, as a new install's first)", CPU, (
            script("cpu_fresh.py", "--baseline", "d56cf2d", "--rounds", "3", "--data",
                   "{data}", "--out", "{out}"),
            script("cpu_fresh.py", "--baseline", "d56cf2d", "--rounds", "3", "--numba-cache",
                   "cold", "--graphs", "ca-CondMat", "ca-GrQc", "ca-HepTh", "p2p-Gnutella24",
                   "--data", "{data}", "--out", "{out}"),
            *(script("cpu_fresh.py", "--rounds", "3", "--load-at", place, "--graphs",
                     "ca-CondMat", "ca-GrQc", "--data", "{data}", "--out", "{out}")
              for place in ("start", "within"))),
        "the machine shared with other work: the ratios within a round are what count; "
        "--load-at moves the kernels' load into the first call, to measure what it costs"),
    "dense-cpu-2core": Preset(
        "the count, per-vertex triangles and clustering in process against GraphBLAS, "
        "graphblas-algorithms and NetworKit on the same arrays; then from the files", CPU, (
            script("dense_cpu.py", "--data", "{data}", "--repeat", "5", "--out", "{out}"),),
        "issue 43; the machine shared with other work: each round runs every tool once, so "
        "the ratios within a line are what count"),
    "estimates-cpu-2core": Preset(
        "coverage of the estimates' intervals, and their speed against the count", CPU, (
            script("estimates.py", "coverage", "--seeds", "100", "--samples", "20000",
                   "{data}/*.txt.gz", "rmat:18"),
            script("estimates.py", "speed", "--repeat", "5", "rmat:18"),
            script("estimates.py", "speed", "--repeat", "5", "--no-clustering", "rmat:18"),
            script("estimates.py", "coverage", "--seeds", "400", "--first-seed", "100",
                   *shared("ca-HepTh", "ca-CondMat", "ca-GrQc", "email-Eu-core"),
                   "rmat:18"))),
    "estimates-h100": Preset(
        "coverage and speed of the estimates on the GPU", "one NVIDIA H100", (
            script("estimates.py", "coverage", "--backend", "gpu", "--seeds", "100", "rmat:18"),
            script("estimates.py", "speed", "--backend", "gpu", "--repeat", "5", "rmat:18"),
            script("estimates.py", "speed", "--backend", "gpu", "--repeat", "3", "rmat:24"),
            script("estimates.py", "speed", "--backend", "gpu", "--repeat", "3",
                   "--memory-budget", "48GiB", "rmat:24"),
            script("estimates.py", "speed", "--backend", "gpu", "--repeat", "3",
                   "--memory-budget", "48GiB", "--no-clustering", "rmat:24"),
            script("estimates.py", "speed", "--backend", "gpu", "--repeat", "2",
                   "--memory-budget", "48GiB", "--no-clustering", "rmat:22", "rmat:24")),
        "after python -m compileall (see in_process_gpu.sh)"),
    "graphlets-cpu-2core": Preset(
        "graphlet degrees against FGlT's C++ on one thread", CPU, (
            script("graphlets_bench.py", "rmat:16", *shared(*SNAP), "--cold", "--repeat", "3"),),
        "FGlT built by .peers/fglt/build.sh (see fglt_peer.py)"),
    "graphlets-gpu-h200": Preset(
        "graphlet degrees on one GPU: RMAT 18 all orbits and sigma0-4, RMAT 20 in memory and "
        "under an 8 GiB pool", H200, (
            script("graphlets_bench.py", "--backend", "gpu", "--no-peer", "rmat:18", "--repeat",
                   "3"),
            script("graphlets_bench.py", "--backend", "gpu", "--no-peer", "rmat:18", "--repeat",
                   "3", "--orbits", "sigma0-4"),
            script("graphlets_bench.py", "--backend", "gpu", "--no-peer", "rmat:20", "--repeat",
                   "1"),
            script("graphlets_bench.py", "--backend", "gpu", "--no-peer", "rmat:20", "--repeat",
                   "1", "--rmm-pool-size", "8GiB")),
        "was graphlets_gpu.sh (issue 18)"),
    "graphlets-rmat18-cpu-2core": Preset(
        "RMAT 18's graphlet degrees on the CPU (its hash equals the GPU's)", CPU, (
            script("graphlets_bench.py", "rmat:18", "--repeat", "1", "--no-peer"),)),
    "gzip-read-cpu": Preset(
        "reading one large gzip edge list in blocks", CPU, (
            script("gzip_read.py", "--edges", "20000000", "--blocksize", "16MiB"),),
        "run in two checkouts to compare"),
    "in-process-h100": Preset(
        "a new process's count, per-call times in a session beside pylibcugraph, the NetworkX "
        "backend, the two joins, CPU against GPU by size", "one NVIDIA H100", (
            script("in_process.py", "cli", "--runs", "3", "examples/karate.txt", timeout=150),
            script("in_process.py", "session", "--repeat", "20", "examples/karate.txt",
                   *shared("ca-CondMat", "wiki-Vote"), timeout=200),
            script("in_process.py", "nx", "--repeat", "5", *shared("ca-CondMat"), timeout=150),
            script("in_process.py", "nx", "--repeat", "5", *shared("ca-CondMat", "wiki-Vote"),
                   timeout=150),
            script("in_process.py", "joins", "--repeat", "30", "examples/karate.txt",
                   *shared("ca-CondMat"), timeout=150),
            script("in_process.py", "sizes", "--repeat", "5", "--scales", "6-20", timeout=200)),
        "on the GPU host through in_process_gpu.sh COMMIT, which sets the host up first"),
    "in-process-start-end-h200x4": Preset(
        "karate's dtri count on one GPU in a new process (in this process, no cluster): "
        "065cd0e (the CUDA driver started before the imports, the program ending once its "
        "output is out) against d58ee57, alternated twice",
        "one NVIDIA H200 of a 4 x H200 host", tuple(
            script("in_process.py", "cli", "--backends", "gpu", "--runs", "2",
                   "examples/karate.txt", timeout=150) for _ in range(4)),
        "issue 39 (kind nvidia-h200-x4): 065cd0e first in each round, then a copy of "
        "d58ee57's tree (each line's commit); the path was given absolute"),
    "in-process-regression-h100": Preset(
        "persisted R-MAT 22 and 24 and `dtri count --generate rmat:22` of this commit",
        "one NVIDIA H100", (
            orientation("rmat:22", "rmat:24", *ONE_GRAPH, "--repeat", "3", "--peer", "none",
                        timeout=120),
            dtri("count", "--generate", "rmat:22", "--backend", "gpu", "--json", timeout=60,
                 values={"benchmark": "cli-generate"})),
        "against an older commit: in_process_gpu.sh COMMIT OLD_CHECKOUT OLD_COMMIT alternates "
        "the two checkouts"),
    "intersect-balance-h200": Preset(
        "the work model that balances the fused join across GPUs", H200, (
            script("probes/intersect_balance.py", "25"),
            script("probes/intersect_balance.py", "26")),
        "the first line ran an older probe (one model, one fit). The R-MAT 25 lines of "
        "bef7183 ran the probe of b998dde before its last edits: their model `current` is "
        "`intersect-1024`, and `sources` counts a range's edges' sources. The R-MAT 26 lines "
        "ran b998dde as committed, on one H200 of a 4 x H200 host"),
    "intersect-balance-cpu-2core": Preset(
        "the work model that balances the fused join across CPU workers: each kernel's "
        "ranges timed alone on one thread", CPU, (
            script("probes/intersect_balance.py", "21", "--backend", "cpu", "--costs",
                   "73,256"),
            script("probes/intersect_balance.py", "20", "--backend", "cpu", "--costs", "73"),
            script("probes/intersect_balance.py", "20", "--backend", "cpu", "--costs",
                   "4096,12500")),
        "issue 39, at a4ba850 (the CPU then had one key, 1024), one at a time on "
        "this project's 2-core machine, quiet: R-MAT 21 takes the hash kernel, R-MAT 20 the "
        "marks kernel"),
    "issue2-largest-shared-h200": Preset(
        "the largest shared graphs counted on the GPU and on the CPU", "one H200 host", tuple(
            dtri("count", "--json", "--backend", backend, *shared(name))
            for backend in ("gpu", "cpu") for name in ("wiki-Vote", "ca-CondMat"))),
    "kernel-probe-h200": Preset(
        "one GPU's prepare steps and the fused join, search only against hash probes", H200, (
            script("probes/kernel_probe.py", "rmat:24", "--repeat", "2", "--tunings", "2"),)),
    "kernel-tuning-h200": Preset(
        "the fused join under each tuning", H200, (
            script("probes/kernel_probe.py", "rmat:20", "rmat:24", "--repeat", "2"),),
        "the results came from an earlier hybrid kernel (issue 20)"),
    "kernel-slots-h200": Preset(
        "the fused join with GPU hash tables of 2 slots a member (before) against 4 while a "
        "table takes at most 64 KiB (hash-slots-per-member, hash-spread-max-bytes), "
        "alternated, the count and the credits", H200, (
            *(script("probes/kernel_probe.py", "rmat:24", "rmat:26", "--pick", "11,1",
                     "--rounds", "3", "--repeat", "2", *credits,
                     env={"CUDA_VISIBLE_DEVICES": "0"}) for credits in ((), ("--credits",))),),
        "the lines of each tuning, then each graph's line with every run; one H200, kind "
        "nvidia-h200"),
    "ktruss-rmat22-h200": Preset(
        "k-truss against pylibcugraph's k_truss_subgraph", H200, (
            script("analytics_bench.py", "rmat:22", "--backend", "gpu", "--repeat", "2", "--k",
                   "3", "8", "32"),)),
    "local-gpu-h200x2-ca-CondMat": Preset(
        "cluster/local-gpu.sh on ca-CondMat", "one host with 2 NVIDIA H200", (
            Command(("bash", "cluster/local-gpu.sh", *shared("ca-CondMat")), family="count",
                    env={"DTRI_ARGS": "--json"}),)),
    "local-gpu-h200x2-karate": Preset(
        "cluster/local-gpu.sh on karate", "one host with 2 NVIDIA H200", (
            Command(("bash", "cluster/local-gpu.sh", "examples/karate.txt"), family="count",
                    env={"DTRI_ARGS": "--json"}),)),
    "nx-backend-rmat18-cpu-2core": Preset(
        "nx.triangles(G, backend='dtri') against NetworkX's own", CPU, (
            script("nx_backend_bench.py", "rmat:18"),)),
    "nx-backend-rmat18-h200": Preset(
        "the NetworkX backend on the GPU", H200, (
            script("nx_backend_bench.py", "rmat:18", "--backend", "gpu", "--nx-repeat", "0",
                   timeout=200),),
        "on a host without NetworkX, through nx_backend_gpu.sh"),
    "orientation-order-h200": Preset(
        "every orientation x order with work counters, pylibcugraph in the same run", H200, (
            orientation("rmat:22", "rmat:24", "{data}/*.txt.gz", "--repeat", "2"),
            orientation("rmat:26", "--repeat", "2", "--peer", "none", *ONE_GRAPH)),
        "pylibcugraph's libraries set up as orientation_gpu.sh sets them"),
    "out-of-core-h100": Preset(
        "counts under RMM pools from generated graphs and Parquet files", "one NVIDIA H100", (
            out_of_core("run", "--timeout", "570", "rmat:28@16GiB+triangles"),
            out_of_core("peer", "rmat:26"),
            out_of_core("run", "--timeout", "190", "rmat:26"),
            out_of_core("write", "rmat:28", "{tmp}/r28", "--files", "16", "--int32"),
            out_of_core("run", "--timeout", "370", "{tmp}/r28@16GiB"),
            out_of_core("write", "rmat:26", R26, "--files", "4"),
            out_of_core("run", "--timeout", "140", R26, f"{R26}@4GiB"),
            out_of_core("run", "--timeout", "440", "rmat:26@2GiB"),
            orientation("rmat:24", *ONE_GRAPH, "--repeat", "2", "--peer", "none"),
            out_of_core("write", "rmat:26", "{tmp}/r26one", "--files", "1"),
            out_of_core("run", "--timeout", "110", "{tmp}/r26one@4GiB"),
            out_of_core("write", "rmat:20", "{tmp}/r20k", "--files", "1000"),
            out_of_core("run", "--timeout", "65", "{tmp}/r20k@4GiB")),
        "the results' paths were /tmp/r26 and so on"),
    "out-of-core-h200": Preset(
        "counts under RMM pools from generated graphs and Parquet files", H200, (
            out_of_core("write", "rmat:26", R26, "--files", "4"),
            out_of_core("run", R26, f"{R26}@4GiB"),
            out_of_core("run", "--timeout", "570", "rmat:26@2GiB"),
            out_of_core("run", "--timeout", "370", "rmat:28@16GiB"),
            out_of_core("run", "--timeout", "530", "rmat:28@16GiB:4GiB"),
            out_of_core("run", "--timeout", "510", "rmat:28@16GiB+triangles"),
            orientation("rmat:24", *ONE_GRAPH, "--repeat", "2", "--peer", "none"),
            script("probes/stage_profile.py", R26, "1", keep=False,
                   env={"DTRI_RMM_POOL": "4GiB"})),
        "the stage profile (where the 4 GiB run spent its time) is not among the results"),
    "rmat26-budgets-h200": Preset(
        "RMAT 26 under several memory budgets, and the default with pylibcugraph", H200, (
            *(orientation("rmat:26", *ONE_GRAPH, "--repeat", "2", "--memory-budget", budget,
                          "--peer", "none")
              for budget in ("70GiB", "48GiB", "130GiB", "100GiB")),
            orientation("rmat:26", *ONE_GRAPH, "--repeat", "2"))),
    "multi-gpu-h200x2": Preset(
        "strong scaling by protocol and worker count, with each worker's moved bytes",
        "one host with 2 NVIDIA H200", (
            multi_gpu("rmat:22", "rmat:24", workers="4", devices="0,1,0,1", protocols="tcp",
                      decompositions="1d,2d", repeat=1),
            multi_gpu("rmat:20", "rmat:22", "rmat:24", "rmat:25", "rmat:26", workers="1,2,auto",
                      protocols="tcp", decompositions="1d", repeat=2),
            multi_gpu("rmat:22", "rmat:24", "rmat:25", "rmat:26", workers="1,2", protocols="ucx",
                      decompositions="1d", repeat=2)),
        "at de951cb (issue 39), distributed-ucxx installed; the first command puts four plain "
        "Dask workers on the two GPUs for the bytes of a 2 x 2 grid (its times are not four "
        "GPUs'); its auto lines ran before b7ad396, which sizes a dtri.Session's cluster by "
        "its first input: R-MAT 25 and 26 kept both GPUs"),
    "multi-gpu-h200x4": Preset(
        "strong scaling on 4 GPUs by decomposition, and --workers auto", "one host with 4 "
        "NVIDIA H200", (
            multi_gpu("rmat:25", "rmat:26", workers="1,4", protocols="ucx", decompositions="1d,2d",
                      repeat=1),
            multi_gpu("rmat:24", workers="4", protocols="tcp", decompositions="1d,2d", repeat=1),
            multi_gpu("rmat:25", "rmat:26", workers="auto", protocols="tcp,ucx",
                      decompositions="1d", repeat=1)),
        "at b7ad396 (issue 39), distributed-ucxx installed; one run each (the device time "
        "left): the one-worker R-MAT 25 1d line (14.6 s) is that cluster's first count, its "
        "kernels compiled, and the auto lines are each a fresh cluster's first count"),
    "multi-gpu-h100x4": Preset(
        "strong scaling on 4 GPUs by decomposition after the balanced 2D rounds, and R-MAT 27 "
        "on four", "one host with 4 NVIDIA H100 (80 GB)", (
            multi_gpu("rmat:25", "rmat:26", workers="1,4", protocols="ucx", decompositions="1d,2d",
                      repeat=2),
            multi_gpu("rmat:27", workers="4", protocols="ucx", decompositions="1d", repeat=1),
            multi_gpu("rmat:25", "rmat:26", workers="1,4", protocols="ucx", decompositions="1d,2d",
                      repeat=2, device_memory_limit="0.95")),
        "at f68d68f (issue 39), distributed-ucxx installed; R-MAT 27 did not fit one H100, so "
        "its line has no one-worker peer; the last command at fe4d7ac, dask-cuda's spill "
        "threshold raised from 80% to 95% of each GPU: the same times"),
    "multi-gpu-pool-h100x4": Preset(
        "strong and weak scaling on 4 GPUs with the workers' RMM pool (as dtri's own clusters "
        "have it), 2D on four, and --workers auto over TCP against one GPU", "one host with 4 "
        "NVIDIA H100 (80 GB)", (
            multi_gpu("rmat:25", "rmat:26", workers="1,2,4", protocols="ucx", decompositions="1d",
                      repeat=2),
            multi_gpu("rmat:27", workers="2,4", protocols="ucx", decompositions="1d", repeat=2),
            multi_gpu("rmat:26", workers="4", protocols="ucx", decompositions="2d", repeat=2),
            multi_gpu("rmat:20", "rmat:22", "rmat:24", "rmat:25", "rmat:26", workers="1,auto",
                      protocols="tcp", decompositions="1d", repeat=2),
            multi_gpu("rmat:27", workers="auto", protocols="tcp", decompositions="1d", repeat=1)),
        "issue 39, at 7d4929d (the lines' commit), distributed-ucxx installed; before it "
        "multi_gpu.py started its clusters without the RMM pool that dtri gives its own (so "
        "the earlier multi-gpu files time every allocation as a cudaMalloc); R-MAT 27 does "
        "not fit one H100, and over TCP --workers auto kept one GPU for it, which ran out of "
        "memory (no line; 889a900 takes enough GPUs to hold it)"),
    "multi-gpu-summaries-h200x2": Preset(
        "strong scaling over UCX on 1 and 2 GPUs with the partitions' summaries gathered one "
        "collection each (01d16b6)", "one host with 2 NVIDIA H200", (
            multi_gpu("rmat:25", "rmat:26", workers="1,2", protocols="ucx", decompositions="1d",
                      repeat=3),),
        "issue 39, at 01d16b6 (kind nvidia-h100-x2, which came as 2 x H200)"),
    "multi-gpu-cli-ab-h200x2": Preset(
        "the whole dtri count command on two GPUs with the input frames imported while the "
        "cluster starts (01d16b6) against ae9f727, alternated", "one host with 2 NVIDIA H200", (
            multi_gpu("rmat:26", cli=True, workers="2", protocols="ucx", decompositions="1d",
                      repeat=1, cli_timeout=90),),
        "issue 39: the command four times, alternating 01d16b6 and a copy of ae9f727's tree "
        "(each line's commit); the first line (31.7 s) was the host's first dtri process, its "
        "caches cold, so only the second pair compares"),
    "multi-gpu-owners-h200x2": Preset(
        "strong scaling over UCX on 1 and 2 GPUs with the partitions dealt back and forth and "
        "a copy of each edge bin built on every worker that reads it (708d7da), against "
        "99b471e on the same host", "one host with 2 NVIDIA H200", (
            multi_gpu("rmat:25", "rmat:26", workers="1,2", protocols="ucx", decompositions="1d",
                      repeat=3),
            multi_gpu("rmat:26", workers="1,2", protocols="ucx", decompositions="1d", repeat=3)),
        "issue 39 (kind nvidia-h100-x2, which came as 2 x H200): the first command at 708d7da, "
        "the second right after it from a copy of 99b471e's tree (its lines' commit)"),
    "multi-gpu-head-h200x4": Preset(
        "strong and weak scaling over UCX on 1, 2 and 4 GPUs, R-MAT 27 on 2 and 4, and 1D "
        "against 2D over TCP on four", "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:25", "rmat:26", workers="1,2,4", protocols="ucx", decompositions="1d",
                      repeat=2),
            multi_gpu("rmat:27", workers="2,4", protocols="ucx", decompositions="1d", repeat=2),
            multi_gpu("rmat:26", workers="4", protocols="tcp", decompositions="1d,2d", repeat=1)),
        "issue 39, at ae9f727 (kind nvidia-h100-x4, which came as 4 x H200)"),
    "multi-gpu-cli-h200x4": Preset(
        "R-MAT 28 end to end on four GPUs: the whole dtri count command in a new process",
        "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:28", cli=True, workers="4", protocols="ucx", decompositions="1d",
                      repeat=1, cli_timeout=200),),
        "issue 39, at ae9f727 (kind nvidia-h100-x4, which came as 4 x H200); one run, no "
        "one-GPU peer (issue 39 gives 97 s for R-MAT 28 on one H200 under a 16 GiB pool)"),
    "multi-gpu-narrow-h200x4": Preset(
        "strong scaling over UCX on 1, 2 and 4 GPUs with the vertex-wide trees in int32, "
        "against 0cb3a4f's int64 trees (R-MAT 26), and R-MAT 27 on 1, 2 and 4",
        "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:26", workers="1,2,4", protocols="ucx", decompositions="1d", repeat=3),
            multi_gpu("rmat:26", workers="1,2,4", protocols="ucx", decompositions="1d", repeat=3),
            multi_gpu("rmat:27", workers="1,2,4", protocols="ucx", decompositions="1d", repeat=3),
            multi_gpu("rmat:27", workers="1,2,4", protocols="ucx", decompositions="1d", repeat=3)),
        "issue 39 (kind nvidia-h100-x4, which came as 4 x H200), one session: the first "
        "command at c7e363e, the second right after it from a copy of 0cb3a4f's tree (its "
        "lines' commit), the R-MAT 27 command twice at c7e363e. Between the R-MAT 27 runs, and "
        "after the R-MAT 26 ones, the same commands ran with DASK_DTRI__EXCHANGE_EDGE_COST="
        "2048, a knob that 78a9c36 removed again: those lines are not kept"),
    "multi-gpu-balance-h200x4": Preset(
        "the fused join's per-edge cost at 2800 steps (join-edge-cost-gpu) against 1024 "
        "(a copy of bef7183's tree, run right after): R-MAT 25 and 26, then R-MAT 27, over "
        "UCX on 1, 2 and 4 GPUs",
        "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:25", "rmat:26", workers="1,2,4", protocols="ucx",
                      decompositions="1d", repeat=3),
            multi_gpu("rmat:26", workers="1,4", protocols="ucx", decompositions="1d", repeat=3),
            multi_gpu("rmat:27", workers="1,2,4", protocols="ucx", decompositions="1d",
                      repeat=3)),
        "issue 39 (kind nvidia-h200-x4), one session: the first and third commands at "
        "b998dde, the second from a copy of bef7183's tree right after the first"),
    "multi-gpu-tcp-auto-h200x4": Preset(
        "--workers auto over TCP against one GPU: R-MAT 20 to 27, each in memory, best of two; "
        "auto ran R-MAT 20 to 26 in this process and started four TCP workers for R-MAT 27, "
        "of which it kept one",
        "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:20", "rmat:21", "rmat:22", "rmat:23", "rmat:24", "rmat:25",
                      "rmat:26", "rmat:27", workers="1,auto", protocols="tcp",
                      decompositions="1d", repeat=2),),
        "issue 39 (kind nvidia-h200-x4), at 262ed1a; each auto line's peer is the one-worker "
        "line of the same process"),
    "multi-gpu-lazy-degree-h200x4": Preset(
        "a count that waits for no degree (the exact degrees counted when an analytic first "
        "reads them) against bb3ff4a's degree stage (a copy of its tree, run right after): "
        "R-MAT 26 over UCX on 1 and 4 GPUs",
        "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:26", workers="1,4", protocols="ucx", decompositions="1d", repeat=3),
            multi_gpu("rmat:26", workers="1,4", protocols="ucx", decompositions="1d", repeat=3)),
        "issue 39 (kind nvidia-h200-x4), one session: the first command at 0af784b, the second "
        "from a copy of bb3ff4a's tree right after it"),
    "multi-gpu-copies-h200x4": Preset(
        "each worker's copy of an edge bin without the slices its edges cannot reach, "
        "against c7e363e's whole copies: R-MAT 27 over UCX and R-MAT 26 over TCP on four, "
        "then R-MAT 25 and 26 over UCX on 1, 2 and 4 GPUs",
        "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:27", workers="1,2,4", protocols="ucx", decompositions="1d", repeat=3),
            multi_gpu("rmat:27", workers="1,2,4", protocols="ucx", decompositions="1d", repeat=3),
            multi_gpu("rmat:26", workers="4", protocols="tcp", decompositions="1d", repeat=1),
            multi_gpu("rmat:26", workers="4", protocols="tcp", decompositions="1d", repeat=1),
            multi_gpu("rmat:25", "rmat:26", workers="1,2,4", protocols="ucx", decompositions="1d",
                      repeat=3)),
        "issue 39 (kind nvidia-h100-x4, which came as 4 x H200), one session: the first, "
        "third and fifth commands at f4e0c52, the second and fourth right after the one "
        "before them from a copy of c7e363e's tree (their lines' commit)"),
    "multi-gpu-work32-h200": Preset(
        "R-MAT 26 on one GPU with the fused join's work sent as float32: the sorted "
        "partitions' edges are those of the float64 work's runs (multi-gpu-narrow-h200x4)",
        "one NVIDIA H200", (
            multi_gpu("rmat:26", workers="1", protocols="tcp", decompositions="1d", repeat=2),),
        "issue 39, at 32bed18 (kind nvidia-h200), a check of the cuts, not a timing"),
    "multi-gpu-cli-forkserver-h200x4": Preset(
        "R-MAT 28 end to end on four GPUs, the workers forked from dtri's server "
        "(dtri.worker-start-gpu: forkserver) against spawned, alternated: the whole dtri count "
        "command in a new process, best of two each",
        "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:28", cli=True, workers="4", protocols="ucx", decompositions="1d",
                      repeat=2, worker_starts="forkserver,spawn", cli_timeout=120),),
        "issue 39, at 3f3691a (kind nvidia-h200-x4); the spawned line's peer is the forked one"),
    "multi-gpu-cli-ahead-h200x4": Preset(
        "R-MAT 28 end to end on four GPUs with the input's modules imported while the "
        "cluster starts: the whole dtri count command in a new process, best of two",
        "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:28", cli=True, workers="4", protocols="ucx", decompositions="1d",
                      repeat=2, cli_timeout=90),),
        "issue 39, at c7e363e (kind nvidia-h100-x4, which came as 4 x H200); no one-GPU peer "
        "(host-memory-h200 has R-MAT 28 on one of this host's GPUs under a 16 GiB pool)"),
    "multi-gpu-cli-server-h200x4": Preset(
        "R-MAT 28 end to end on four GPUs with the workers' server started as the GPU session "
        "is made (47e1c59, reverted in f7ac2b5: no gain), alternated with 09e6661: the whole "
        "dtri count command in a new process, best of two each",
        "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:28", cli=True, workers="4", protocols="ucx", decompositions="1d",
                      repeat=2, cli_timeout=90),
            multi_gpu("rmat:28", cli=True, workers="4", protocols="ucx", decompositions="1d",
                      repeat=2, cli_timeout=90)),
        "issue 39 (kind nvidia-h200-x4), two rounds in one session: the first command at "
        "47e1c59, the second right after it from a copy of 09e6661's tree (its lines' commit)"),
    "multi-gpu-readings-h200x4": Preset(
        "every worker meter read in one round trip where a preparation begins and ends "
        "(ab30c0d) against three (09e6661, a copy of its tree): R-MAT 26 and 27 in memory over "
        "UCX on 1 and 4 GPUs, R-MAT 26 again in the other order, and R-MAT 28's whole dtri "
        "count command on four, alternated",
        "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:26", "rmat:27", workers="1,4", protocols="ucx",
                      decompositions="1d", repeat=3),
            multi_gpu("rmat:26", "rmat:27", workers="1,4", protocols="ucx",
                      decompositions="1d", repeat=3),
            multi_gpu("rmat:26", workers="1,4", protocols="ucx", decompositions="1d", repeat=3),
            multi_gpu("rmat:26", workers="1,4", protocols="ucx", decompositions="1d", repeat=3),
            multi_gpu("rmat:28", cli=True, workers="4", protocols="ucx", decompositions="1d",
                      repeat=2, cli_timeout=90),
            multi_gpu("rmat:28", cli=True, workers="4", protocols="ucx", decompositions="1d",
                      repeat=2, cli_timeout=90)),
        "issue 39 (kind nvidia-h200-x4): the first two commands (ab30c0d, then 09e6661) and "
        "the last two (alternated twice) in one session; the middle two (09e6661, then "
        "ab30c0d) in a later one, on a fresh host. Each line's commit says which tree ran"),
    "multi-gpu-sampled-bounds-h200x4": Preset(
        "R-MAT 26 and 27 in memory on 1, 2 and 4 GPUs over UCX, the sort's ranges for join "
        "tasks at once cut in one task from every sender's sample (dtri.sort-sample-stride "
        "128, e08c415) or by every key's work (0), at 8f247dc",
        "one host with 4 NVIDIA H200, kind nvidia-h100-x4", tuple(
            script("multi_gpu.py", graph, "--workers", "1,2,4", "--protocols", "ucx",
                   "--decompositions", "1d", "--repeat", "2", "--out", "{out}",
                   env={"DASK_DTRI__SORT_SAMPLE_STRIDE": stride},
                   values={"detail": {"note": f"dtri.sort-sample-stride {stride}"}})
            for graph, stride in (("rmat:26", "128"), ("rmat:26", "0"), ("rmat:27", "0"),
                                  ("rmat:27", "128"), ("rmat:27", "0"))),
        "issue 39, after one count of R-MAT 18 had compiled the kernels. The session ran "
        "R-MAT 27 at stride 128 twice; the first run's file did not come back from the host "
        "(its lines were 4.086, 2.324 and 1.521 s on 1, 2 and 4 GPUs), so its second run "
        "follows, then stride 0 again"),
    "multi-gpu-sampled-work-h200x4": Preset(
        "R-MAT 26 in memory on 1, 2 and 4 GPUs over UCX, the sort's ranges for join tasks at "
        "once cut by their work summed over every key (dtri.sort-sample-stride 0) or over "
        "every 128th (the default since 8c437fc), alternated 128, 0, 0, 128",
        "one host with 4 NVIDIA H200, kind nvidia-h100-x4", tuple(
            script("multi_gpu.py", "rmat:26", "--workers", "1,2,4", "--protocols", "ucx",
                   "--decompositions", "1d", "--repeat", "2", "--out", "{out}",
                   env={"DASK_DTRI__SORT_SAMPLE_STRIDE": stride},
                   values={"detail": {"note": f"dtri.sort-sample-stride {stride}"}})
            for stride in ("128", "0", "0", "128")),
        "issue 39, at 8c437fc, after one count of R-MAT 18 had compiled the kernels; the "
        "one-worker line balances edges, by every key's out-degrees at stride 0 and by the "
        "sample's at 128 (ba9d42b)"),
    "multi-gpu-end-h200x4": Preset(
        "R-MAT 28's whole dtri count command on four GPUs, strong scaling over UCX on 1, 2 and "
        "4 GPUs (R-MAT 26 and 27, in memory) and R-MAT 25 on one for weak scaling, at 065cd0e "
        "(the CUDA driver started before the imports; the program ending once its output is "
        "out)", "one host with 4 NVIDIA H200", (
            multi_gpu("rmat:28", cli=True, workers="4", protocols="ucx", decompositions="1d",
                      repeat=2, cli_timeout=90),
            multi_gpu("rmat:28", cli=True, workers="4", protocols="ucx", decompositions="1d",
                      repeat=2, cli_timeout=90),
            multi_gpu("rmat:26", "rmat:27", workers="1,2,4", protocols="ucx",
                      decompositions="1d", repeat=3),
            multi_gpu("rmat:25", workers="1", protocols="ucx", decompositions="1d", repeat=3)),
        "issue 39 (kind nvidia-h200-x4): the first line at 667e535 (the driver started first, "
        "not yet the program's end) in one session, the rest at 065cd0e in a later one on a "
        "fresh host, whose first R-MAT 28 run (20.2 s) was that host's first R-MAT 28 process"),
    "multi-gpu-messages-h200x2": Preset(
        "dtri.message-interval (740f37e, reverted in 419fdb7): the local cluster's scheduler "
        "and workers, and dtri's client, sending Dask's control messages at once (0ms) "
        "against Dask's own batching intervals (null), R-MAT 25 and 26 in memory over UCX on "
        "1 and 2 GPUs, the whole sweep under each in turn, twice",
        "one host with 2 NVIDIA H200 (kind nvidia-h100-x2)", (
            script("multi_gpu.py", "rmat:25", "rmat:26", "--workers", "1,2", "--protocols",
                   "ucx", "--decompositions", "1d", "--repeat", "3", "--message-intervals",
                   "null,0ms,null,0ms", "--out", "{out}"),),
        "issue 39: run at 740f37e, whose multi_gpu.py had --message-intervals; the option "
        "left with the revert, so the command runs from a copy of 740f37e's tree. Each line's "
        "detail names its message_interval"),
    "multi-gpu-start-end-h200x4": Preset(
        "a small graph's whole dtri count command on four GPUs, where start and end are most "
        "of it: 065cd0e (the CUDA driver started before the imports, the program ending once "
        "its output is out) against d58ee57, alternated three times",
        "one host with 4 NVIDIA H200", tuple(
            multi_gpu("rmat:16", cli=True, workers="4", protocols="ucx", decompositions="1d",
                      repeat=1, cli_timeout=90) for _ in range(6)),
        "issue 39 (kind nvidia-h200-x4): 065cd0e first in each round, then a copy of "
        "d58ee57's tree (each line's commit), as alternate_commits.sh runs them"),
    "multi-gpu-head-h100x2": Preset(
        "strong scaling over UCX on 1 and 2 GPUs at a0131f7 (one exchange, trees and the "
        "sort's splits placed where their inputs are)", "one host with 2 NVIDIA H100 (80 GB)", (
            multi_gpu("rmat:25", "rmat:26", workers="1,2", protocols="ucx", decompositions="1d",
                      repeat=2),),
        "issue 39, at a0131f7 (kind nvidia-h100-x2; the 4-GPU kinds were not lent)"),
    "multi-gpu-once-h100x2": Preset(
        "the preparation exchanging edges once against 7d4929d (two exchanges), alternated "
        "on one host, over UCX and TCP, and --workers auto over TCP against one GPU",
        "one host with 2 NVIDIA H100 (80 GB)", (
            multi_gpu("rmat:25", "rmat:26", workers="1,2", protocols="ucx", decompositions="1d",
                      repeat=2),
            multi_gpu("rmat:27", workers="2", protocols="ucx", decompositions="1d", repeat=2),
            multi_gpu("rmat:20", "rmat:22", "rmat:24", "rmat:26", workers="1,auto", protocols="tcp",
                      decompositions="1d", repeat=2),
            multi_gpu("rmat:26", workers="2", protocols="tcp", decompositions="1d", repeat=1)),
        "issue 39, at 196d448 (the lines' commit); the 7d4929d lines ran the first and the "
        "last command from a copy of that commit's tree on the same host, between the "
        "196d448 runs (kind nvidia-h100-x2: the 4-GPU kind was not lent then)"),
    "first-run-cpu-2core": Preset(
        "issue 69: a machine's first dtri count of R-MAT 18 (numba's cache empty) against its "
        "second, this tree and cff943c (the parallel marks kernel) each in a tree, a process "
        "and a cache of its own", CPU,
        (script("first_run.py", "rmat:18", "--baseline", "cff943c", "--repeat", "3",
                "--folder", "{tmp}", "--out", "{out}"),)),
    "scale-out-cpu-2core": Preset(
        "issue 68: dtri count of R-MAT 18 and 20 read from one text file, through --scheduler, "
        "on local clusters of 4, 9 and 16 single-threaded CPU workers (1.4 GiB each), each arm "
        "on a cluster and in a process of its own: this tree, and 4870299 from a git worktree",
        CPU, (script("scale_out.py", "rmat:18", "rmat:20", "--workers", "4,9,16",
                     "--baseline", "4870299", "--folder", "{tmp}", "--out", "{out}"),),
        "every count checked against the baseline's"),
    "scale-out-netns-cpu-2core": Preset(
        "issue 68: the same count of R-MAT 18 on 1, 2 and 4 workers, each in a network "
        "namespace of its own behind veth links shaped to 1 Gbit/s by tc (cluster/netns.py, "
        "as root), against the same workers unshaped, with the kernel's received bytes",
        CPU, (script("scale_out.py", "rmat:18", "--nodes", "1,2,4", "--rate", "1gbit",
                     "--folder", "{tmp}", "--out", "{out}"),),
        "this kernel has no netem qdisc: the links are shaped in rate only, no added delay"),
    "wire-format-cpu-2core": Preset(
        "issue 68: every 2D block of R-MAT 18 and 20 (grids 2 x 2 to 4 x 4) packed and "
        "unpacked in each wire format on the CPU, best of 3", CPU,
        (script("wire_formats.py", "rmat:18", "rmat:20", "--sides", "2,3,4", "--backend",
                "cpu", "--out", "{out}"),)),
    "worker-malloc-cpu-2core": Preset(
        "a count on a local CPU cluster whose workers keep glibc's adaptive malloc against "
        "Dask's MALLOC_TRIM_THRESHOLD_=65536, alternated", CPU, (
            script("worker_malloc.py", "rmat:20", "--workers", "2", "--repeat", "2",
                   "--out", "{out}"),),
        "at cc7bb75 (with the dtri.adaptive-malloc change not yet committed: the key existed "
        "and each run set it), on this project's 2-core machine, quiet"),
    "saved-graph-h100": Preset(
        "a --checkpoint count of R-MAT 26 killed with SIGKILL mid-join then run again, and "
        "counting a saved R-MAT 26 against its raw Parquet files", "one NVIDIA H100 (80 GB)", (
            script("saved_graph.py", "resume", "rmat:26", "--kill-at", "0.5", "--dtri-args",
                   "--backend gpu --memory-budget 4GiB", "--out", "{out}"),
            script("saved_graph.py", "count", "rmat:26", "--files", "4", "--repeat", "2",
                   "--dtri-args", "--backend gpu", "--out", "{out}")),
        "issue 41, at f68d68f, on GPU 2 of a 4 x H100 host while the GPU tests and the "
        "host-memory run used the others (CUDA_VISIBLE_DEVICES); at 069af2c and 38d151e on "
        "one H100; at 8bf3317 (every run in process) on GPU 0 of a 2 x H100 host, the other "
        "idle; at 190b54d (in process, the saved graph read in one task) the resume command "
        "alone, on one H100; at 321a458 (Parquet on the device through pylibcudf, without "
        "cuDF's import) and then c5a6e18 (before, from a copy of its tree) on one H100 (kind "
        "nvidia-h100-x1), 321a458's after one count of R-MAT 20 had compiled the kernels; "
        "at e204e96 (the device's writes through the page cache) on one other H100 host, "
        "after one count of R-MAT 20: the first resume line (whose run without a checkpoint "
        "took 8.73 s, against 4.65 s to 6.23 s elsewhere: the host was slow then), then, "
        "after probes and the GPU tests, the count and the resume again"),
    "placement-h100": Preset(
        "a new process's count where dtri places it (in process where the GPU holds the "
        "graph) against a one-worker local cluster, alternated", "one NVIDIA H100 (80 GB)", (
            script("in_process.py", "placement", "--runs", "2", "rmat:22", "rmat:24",
                   "rmat:26", "--out", "{out}", timeout=250),),
        "issue 41 and the one-GPU user, at 8bf3317, on GPU 0 of a 2 x H100 host "
        "(CUDA_VISIBLE_DEVICES=0), the other idle"),
    "host-memory-h100": Preset(
        "R-MAT 28 under a 16 GiB RMM pool with --memory-limit 32GiB against the same count "
        "without it", "one NVIDIA H100 (80 GB)", (
            script("host_memory.py", "run", "rmat:28", "--backend", "gpu", "--memory-limit",
                   "32GiB", "--repeat", "1", "--timeout", "285", "--spill-directory",
                   "/tmp/spill28", "--out", "{out}", "--", "--rmm-pool-size", "16GiB"),),
        "issue 41, at f68d68f, on GPU 3 of a 4 x H100 host beside other runs; the limited "
        "run was stopped at 285 s (the device time left), so it has no count: the line "
        "records that, and the unlimited run's 138 GB resident"),
    "saved-graph-end-h200": Preset(
        "counting a saved R-MAT 26 against its raw Parquet files, each command ending once its "
        "output is out (0a9e614)", "one NVIDIA H200", (
            script("saved_graph.py", "count", "rmat:26", "--files", "4", "--repeat", "2",
                   "--dtri-args", "--backend gpu", "--out", "{out}"),),
        "issue 41, at 0a9e614 (kind nvidia-h200), right after the GPU tests on that host"),
    "cli-parquet-cpu-2core": Preset(
        "dtri count of R-MAT 16 as 4 Parquet files and as 4 SNAP text files, each in a new "
        "process, the CPU's Parquet read into arrays (2fe160e) against a Dask frame "
        "(e3caba3), alternated twice", CPU, (
            dtri("generate", "rmat:16", "-o", "{tmp}/r16", "--partitions", "4", keep=False),
            dtri("generate", "rmat:16", "-o", "{tmp}/r16snap", "--format", "snap",
                 "--partitions", "4", keep=False),
            *(script("in_process.py", "cli", "--backends", "cpu", "--runs", "3", "{tmp}/r16",
                     "{tmp}/r16snap", "--out", "{out}", commit=commit, timeout=300)
              for _ in range(2) for commit in (None, "e3caba3"))),
        "no issue's target; each line's commit says which tree ran. The file's first lines "
        "(0e4ee0b) ran the working tree in both arms, PYTHONPATH naming e3caba3's copy from "
        "the repository root, and were replaced by these, each tree run from its own folder"),
    "cli-parquet-gpu-h200x2": Preset(
        "dtri count of R-MAT 16 and 24 as 4 Parquet files and of R-MAT 16 as 4 SNAP text "
        "files, each in a new process on one GPU: the in-process read into arrays (host "
        "below dtri.device-parquet-min-rows, device from it; e32ff74) against cuDF's frames "
        "(e335649), alternated twice", "one NVIDIA H200 of a 2 x H200 host", (
            *(dtri("generate", f"rmat:{scale}", "-o", f"{{tmp}}/r{scale}", "--partitions", "4",
                   "--backend", "gpu", keep=False) for scale in (16, 24)),
            dtri("generate", "rmat:16", "-o", "{tmp}/r16snap", "--format", "snap",
                 "--partitions", "4", "--backend", "gpu", keep=False),
            *(script("in_process.py", "cli", "--backends", "gpu", "--runs", "2", "{tmp}/r16",
                     "{tmp}/r16snap", "{tmp}/r24", "--out", "{out}", commit=commit,
                     env={"CUDA_VISIBLE_DEVICES": "0"}, timeout=300)
              for _ in range(2) for commit in (None, "e335649"))),
        "the one-GPU user (no issue's target), at e32ff74 with DTRI_COMMIT set (the host's "
        "copy of .git was older), each line's commit says which tree ran"),
    "saved-graph-threads-h200x2": Preset(
        "counting a saved R-MAT 26 against its raw Parquet files, the files read with "
        "dtri.device-read-threads (8) KvikIO threads (2e89623, whose early CUDA context "
        "9263b4c took out again)", "one NVIDIA H200 of a 2 x H200 host", (
            script("saved_graph.py", "count", "rmat:26", "--files", "4", "--repeat", "2",
                   "--dtri-args", "--backend gpu", "--out", "{out}",
                   env={"CUDA_VISIBLE_DEVICES": "0"}),),
        "issue 41, at 2e89623 (kind nvidia-h200-x2), before the GPU tests on that host"),
    "saved-graph-head-h200": Preset(
        "counting a saved R-MAT 26 against its raw Parquet files, Python's bytecode compiled "
        "first (python -m compileall, as pip does), best of 3", "one NVIDIA H200", (
            script("saved_graph.py", "count", "rmat:26", "--files", "4", "--repeat", "3",
                   "--dtri-args", "--backend gpu", "--out", "{out}",
                   env={"CUDA_VISIBLE_DEVICES": "0", "PYTHONDONTWRITEBYTECODE": ""}),),
        "issue 41, at the commit of each line (kind nvidia-h200), after compileall of the "
        "host's site folders"),
    "saved-small-gpu-h200": Preset(
        "dtri count of saved R-MAT 16 and 20 in a new process on one GPU: read on the host "
        "and copied below dtri.device-parquet-min-rows (the default) against decoded on the "
        "device (the key at 0, as every saved graph was read before), alternated twice",
        "one NVIDIA H200", (
            *(dtri("generate", f"rmat:{scale}", "-o", f"{{tmp}}/r{scale}", "--partitions", "4",
                   "--backend", "gpu", keep=False) for scale in (16, 20)),
            *(dtri("prepare", f"{{tmp}}/r{scale}", "-o", f"{{tmp}}/s{scale}", "--backend",
                   "gpu", keep=False) for scale in (16, 20)),
            *(script("in_process.py", "cli", "--backends", "gpu", "--runs", "3", "{tmp}/s16",
                     "{tmp}/s20", "--out", "{out}", timeout=300,
                     env={"CUDA_VISIBLE_DEVICES": "0", "PYTHONDONTWRITEBYTECODE": "",
                          **({"DASK_DTRI__DEVICE_PARQUET_MIN_ROWS": "0"} if device else {})})
              for _ in range(2) for device in (False, True))),
        "issue 41 (a saved graph's open), at the commit of each line; detail.dask_config "
        "names the arm decoded on the device"),
    "saved-graph-h200": Preset(
        "a --checkpoint count of R-MAT 26 killed with SIGKILL mid-join then run again, and "
        "counting a saved R-MAT 26 against its raw Parquet files",
        "one NVIDIA H200 of a 4 x H200 host", (
            script("saved_graph.py", "resume", "rmat:26", "--kill-at", "0.5", "--dtri-args",
                   "--backend gpu --memory-budget 4GiB", "--out", "{out}"),
            script("saved_graph.py", "count", "rmat:26", "--files", "4", "--repeat", "2",
                   "--dtri-args", "--backend gpu", "--out", "{out}")),
        "issue 41, at c7e363e, on GPU 2 (CUDA_VISIBLE_DEVICES) while the GPU tests ran on "
        "GPUs 0-1 and host-memory-h200 on GPU 3"),
    "saved-graph-bytecode-h200": Preset(
        "a --checkpoint count of R-MAT 26 killed with SIGKILL mid-join then run again, and "
        "counting a saved R-MAT 26 against its raw Parquet files, with Python's bytecode "
        "cached", "one NVIDIA H200, kind nvidia-h200", (
            script("saved_graph.py", "resume", "rmat:26", "--kill-at", "0.5", "--dtri-args",
                   "--backend gpu --memory-budget 4GiB", "--out", "{out}",
                   env={"PYTHONDONTWRITEBYTECODE": ""}),
            script("saved_graph.py", "count", "rmat:26", "--files", "4", "--repeat", "2",
                   "--dtri-args", "--backend gpu", "--out", "{out}",
                   env={"PYTHONDONTWRITEBYTECODE": ""})),
        "issue 41, on one host: the GPU host sets PYTHONDONTWRITEBYTECODE, so each new "
        "process compiled about 400 modules of its packages again (0.74 to 0.91 s, a "
        "profile); here it is unset, as in a pip install, which compiles them. After one "
        "count of R-MAT 20 for each tree (its kernels and bytecode written): the resume at "
        "f279b34 (the CUDA driver started on a thread, SciPy imported while the saved graph "
        "is read), at 0050cab (before, from a copy of its tree), at f279b34 again; then the "
        "count at f279b34"),
    "host-memory-h200": Preset(
        "R-MAT 28 under a 16 GiB RMM pool with --memory-limit 32GiB against the same count "
        "without it", "one NVIDIA H200 of a 4 x H200 host", (
            script("host_memory.py", "run", "rmat:28", "--backend", "gpu", "--memory-limit",
                   "32GiB", "--repeat", "1", "--timeout", "285", "--spill-directory",
                   "/tmp/spill28", "--out", "{out}", "--", "--rmm-pool-size", "16GiB"),),
        "issue 41, at c7e363e, on GPU 3 beside the runs of saved-graph-h200 and the GPU "
        "tests; the limited run was stopped at 285 s, in its canonicalize stage, so it has "
        "no count: the line records that, and the unlimited run's 143 GB resident"),
    "host-memory-store-h200": Preset(
        "R-MAT 26 under a 4 GiB RMM pool with --memory-limit 12GiB, and R-MAT 28 under a "
        "16 GiB pool with --memory-limit 32GiB, each against the same count without the "
        "limit, one GPU worker", "one NVIDIA H200 of a 2 x H200 host, kind nvidia-h100-x2", (
            gpu_host_memory("rmat:26", "12GiB", "4GiB", 280),
            gpu_host_memory("rmat:28", "32GiB", "16GiB", 470)),
        "issue 41: R-MAT 26 at 053b216 (dtri's tiered store, the input read again for each "
        "pass) and at d9b522f (results read back into writable memory; a tier full keeps "
        "what it holds; a sender of one partition is its read task), then R-MAT 28 at "
        "d9b522f; three sessions of one kind, each after one count of R-MAT 20 had compiled "
        "the kernels. 08b3aef, the head after them, changes neither run: it reads the input "
        "again only under a host plan (both runs have one) and not from data on the workers "
        "(a generated graph is not)"),
    "host-memory-28-h100x2": Preset(
        "R-MAT 28 under a 16 GiB RMM pool with --memory-limit 32GiB against the same count "
        "without the limit, one GPU worker, at 419fdb7 (c7ac3e8's store: a result read back "
        "again soon stays in its tier)",
        "one NVIDIA H100 of a 2 x H100 host, kind nvidia-h100-x2", (
            gpu_host_memory("rmat:28", "32GiB", "16GiB", 420),),
        "issue 41, after one count of R-MAT 18 had compiled the kernels; the limited run was "
        "stopped at 420 s (the device time left) as its join finished, so its line has no "
        "count: its stages, from the run's progress lines, summed to 400 s"),
    "host-memory-read-ahead-h200x2": Preset(
        "R-MAT 26 under a 4 GiB RMM pool with --memory-limit 12GiB, without and with the "
        "reads ahead and with a page-locked pool of a tenth of the limit, then R-MAT 28 under "
        "a 16 GiB pool with --memory-limit 32GiB with pools of a tenth and a fifth, each "
        "against the same count without the limit, one GPU worker, at 48a3ca2",
        "one NVIDIA H200 of a 2 x H200 host, kind nvidia-h100-x2", (
            *(gpu_host_memory("rmat:26", "12GiB", "4GiB", 150, setting)
              for setting in ("dtri.read-ahead=false", "dtri.read-ahead=true",
                              "dtri.pinned-share=0.1")),
            *(gpu_host_memory("rmat:28", "32GiB", "16GiB", 420, setting)
              for setting in ("dtri.pinned-share=0.1", "dtri.pinned-share=0.2"))),
        "issue 41, after one count of R-MAT 18 had compiled the kernels; the pinned-share "
        "runs read ahead (the default); the R-MAT 28 run with a fifth was stopped at 420 s "
        "in its sort, so its line has no count"),
    "host-memory-plan-h200x2": Preset(
        "R-MAT 28 under a 16 GiB RMM pool with --memory-limit 32GiB, then R-MAT 26 under a "
        "4 GiB pool with --memory-limit 12GiB, each against the same count without the limit, "
        "one GPU worker, under the host plan of 0b9af92 (a page-locked pool of one memory "
        "budget, the running task's inputs one budget), at 12760d0",
        "one NVIDIA H200 of a 2 x H200 host, kind nvidia-h100-x2", (
            gpu_host_memory("rmat:28", "32GiB", "16GiB", 430),
            gpu_host_memory("rmat:26", "12GiB", "4GiB", 180)),
        "issue 41, after the GPU tests had compiled the kernels"),
    "host-memory-sampled-h200x2": Preset(
        "R-MAT 28 under a 16 GiB RMM pool with --memory-limit 32GiB against the same count "
        "without the limit, one GPU worker, twice, with the store's disk on eight threads "
        "(9e660e7) and the sort's ranges cut from a sample of the keys (ba9d42b), at 64b299e",
        "one NVIDIA H200 of a 2 x H200 host, kind nvidia-h100-x2", (
            gpu_host_memory("rmat:28", "32GiB", "16GiB", 430),
            gpu_host_memory("rmat:28", "32GiB", "16GiB", 430)),
        "issue 41, after the GPU tests had compiled the kernels; the two runs were separate "
        "commands, the GPU tests of list B between them"),
    "host-memory-sampled-bounds-h200x4": Preset(
        "R-MAT 28 under a 16 GiB RMM pool with --memory-limit 32GiB against the same count "
        "without the limit, one GPU worker, with the sort's ranges cut from every sender's "
        "sample in one task (e08c415), at 8f247dc",
        "one NVIDIA H200 of a 4 x H200 host, kind nvidia-h100-x4", (
            gpu_host_memory("rmat:28", "32GiB", "16GiB", 430),),
        "issue 41, after the GPU tests and the multi-GPU runs of the same session had "
        "compiled the kernels"),
    "host-memory-spill-io-h100x2": Preset(
        "R-MAT 26 under a 4 GiB RMM pool with --memory-limit 12GiB against the same count "
        "without the limit, one GPU worker, its store writing and reading back on eight "
        "threads and on one, alternated (8, 1, then 1, 8), at 9e660e7",
        "one NVIDIA H100 of a 2 x H100 host, kind nvidia-h100-x2", tuple(
            gpu_host_memory("rmat:26", "12GiB", "4GiB", 180, f"dtri.spill-io-threads={threads}")
            for threads in (8, 1, 1, 8)),
        "issue 41, after one count of R-MAT 18 had compiled the kernels; one thread still "
        "reads into memory not zeroed first, so the pair times the threads alone"),
    "host-memory-folds-h100": Preset(
        "R-MAT 26 under a 4 GiB RMM pool with --memory-limit 12GiB against the same count "
        "without it, for the folds cut to a task's budget and two tries taken out again",
        "one NVIDIA H100 (80 GB), kind nvidia-h100-x1", (
            script("host_memory.py", "run", "rmat:26", "--backend", "gpu", "--memory-limit",
                   "12GiB", "--repeat", "1", "--timeout", "300", "--spill-directory",
                   "/tmp/spill26", "--out", "{out}", "--", "--rmm-pool-size", "4GiB"),),
        "issue 41: b04e1fd (before, from a copy of its tree) and be01cc8 (the folds cut) "
        "back to back on one host; 2c84124 (stored results weighed without their page-locked "
        "pages, reverted in be01cc8) and 9383ea9 (worker-overhead-gpu 1.5 GiB, reverted in "
        "318d90d) on two other H100 hosts, 9383ea9's after one count of R-MAT 20 (`dtri count "
        "--generate rmat:20 --backend gpu --rmm-pool-size 4GiB`) had compiled the kernels. "
        "be01cc8's unlimited line was its host's first dtri process (its kernels compiled "
        "then), and cut every fold, as d5c830f no longer does without a limit"),
    "host-memory-overhead-h100": Preset(
        "an idle GPU worker's resident memory after a count of R-MAT 16: what "
        "dtri.worker-overhead-gpu must hold", "one NVIDIA H100 (80 GB), kind nvidia-h100-x1", (
            script("host_memory.py", "overhead", "--backend", "gpu", "--workers", "1", "--out",
                   "{out}"),),
        "issue 41, at 268eaf0 and 2c84124 on two H100 hosts (no host limit: the worker "
        "store those commits changed is not made)"),
    "profile-rmat20-cpu-2core-5e2be88": Preset(
        "dtri profile of R-MAT 20 against dtri truss, the truss peeled by rounds over every "
        "alive edge (5e2be88)", CPU, profile_rmat20_cpu("5e2be88"),
        "issue 72; superseded by the whole-graph peeling (profile-rmat20-cpu-2core-47c1987)"),
    "profile-rmat20-cpu-2core-47c1987": Preset(
        "dtri profile of R-MAT 20 against dtri truss, the whole-graph peel's rounds on one "
        "thread (47c1987)", CPU, profile_rmat20_cpu("47c1987"),
        "issue 72; superseded by the threaded rounds (profile-rmat20-cpu-2core)"),
    "profile-rmat20-cpu-2core": Preset(
        "dtri profile of R-MAT 20 against dtri truss of the same graph, each in its own "
        "process", CPU, profile_rmat20_cpu(),
        "issue 72; in process (no cluster), numba's cache warmed first; the machine was "
        "shared with other sessions (loadavg in detail)"),
    "listing-rmat16-cpu-2core": Preset(
        "dtri list of R-MAT 16 and ca-CondMat against dtri count of the same input, each in "
        "its own process, best of 3 alternated rounds", CPU, (
            script("listing.py", "rmat:16", "ca-CondMat", "--rounds", "3", "--data", "{data}",
                   "--out", "{out}"),),
        "issue 73; in process (no cluster), numba's cache warmed first; the machine was "
        "shared with other sessions (loadavg in detail)"),
    "profile-rmat24-h100": Preset(
        "dtri profile of R-MAT 24 against dtri truss of the same graph on one GPU, each in its "
        "own process: on one dask-cuda worker (the client apart), then in process",
        "one NVIDIA H100", (
            script("profile_bench.py", "rmat:24", "--backend", "gpu", "--dtri-args",
                   "--workers 1", "--timeout", "200", "--out", "{out}"),
            script("profile_bench.py", "rmat:24", "--backend", "gpu", "--timeout", "140",
                   "--out", "{out}")),
        "issue 72; the truss peeled whole in one task (6dcc14a, with peel.cu's uint64 fix)"),
    "one-gpu-4870299-ab-h100": Preset(
        "the one-GPU count of R-MAT 24 and 26 on one dask-cuda worker, this tree against "
        "4870299's, alternated twice, each tree from its own folder", "one NVIDIA H100", tuple(
            script("multi_gpu.py", "rmat:24", "rmat:26", "--workers", "1", "--protocols", "tcp",
                   "--decompositions", "1d", "--repeat", "2", "--out", "{out}", commit=c)
            for _ in range(2) for c in (None, "4870299")),
        "issue 71; run by alternate_commits.sh with OLD_TREE (the host has no .git); the lines "
        "of this tree carry the join's bytes read and bandwidth"),
    "ncu-join-rmat24-h100": Preset(
        "Nsight Compute of a one-GPU count of R-MAT 24: the join's kernels with their memory, "
        "occupancy and warp-state sections, and every kernel by time", "one NVIDIA H100", (
            script("ncu_join.py", "--scale", "24", "--timeout", "270", "--out", "{out}"),),
        "issue 71; the lines as --reparse read the run's kept CSVs again (the run's own parse "
        "took ncu's 'ns' for seconds)"),
    "listing-rmat20-h100": Preset(
        "dtri list of R-MAT 20 against dtri count of the same graph on one GPU, each in its "
        "own process, best of 3 alternated rounds", "one NVIDIA H100", (
            script("listing.py", "rmat:20", "--backend", "gpu", "--rounds", "3", "--timeout",
                   "60", "--out", "{out}"),),
        "issue 73; in process on the one GPU (no cluster), as a user's run is"),
    "weighted-clustering-cpu-2core": Preset(
        "dtri.clustering weighted, directed and both against NetworkX's nx.clustering on "
        "shared graphs with seeded random weights and directions, each arm in its own "
        "process", CPU, (
            script("weighted_clustering.py", "ca-CondMat", "email-Eu-core", "--rounds", "2",
                   "--calls", "3", "--data", "{data}", "--out", "{out}"),),
        "issue 73; dtri in process (no cluster); values compared vertex by vertex to 1e-12"),
    "saved-graph-cpu-2core": Preset(
        "counting a saved prepared graph against its raw Parquet files, and a --checkpoint "
        "count killed with SIGKILL mid-join then run again", CPU, (
            script("saved_graph.py", "count", "rmat:18", "--files", "4", "--repeat", "2",
                   "--out", "{out}"),
            script("saved_graph.py", "resume", "rmat:20", "--kill-at", "0.5", "--dtri-args",
                   "--memory-budget 64MiB", "--out", "{out}")),
        "issue 41; every dtri command in a new process, in process (no cluster)"),
    "scaling-gpu-h200x2": Preset(
        "strong scaling on 1 and 2 GPUs (UCX over NVLink)", "one host with 2 NVIDIA H200",
        bench_gpu_workers([(1, "rmat:25"), (2, "rmat:25"), (1, "rmat:26"), (2, "rmat:26")]),
        "was scaling-gpu.sh (issue 4): one dask-cuda worker per GPU (--protocol auto: UCX "
        "over NVLink when distributed-ucxx is installed, as the protocol field records), the "
        "graph already in GPU memory, each worker's share of busy time in "
        "dtri.worker_utilisation"),
    "scaling-gpu-h200x4": Preset(
        "strong scaling on 1, 2 and 4 GPUs (UCX over NVLink)", "one host with 4 NVIDIA H200",
        bench_gpu_workers([(1, "rmat:25"), (2, "rmat:25"), (4, "rmat:25"),
                           (4, "rmat:26"), (2, "rmat:26"), (1, "rmat:26"),
                           *((workers, graph) for workers in (1, 2, 4)
                             for graph in ("rmat:25", "rmat:26"))]),
        "was scaling-gpu.sh; the ee15829 lines (no pool, --rmm-pool-size 100GiB) were one-off"),
    "stage-profile-h200x2": Preset(
        "busy and transfer seconds per stage and worker", "one host with 2 NVIDIA H200", (
            script("probes/stage_profile.py", "rmat:25", "1", "2"),
            script("probes/stage_profile.py", "rmat:25", "2"))),
    "stage-profile-h200x4": Preset(
        "busy and transfer seconds per stage and worker, and per kind of task",
        "one host with 4 NVIDIA H200", (
            script("probes/stage_profile.py", "rmat:25", "1", "4"),
            script("probes/stage_profile.py", "rmat:26", "1", "4"),
            script("probes/stage_profile.py", "rmat:26", "1", "4"),
            script("probes/stage_profile.py", "rmat:27", "4")),
        "the last three lines ran bef7183 with the probe of b998dde (its input spread over the "
        "workers, and each stage's transfers), in one session of kind nvidia-h200-x4"),
    "stage-profile-sampled-h200x4": Preset(
        "busy and transfer seconds per stage and worker, and per kind of task, at 8f247dc",
        "one host with 4 NVIDIA H200, kind nvidia-h100-x4", (
            script("probes/stage_profile.py", "rmat:26", "1", "2", "4"),),
        "issue 39, after the GPU tests of the same session"),
    "stage-profile-head-h200x4": Preset(
        "busy and transfer seconds per stage and worker, and per kind of task, at 09e6661",
        "one host with 4 NVIDIA H200", (
            script("probes/stage_profile.py", "rmat:27", "1", "4"),
            script("probes/stage_profile.py", "rmat:26", "1", "2", "4")),
        "issue 39 (kind nvidia-h200-x4), one session; UCX's warnings, which the workers had "
        "printed between the lines, left out"),
    "staged-pinned-h200": Preset(
        "host staging in page-locked memory: capped against uncapped", H200, (
            staged("rmat:26=8GiB rmat:26=8GiB"),
            staged("rmat:24=2GiB rmat:26=8GiB rmat:26=8GiB"))),
    "staged-rmat26-h200": Preset(
        "host staging: RMAT 26 capped at 8 GiB against uncapped, alternated", H200, (
            staged("rmat:26=8GiB rmat:26=8GiB"),),
        "on GPU 0 of the 2xH200 host (CUDA_VISIBLE_DEVICES=0)"),
    "staged-triangles-h200": Preset(
        "per-vertex triangles of RMAT 26 to Parquet, capped against uncapped", H200, tuple(
            Command(("bash", f"{B}/staged_triangles.sh", "{out}", "rmat:26=8GiB"))
            for _ in range(2))),
    "transfer-probe-h200x4": Preset(
        "GPU peer access and copies, and one Dask worker-to-worker transfer per protocol",
        "one host with 4 NVIDIA H200", (
            script("probes/transfer_probe.py", family="transfer-probe"),)),
    "verify-shared-cpu": Preset(
        "every analytic on every shared SNAP graph against NetworkX", CPU, (
            script("verify_shared.py"),),
        "reads ../shared/data beside the repository"),
}
"""Each file of ``results/`` and ``results/archive/`` (its name without ``.jsonl``): what it
holds, where it ran, and the commands."""


def expand(argv: tuple[str, ...], places: dict[str, str]) -> list[str]:
    """``python`` as this interpreter, ``{data}``/``{tmp}``/``{out}`` filled, globs expanded."""
    words = [sys.executable if argv[0] == "python" else argv[0]]
    for word in argv[1:]:
        word = word.format(**places)
        matches = sorted(glob.glob(word, root_dir=ROOT)) if "*" in word else []
        words.extend(matches or [word])
    return words


def shown(argv: list[str], places: dict[str, str]) -> str:
    text = shlex.join(["python" if word == sys.executable else word for word in argv])
    return text.replace(places["out"], "OUT")


def mapped(command: Command, text: str, what: str) -> list[dict[str, Any]]:
    """A command's output as lines of the schema."""
    if command.family == "transfer-probe":
        owns = transfer_lines(text)
    else:
        owns = [json.loads(row) for row in text.splitlines() if row.startswith("{")]
    lines = owns if command.family is None else [
        to_schema(command.family, own, command=what) for own in owns]
    extra = {key: value for key, value in command.values.items() if key != "detail"}
    detail = command.values.get("detail", {})
    return [{**line, **extra, **({"detail": {**line.get("detail", {}), **detail}} if detail
                                  else {})} for line in lines]


def commit_tree(commit: str, tmp: str) -> tuple[Path, dict[str, str]]:
    """The folder a command of an older ``commit`` runs from, made once a preset (``git
    archive`` of its ``dtri/``, ``examples/benchmarks/`` and ``pyproject.toml``), and its
    environment. It must be the current folder: ``python -m`` and ``-c`` put that ahead of
    ``PYTHONPATH``, so from the repository root the root's ``dtri`` would run."""
    tree = Path(tmp) / f"tree-{commit}"
    if not tree.exists():
        tree.mkdir()
        archive = subprocess.run(["git", "archive", commit, "dtri", B, "pyproject.toml"],
                                 cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    path = os.environ.get("PYTHONPATH")
    return tree, {"PYTHONPATH": f"{tree}:{path}" if path else str(tree),
                  "DTRI_COMMIT": commit}


def run_preset(name: str, out: str | None, data: str, dry_run: bool) -> int:
    preset = PRESETS[name]
    failed = 0
    with tempfile.TemporaryDirectory(prefix=f"dtri-{name}-") as tmp:
        places = {"data": data, "tmp": tmp, "out": f"{tmp}/out.jsonl"}
        for command in preset.commands:
            argv = expand(command.argv, places)
            what = shown(argv, places)
            print(f"# {what}" + (f"  (at {command.commit})" if command.commit else ""),
                  file=sys.stderr, flush=True)
            if dry_run:
                continue
            Path(places["out"]).unlink(missing_ok=True)
            cwd, env = commit_tree(command.commit, tmp) if command.commit else (ROOT, {})
            try:
                done = subprocess.run(argv, cwd=cwd, env={**os.environ, **command.env, **env},
                                      stdout=subprocess.PIPE, text=True,
                                      timeout=command.timeout, check=False)
                output, rc = done.stdout, done.returncode
            except subprocess.TimeoutExpired as expired:
                output = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (
                    expired.stdout or "")
                rc = 124
            if rc:
                failed += 1
                print(f"# exit status {rc}", file=sys.stderr, flush=True)
            if preset.log:
                print(output, end="", flush=True)
                if out:
                    with open(out, "a") as handle:
                        handle.write(output)
                continue
            if "{out}" in command.argv:
                sys.stderr.write(output)
                path = Path(places["out"])
                output = path.read_text() if path.exists() else ""
            if not command.keep:
                sys.stderr.write(output)
                continue
            for line in mapped(command, output, what):
                emit(line, out)
    return failed


def listing() -> str:
    width = max(map(len, PRESETS))
    return "\n".join(f"{name:<{width}}  {preset.host}: {preset.what}"
                     for name, preset in PRESETS.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", help="a preset (--list names them)")
    parser.add_argument("--list", action="store_true", help="list the presets")
    parser.add_argument("--out", help="append the lines to this file")
    parser.add_argument("--data", help="the shared SNAP graphs' folder")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = parser.parse_args()
    if args.list or args.name is None:
        print(listing())
        return
    if args.name not in PRESETS:
        parser.error(f"no preset {args.name!r}: --list names them")
    data = args.data or os.environ.get("DTRI_DATA") or "../shared/data"
    data = str(Path(data).resolve()) if args.data else data
    out = str(Path(args.out).resolve()) if args.out else None
    preset = PRESETS[args.name]
    print(f"# {args.name} ({preset.host}): {preset.what}"
          + (f"; {preset.note}" if preset.note else ""), file=sys.stderr)
    sys.exit(1 if run_preset(args.name, out, data, args.dry_run) else 0)


if __name__ == "__main__":
    main()

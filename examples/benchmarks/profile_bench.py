"""``dtri profile`` against ``dtri truss`` on the same graph, each in its own process.

Usage::

    python examples/benchmarks/profile_bench.py rmat:20 [--backend cpu] [--repeat 1] \\
        [--dtri-args "--workers 2"] [--timeout SECONDS] [--out FILE]

First both commands run once on R-MAT 10, untimed, so that numba's cache (and CuPy's, on the
GPU) holds the kernels either command compiles and neither arm pays for it. Then, ``--repeat``
times, ``dtri truss --generate SPEC --json --top 0`` and ``dtri profile --generate SPEC -o DIR
--json`` run one after the other, each in a new process. One line per pair: ``seconds`` is the
profile's wall time, ``peers.dtri-truss`` the truss command's, and ``detail.ratio`` profile
over truss (the issue's target: at most 2).

The client's memory apart from the workers'. Where ``--dtri-args`` names a cluster
(``--workers 1``: on the GPU, a dask-cuda worker of its own), the ``dtri`` process is only
the client, and ``detail.client_peak_bytes`` (the peak resident memory the profile reports of
its own process, ``ru_maxrss``) is the client's alone (issue 72's target: under 1 GiB at
R-MAT 24). A sampler in this script reads the resident memory of the ``dtri`` process and of
each process under it every 50 ms (``detail.sampled``: ``client_peak_bytes`` the client's
peak through the end of the command, the page's writing included; ``descendants_peak_bytes``
the peak of their sum: the workers, and a forkserver where one starts them;
``largest_descendant_peak_bytes``). dtri's own figures of its workers are
``detail.worker_host_bytes`` (each worker's peak, by address) and ``peak_host_bytes``.
``*_process_peak_bytes`` is what the kernel reports to this script (``wait4``: the largest of
the process and those of its children it waited for, so the workers too). In process (no
cluster), the client is the worker, and its figure counts the graph.

``--timeout`` bounds each command: one that runs longer is killed with its process group (its
workers) and recorded in ``detail.timed_out``. Where the truss timed out and the profile did
not, ``detail.ratio_at_most`` bounds the ratio (the truss took at least the timeout).
``detail`` also holds each command's own ``seconds`` by stage, the size of the page and its
data, ``/proc/loadavg`` before and after (the machine may be shared), and whether the two
commands agree on the largest truss number and the edges per truss number.

Each line is in the schema of ``schema.py`` (family ``profile``).
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
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # schema.py beside this file
from schema import command_line, emit, to_schema

DTRI = [sys.executable, "-m", "dtri"]
SAMPLE_SECONDS = 0.05
"""How often the sampler reads the processes' resident memory."""


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


class Sampler(threading.Thread):
    """The resident memory of a process and, apart, of the processes under it (a cluster's
    workers), read every :data:`SAMPLE_SECONDS` until :meth:`stop`; each figure its peak."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.stopped = threading.Event()
        self.client = 0
        self.descendants = 0
        self.largest = 0
        self.processes = 0
        self.samples = 0

    def run(self) -> None:
        import psutil

        try:
            process = psutil.Process(self.pid)
        except psutil.Error:
            return
        while True:
            try:
                client = process.memory_info().rss
                children = process.children(recursive=True)
            except psutil.Error:
                return
            rss = []
            for child in children:
                try:
                    rss.append(child.memory_info().rss)
                except psutil.Error:
                    continue
            self.client = max(self.client, client)
            self.descendants = max(self.descendants, sum(rss))
            self.largest = max(self.largest, *rss, 0)
            self.processes = max(self.processes, len(rss))
            self.samples += 1
            if self.stopped.wait(SAMPLE_SECONDS):
                return

    def stop(self) -> dict[str, int]:
        self.stopped.set()
        self.join()
        return {"client_peak_bytes": self.client, "descendants_peak_bytes": self.descendants,
                "largest_descendant_peak_bytes": self.largest,
                "most_descendants": self.processes, "samples": self.samples}


@dataclass
class Ran:
    """A dtri command run in a new process: its wall ``seconds``, its peak resident bytes as
    ``wait4`` reports them, its ``--json`` object (``None`` where it ``timed_out``) and, where
    sampled, its client's and workers' resident memory."""

    seconds: float
    peak_bytes: int
    printed: dict[str, Any] | None
    timed_out: bool = False
    sampled: dict[str, int] = field(default_factory=dict)


def measured(argv: list[str], timeout: float | None = None, sample: bool = False) -> Ran:
    """Run a dtri command in a new process (and process group), killed with its group after
    ``timeout`` seconds; with ``sample``, its memory sampled beside it (:class:`Sampler`)."""
    killed = threading.Event()
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err, text=True,
                                   start_new_session=True)
        sampler = Sampler(process.pid) if sample else None
        if sampler is not None:
            sampler.start()

        def kill() -> None:
            killed.set()
            os.killpg(process.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer is not None:
            timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        if timer is not None:
            timer.cancel()
        sampled = sampler.stop() if sampler is not None else {}
        process.returncode = os.waitstatus_to_exitcode(status)
        if killed.is_set():
            return Ran(seconds, usage.ru_maxrss * 1024, None, True, sampled)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise SystemExit(f"{shlex.join(argv)} failed: {err.read().strip()[-2000:]}")
        return Ran(seconds, usage.ru_maxrss * 1024, json.loads(out.read()), False, sampled)


def run(argv: list[str], timeout: float | None = None) -> tuple[float, int, dict[str, Any]]:
    """Wall seconds of a dtri command in a new process, its peak resident bytes (``wait4``)
    and its ``--json`` object; a command past ``timeout`` ends this script."""
    ran = measured(argv, timeout)
    if ran.printed is None:
        raise SystemExit(f"{shlex.join(argv)} ran past {timeout} s")
    return ran.seconds, ran.peak_bytes, ran.printed


def folder_bytes(path: Path) -> dict[str, int]:
    return {f.name: f.stat().st_size for f in sorted(path.iterdir())}


def pair_line(args: argparse.Namespace, truss: list[str], truss_ran: Ran, profile: list[str],
              profile_ran: Ran, out: Path, before: str) -> dict[str, Any]:
    """The line of one truss and profile pair, before the schema; a timed-out arm's figures
    are null, and ``timed_out`` names it."""
    truss_json, profile_json = truss_ran.printed, profile_ran.printed
    timed_out = [arm for arm, ran in (("truss", truss_ran), ("profile", profile_ran))
                 if ran.timed_out]
    own: dict[str, Any] = {
        "graph": args.spec, "backend": args.backend, "command": command_line(),
        "seconds": None if profile_json is None else round(profile_ran.seconds, 3),
        "stage_seconds": None if profile_json is None else profile_json["seconds"],
        "triangles": None if profile_json is None else profile_json["triangles"],
        "peers": {"dtri-truss": {
            "seconds": None if truss_json is None else round(truss_ran.seconds, 3),
            "command": shlex.join(truss[2:])}},
        "ratio": None if timed_out else round(profile_ran.seconds / truss_ran.seconds, 3),
        "timed_out": {arm: args.timeout for arm in timed_out},
        "profile_command": shlex.join(profile[2:]),
        "truss_stage_seconds": None if truss_json is None else truss_json["seconds"],
        "profile_process_peak_bytes": profile_ran.peak_bytes,
        "truss_process_peak_bytes": truss_ran.peak_bytes,
        "sampled": profile_ran.sampled, "truss_sampled": truss_ran.sampled,
        "loadavg_before": before, "loadavg_after": loadavg(), "cpus": os.cpu_count(),
    }
    if timed_out == ["truss"]:
        own["ratio_at_most"] = round(profile_ran.seconds / truss_ran.seconds, 3)
    if profile_json is not None:
        data = json.loads((out / "profile.json").read_text())
        per_truss = {str(row["k"]): row["edges"] for row in data["tables"]["truss"]
                     if row["edges"]}
        own.update({
            "client_peak_bytes": profile_json["client_peak_bytes"],
            "worker_host_bytes": profile_json.get("worker_host_bytes"),
            "peak_host_bytes": profile_json.get("peak_host_bytes"),
            "peak_device_bytes": profile_json.get("peak_device_bytes"),
            "page_bytes": folder_bytes(out),
            "vertices": profile_json["vertices"], "edges": profile_json["edges"],
            "max_truss": profile_json["max_truss"]})
        if truss_json is not None:
            own["truss_agrees"] = (
                truss_json["max_truss"] == profile_json["max_truss"]
                and {str(k): v for k, v in truss_json["edges_per_truss"].items()} == per_truss)
    return own


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--dtri-args", default="",
                        help="more options of both commands, e.g. '--workers 1'")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds each timed command may take (default: no limit)")
    parser.add_argument("--out")
    args = parser.parse_args()
    extra = ["--backend", args.backend, *shlex.split(args.dtri_args)]
    with tempfile.TemporaryDirectory() as tmp:
        for warm in ("truss", "profile"):  # numba's and CuPy's caches filled, untimed
            page = ["-o", f"{tmp}/warm"] if warm == "profile" else ["--top", "0"]
            run([*DTRI, warm, "--generate", "rmat:10", *extra, "--json", *page])
        for r in range(args.repeat):
            before = loadavg()
            truss = [*DTRI, "truss", "--generate", args.spec, *extra, "--json", "--top", "0"]
            truss_ran = measured(truss, args.timeout, sample=True)
            out = Path(tmp) / f"page-{r}"
            profile = [*DTRI, "profile", "--generate", args.spec, *extra, "-o", str(out),
                       "--json"]
            profile_ran = measured(profile, args.timeout, sample=True)
            own = pair_line(args, truss, truss_ran, profile, profile_ran, out, before)
            emit(to_schema("profile", own), args.out)


if __name__ == "__main__":
    main()

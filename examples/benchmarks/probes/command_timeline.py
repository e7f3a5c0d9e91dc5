"""Where a ``dtri`` command's seconds go, from its process's start to its end.

Usage::

    python examples/benchmarks/probes/command_timeline.py [--runs 3] [--out FILE] -- \\
        count --generate rmat:16 --backend gpu --workers 4 --protocol ucx --json

Each run is the command in a new process: this script again, with ``--child``, running
:func:`dtri.cli.main` and then Python's own end (not :func:`dtri.cli.run`'s), so that the
teardown after the last ``atexit`` handler shows. The child marks, in seconds from when this
process started it:

* ``imported``: ``dtri.cli`` imported, after Dask's scheduler and nanny (the marks wrap them:
  a plain command imports ``distributed`` later);
* ``cluster_start`` and ``cluster_started``: the local cluster dtri starts
  (:func:`dtri.runtime.local_cluster._start_local_cluster`), where it starts one;
* ``scheduler_start`` and ``scheduler_started``: the scheduler's own start, within it;
* ``nannies_start`` and ``nannies_started``: the first nanny's start and the last one's end;
* ``cluster_close`` and ``cluster_closed``;
* ``command_end``: the command returned;
* ``exit_hooks_end``: the last ``atexit`` handler ended (registered first, it runs last).

One JSON line per run (family ``command-timeline``): ``seconds`` is the command's wall time
as this process saw it; ``stage_seconds`` and ``triangles`` come from the command's ``--json``
output where it gives one; ``detail`` holds the ``marks`` and the ``phases`` between them,
``teardown`` being the wall time after ``exit_hooks_end``.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # schema.py, one folder up
from schema import command_line, emit, record

ORIGIN = "DTRI_TIMELINE_ORIGIN"
"""The environment variable that carries the child's origin (the parent's ``time.time()``
just before it started the child)."""
MARKS = "TIMELINE "
"""What starts the child's line of marks on its stderr."""


def child(argv: list[str]) -> None:
    """Run ``dtri ARGV`` in this process with the marks of the module docstring, and print
    them on stderr, after the last ``atexit`` handler."""
    origin = float(os.environ[ORIGIN])
    marks: dict[str, float] = {}

    def mark(name: str, first: bool = True) -> None:
        if not (first and name in marks):
            marks[name] = round(time.time() - origin, 4)

    def report() -> None:
        mark("exit_hooks_end")
        os.write(2, (MARKS + json.dumps(marks) + "\n").encode())

    atexit.register(report)  # registered first: runs last
    import distributed.nanny
    import distributed.scheduler

    import dtri.runtime.session as session
    from dtri.cli import main

    mark("imported")
    start_cluster = session._start_local_cluster

    def started(*args: Any, **kwargs: Any) -> Any:
        mark("cluster_start")
        cluster = start_cluster(*args, **kwargs)
        mark("cluster_started")
        close = cluster.close

        def closing(*a: Any, **k: Any) -> Any:
            mark("cluster_close")
            done = close(*a, **k)
            mark("cluster_closed")
            return done

        cluster.close = closing
        return cluster

    session._start_local_cluster = started

    def timed(cls: type, method: str, begin: str, end: str) -> None:
        real = getattr(cls, method)

        async def wrapper(self: Any, *a: Any, **k: Any) -> Any:
            mark(begin)
            done = await real(self, *a, **k)
            mark(end, first=False)  # the last one's end
            return done

        setattr(cls, method, wrapper)

    timed(distributed.scheduler.Scheduler, "start_unsafe", "scheduler_start",
          "scheduler_started")
    timed(distributed.nanny.Nanny, "start_unsafe", "nannies_start", "nannies_started")
    try:
        main(argv, standalone_mode=False)
    finally:
        mark("command_end")


def phases(marks: dict[str, float], wall: float) -> dict[str, float]:
    """The seconds between the marks: before the cluster (or the command, without one), its
    start (the scheduler's and the nannies' within it), the command with the cluster up, its
    close, the ``atexit`` handlers, and the teardown after them."""
    def between(a: str, b: str) -> float | None:
        return round(marks[b] - marks[a], 4) if a in marks and b in marks else None

    spans = {"imports": marks.get("imported"),
             "before_cluster": between("imported", "cluster_start"),
             "cluster_start": between("cluster_start", "cluster_started"),
             "scheduler_start": between("scheduler_start", "scheduler_started"),
             "nannies_start": between("nannies_start", "nannies_started"),
             "with_cluster": between("cluster_started", "cluster_close"),
             "cluster_close": between("cluster_close", "cluster_closed"),
             "command": between("imported", "command_end"),
             "exit_hooks": between("command_end", "exit_hooks_end"),
             "teardown": (round(wall - marks["exit_hooks_end"], 4)
                          if "exit_hooks_end" in marks else None)}
    return {name: value for name, value in spans.items() if value is not None}


def option(argv: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` in ``argv``, if given."""
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def run_once(argv: list[str]) -> dict[str, Any]:
    """One run of ``dtri ARGV`` in a child process: its line."""
    origin = time.time()
    done = subprocess.run([sys.executable, __file__, "--child", "--", *argv],
                          env=dict(os.environ, **{ORIGIN: repr(origin)}),
                          capture_output=True, text=True, check=False)
    wall = time.time() - origin
    lines = [line for line in done.stderr.splitlines() if line.startswith(MARKS)]
    marks = json.loads(lines[-1][len(MARKS):]) if lines else {}
    try:
        output = json.loads(done.stdout)
    except json.JSONDecodeError:
        output = {}
    paths = output.get("paths") or []
    graph = output.get("generate") or option(argv, "--generate") or (
        Path(paths[0]).name.split(".")[0] if paths else None)
    return record(benchmark="command-timeline", graph=graph,
                  backend=output.get("backend") or option(argv, "--backend"),
                  command=command_line(), seconds=round(wall, 4),
                  stage_seconds=output.get("seconds"), triangles=output.get("triangles"),
                  detail={"dtri": ["dtri", *argv], "rc": done.returncode, "marks": marks,
                          "phases": phases(marks, wall),
                          "error": done.stderr.strip().splitlines()[-1:]
                          if done.returncode else []})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--out")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("dtri", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.dtri[1:] if args.dtri[:1] == ["--"] else args.dtri
    if args.child:
        child(argv)
        return
    for _ in range(args.runs):
        emit(run_once(argv), args.out)


if __name__ == "__main__":
    main()

"""The ``dtri`` command line: a thin layer over :func:`dtri.prepare` and the analytics.

Every command takes its options from :class:`dtri.options.Options` (:func:`cli_options`), so
an option means the same everywhere and is checked once. Errors are one ``dtri: error:`` line
on stderr and exit status 2, an interrupt one ``dtri: interrupted`` line and status 130;
results go to stdout (a short summary, or one JSON object with ``--json``) and, for per-vertex
and per-edge results, to Parquet with ``-o``, renamed into place when complete.
"""

from __future__ import annotations

import atexit
import difflib
import functools
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import click
from dask.utils import format_bytes

from dtri.options import (
    BACKENDS,
    GENERATED_FORMATS,
    GRAPHLET_KINDS,
    GRAPHLET_ORBITS,
    checked_k,
    cli_options,
    from_cli,
)

INPUT_MEANING = """\
Input is read as a simple undirected graph: an edge and its reverse are one edge, repeated
edges count once, self-loops are ignored (their vertex still counts as a vertex), and
columns after the first two (weights, timestamps) are ignored.
"""

RUN_GROUPS = ("input", "cluster", "memory", "plan", "output")
INTERRUPTED = 130
"""The exit status of a command ended by an interrupt (Ctrl-C, SIGINT): 128 + SIGINT's 2."""
TERMINATED = 143
"""The exit status of a command ended by SIGTERM (``timeout``, SLURM, Kubernetes): 128 + 15."""
PIPE_CLOSED = 141
"""The exit status of a command whose stdout was closed (``| head``): 128 + SIGPIPE's 13."""


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that the run unwinds as an interrupt does: its
    cluster closed, its temporary files removed (a ``BaseException``, as
    ``KeyboardInterrupt``, so that no handler of errors takes it)."""


class Signalled:
    """The signal that is ending this command, once one is: what its cluster's teardown
    then raises (its workers gone too, where the signal went to the process group) is part
    of the interrupt, not an error to report."""

    number: int | None = None


def _signalled(signum: int, frame: Any) -> None:
    """The handler of SIGINT and SIGTERM: the run unwinds, quietly (distributed's and
    asyncio's logs of the closing connections are silenced)."""
    import logging
    import signal

    Signalled.number = signum
    for name in ("distributed", "asyncio", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated


def _usage_error(ctx: click.Context, error: click.UsageError) -> None:
    """A usage error as every dtri error is: one ``dtri: error:`` line (click's message,
    with the command to ask for help), status 2."""
    command = error.ctx.command_path if error.ctx is not None else ctx.command_path
    message = " ".join(error.format_message().split())
    click.echo(f"dtri: error: {message} (see {command} --help)", err=True)
    ctx.exit(2)


def _interrupted(ctx: click.Context, terminated: bool) -> None:
    click.echo("dtri: interrupted", err=True)
    ctx.exit(TERMINATED if terminated else INTERRUPTED)


class Commands(click.Group):
    """dtri's commands: an interrupted one (Ctrl-C, SIGINT, to dtri or its process group)
    ends with one ``dtri: interrupted`` line and status 130 (the shell's convention), not
    click's ``Aborted!`` and status 1; SIGTERM the same way with status 143; a closed stdout
    quietly with status 141. Each unwinds the run first: its local cluster and their folders
    go, and no temporary output remains."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            _usage_error(ctx, error)
            raise  # not reached: _usage_error exits

    def invoke(self, ctx: click.Context) -> Any:
        import signal

        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _signalled)
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored
                previous[signal.SIGINT] = signal.signal(signal.SIGINT, _signalled)
        Signalled.number = None
        try:
            return super().invoke(ctx)
        except click.UsageError as error:  # a command's options and arguments
            _usage_error(ctx, error)
        except (KeyboardInterrupt, click.Abort):
            _interrupted(ctx, Signalled.number == signal.SIGTERM)
        except Terminated:
            _interrupted(ctx, True)
        except BrokenPipeError:
            _quiet_stdout()
            ctx.exit(PIPE_CLOSED)
        except Exception:
            if Signalled.number is None:
                raise
            _interrupted(ctx, Signalled.number == signal.SIGTERM)
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)


def _quiet_stdout() -> None:
    """Point stdout at ``/dev/null``: the reader has gone, and the flush at exit would
    otherwise fail again, loudly."""
    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dtri")
def main() -> None:
    """dtri: exact triangle counting, and the analytics built on triangles, for graphs too big
    for one GPU, as a Dask pipeline on cuDF (GPU) or pandas (CPU) partitions."""


def _fail(message: Any, code: int = 2) -> None:
    """Print one ``dtri: error:`` line on stderr and exit."""
    click.echo(f"dtri: error: {message}", err=True)
    sys.exit(code)


@contextmanager
def _errors_as_one_line() -> Iterator[None]:
    """dtri's own errors, bad values, missing files, and a broken compressed stream as one line
    and exit 2 (click would print a bare ``Aborted!`` for an ``EOFError``)."""
    from dtri import DtriError

    try:
        yield
    except BrokenPipeError:
        raise  # stdout closed: quietly (:class:`Commands`)
    except (DtriError, ValueError, OSError, EOFError) as error:
        if Signalled.number is not None:  # the teardown of an interrupted run
            raise
        _fail(error)


def graph_source(command: Callable[..., Any]) -> Callable[..., Any]:
    """``PATHS...`` or ``--generate SPEC --seed N``, the input options, the cluster, memory and
    plan options, ``--progress``. A command whose backend is not ``cpu`` starts the CUDA
    driver first (:func:`dtri.start_cuda_driver`), so that it starts while the command
    imports dtri's API."""

    body = command

    @functools.wraps(body)
    def driver_first(*args: Any, **values: Any) -> Any:
        if values.get("backend") != "cpu":
            from dtri import start_cuda_driver

            start_cuda_driver(values)
        return body(*args, **values)

    command = click.option("--progress/--no-progress", default=None,
                           help="Progress on stderr: a line per stage as it ends (stage, "
                                "seconds, rows where known), after Dask's progress bar on a "
                                "cluster (default: when stderr is a terminal).")(driver_first)
    command = cli_options(*RUN_GROUPS)(command)
    command = click.option("--seed", type=int, default=0, show_default=True,
                           help="Seed of the --generate graph.")(command)
    command = click.option("--generate", "spec", metavar="SPEC",
                           help="A generated graph instead of PATHS: rmat:SCALE[:EDGE_FACTOR] "
                                "(Graph500 R-MAT) or gnm:N:M, built on the workers.")(command)
    return click.argument("paths", nargs=-1)(command)


def _input(paths: tuple[str, ...], spec: str | None, seed: int, values: dict[str, Any]
           ) -> tuple[Any, dict[str, Any]]:
    """A command's input (the paths, or the generated graph) and its options."""
    if bool(paths) == bool(spec):
        _fail("give PATHS or --generate SPEC, not both" if paths
              else "give PATHS, or --generate SPEC")
    progress = values.pop("progress", None)
    options = from_cli(values, progress=sys.stderr.isatty() if progress is None else progress)
    if spec:
        from dtri import generated

        return generated(spec, seed=seed), vars(options)
    return list(paths), vars(options)


def _prepared(paths: tuple[str, ...], spec: str | None, seed: int, values: dict[str, Any]) -> Any:
    """The prepared graph of a command's input (its own session, closed on release)."""
    from dtri import prepare

    edges, options = _input(paths, spec, seed, values)
    return prepare(edges, **options)


def _estimated(paths: tuple[str, ...], spec: str | None, seed: int, values: dict[str, Any],
               approx: Any, explain: bool) -> Any:
    """The estimate of a command's input (``explain``: its plan), by the method the planner
    chooses (:func:`dtri.count`)."""
    from dtri import count

    edges, options = _input(paths, spec, seed, values)
    return count(edges, approx=approx, explain=explain, **options)


def _resumed_line(resumed: dict[str, dict[str, Any]] | None) -> None:
    """The stages a ``--checkpoint`` run skipped and the seconds that saved."""
    if not resumed:
        return
    shown = [f"{stage} ({facts['tasks']} of {facts['of']} tasks)" if "tasks" in facts
             else stage for stage, facts in resumed.items()]
    saved = sum(facts["seconds"] for facts in resumed.values())
    click.echo(f"resumed        {', '.join(shown)} from the checkpoint: saved {saved:.3f} s")


def _source(paths: tuple[str, ...], spec: str | None, seed: int) -> dict[str, Any]:
    return {"generate": spec, "seed": seed} if spec else {"paths": list(paths)}


@main.command(epilog=INPUT_MEANING)
@graph_source
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object with the count and the statistics (with --explain: "
                   "the plan; with --approx --explain: the estimate's plan).")
@click.option("--explain", is_flag=True,
              help="Plan the count and print the plan instead of counting: bins, wedge batches, "
                   "join per partition, and per task kind the tasks, estimated peak memory of "
                   "the largest task and estimated bytes moved between workers, and the "
                   "triangles estimated from a quick sample of wedges. The input is still read "
                   "and sorted; no wedge is written. With --approx: the estimate's plan instead "
                   "(the method and why, the colours or the wedge pilot), nothing sampled.")
@click.option("--approx", is_flag=True,
              help="Estimate instead of counting, with intervals: the triangles, transitivity "
                   "and average clustering from a uniform sample of wedges of the prepared "
                   "graph, or the triangles alone by colourful sampling of the input as it is "
                   "read (see --method). A graph where the wedge sample would cost about what "
                   "counting does is counted, and labelled exact.")
@click.option("--method", default=None, metavar="[auto|wedges|colours]",
              help="With --approx: wedges (wedge sampling), colours (colourful sampling: "
                   "edges whose ends share one of N vertex colours kept as the input is read, "
                   "the count scaled by N²; no transitivity or clustering), or auto: colours "
                   "for the count alone (--no-clustering) of at least "
                   "dtri.estimate-colours-min-edges input rows, else wedges  [default: auto]")
@click.option("--error", type=float, default=None,
              help="With --approx: the relative error of the triangle count, the interval's "
                   "half-width over the estimate  [default: 0.01]")
@click.option("--confidence", type=float, default=None,
              help="With --approx: the intervals' confidence  [default: 0.95]")
@click.option("--samples", type=int, default=None,
              help="With --approx: draw this many wedges instead of sizing the sample by "
                   "--error.")
@click.option("--seconds", type=float, default=None,
              help="With --approx: draw wedges for about this many seconds of the estimate's "
                   "own wall time (reading and preparing the graph not counted), at least a "
                   "first round, instead of sizing the sample by --error; --samples and "
                   "--sample-seed with the printed samples and seed repeat the estimate.")
@click.option("--sample-seed", type=int, default=None,
              help="With --approx: the sample's seed (default: a new one, printed).")
@click.option("--clustering/--no-clustering", "with_clustering", default=None,
              help="With --approx: also estimate the average clustering (a sample of "
                   "vertices, which scans every edge once); without it, a large input's "
                   "count may be colour-sampled (--method)  [default: clustering]")
def count(paths: tuple[str, ...], spec: str | None, seed: int, as_json: bool, explain: bool,
          approx: bool, method: str | None, error: float | None, confidence: float | None,
          samples: int | None, seconds: float | None, sample_seed: int | None,
          with_clustering: bool | None,
          **values: Any) -> None:
    """Count the triangles of the graph in PATHS (files, globs, directories or URLs), or of
    the graph that --generate SPEC makes."""
    from dtri import Approx

    asked: dict[str, Any] = {
        "error": error, "confidence": confidence, "samples": samples, "seconds": seconds,
        "seed": sample_seed, "average_clustering": with_clustering, "method": method}
    asked = {name: value for name, value in asked.items() if value is not None}
    if asked and not approx:
        flag = {"seed": "--sample-seed", "average_clustering": "--[no-]clustering"}.get(
            next(iter(asked)), f"--{next(iter(asked))}")
        _fail(f"{flag} goes with --approx")
    with _errors_as_one_line():
        wanted = Approx(**asked) if approx else None  # checked before the input is read
    source = _source(paths, spec, seed)
    if wanted is not None:
        with _errors_as_one_line():
            result = _estimated(paths, spec, seed, values, wanted, explain)
        if explain:
            _print_estimate_plan(result, as_json, source)
        else:
            _print_estimate(result, as_json, source)
        return
    with _errors_as_one_line(), _prepared(paths, spec, seed, values) as graph:
        result = graph.count(explain=explain)
        quick = graph.estimate(samples=QUICK_SAMPLES, seed=0, allow_exact=False) \
            if explain else None
        probed = graph.link_bandwidth() if explain else None
    if explain:
        forecast = None if quick is None else {
            "triangles": quick.triangles, "interval": quick.triangles_interval,
            "confidence": quick.confidence, "samples": quick.samples, "exact": quick.exact}
        if as_json:
            click.echo(json.dumps({**source, "plan": result.plan, "seconds": result.seconds,
                                   "read": result.read, "estimate": forecast,
                                   "peak_device_bytes": result.peak_device_bytes,
                                   "peak_device_source": result.peak_device_source,
                                   "peak_host_bytes": result.peak_host_bytes,
                                   "spilled_bytes": result.spilled_bytes,
                                   "read_back_bytes": result.read_back_bytes,
                                   "worker_host_bytes": result.worker_host_bytes,
                                   "moved_bytes": result.moved_bytes,
                                   "protocol": result.protocol,
                                   "protocol_note": result.protocol_note,
                                   "probed_link_bandwidth": probed}))
        else:
            _print_plan(result.plan)
            _print_comms(result.protocol, probed)
            _print_note(result.protocol_note)
            if quick is not None:
                low, high = quick.triangles_interval
                click.echo(f"estimate       {quick.triangles:.4g} triangles ("
                           f"{quick.confidence:.0%} interval {low:.4g} - {high:.4g}, from "
                           f"{quick.samples} samples of the {quick.wedges} oriented wedges)"
                           if not quick.exact
                           else f"estimate       {quick.triangles:.0f} triangles (exact: "
                           f"{quick.reason})")
            read = result.read
            click.echo(f"read           {read['partitions']} partitions of at most "
                       f"{read['largest_rows']} rows ({read['rows']} rows)")
            _print_peaks(result.peak_device_bytes, result.peak_device_source,
                         "measured (the stages run so far)")
            _print_host(result.peak_host_bytes, result.spilled_bytes, result.read_back_bytes,
                        "host peak so far (worker RSS)")
            _print_moves(result.moved_bytes, None)
        return
    if as_json:
        click.echo(json.dumps({**source, **result.to_dict()}))
        return
    click.echo(f"triangles      {result.triangles}")
    click.echo(f"vertices       {result.vertices}")
    click.echo(f"edges          {result.edges}")
    click.echo(f"wedges         {result.wedges} (oriented: pairs of a vertex's "
               "later neighbours, each a candidate triangle)")
    click.echo(f"bins           {result.bins}   batches {result.batches}   "
               f"partitions {result.partitions}")
    click.echo(f"decomposition  {_decomposition_line(result.plan['decomposition'])}")
    _print_prepare_moves(result.plan.get("moved_prepare"))
    click.echo(f"backend        {result.backend} ({result.workers} workers, memory budget "
               f"{format_bytes(result.memory_budget)}/worker, {result.orientation} orientation, "
               f"{result.order} order)")
    _print_note(result.protocol_note)
    click.echo("seconds        " + "  ".join(f"{k} {v:.3f}" for k, v in result.seconds.items()))
    _resumed_line(result.resumed)
    _print_peaks(result.peak_device_bytes, result.peak_device_source, "device peak")
    _print_host(result.peak_host_bytes, result.spilled_bytes, result.read_back_bytes,
                "host peak (worker RSS)")
    _print_moves(result.moved_bytes, result.link_bandwidth)


QUICK_SAMPLES = 1 << 14
"""Wedges of the quick estimate that ``--explain`` prints."""


def _print_estimate(result: Any, as_json: bool, source: dict[str, Any]) -> None:
    """An estimate of ``count --approx``: one JSON object, or its lines."""
    if as_json:
        click.echo(json.dumps({**source, **result.to_dict()}))
        return
    level = f"{result.confidence:.0%}"

    def line(name: str, value: float | None, interval: tuple[float, float] | None,
             digits: str) -> None:
        if value is None or interval is None:
            return  # not estimated (colourful sampling, or not asked for)
        if result.exact:
            click.echo(f"{name:<15}{value:{digits}} (exact)")
        else:
            low, high = interval
            click.echo(f"{name:<15}{value:{digits}}  ({level} interval {low:{digits}} - "
                       f"{high:{digits}})")

    line("triangles", result.triangles, result.triangles_interval, ".0f")
    line("transitivity", result.transitivity, result.transitivity_interval, ".6f")
    line("avg clustering", result.average_clustering, result.average_clustering_interval,
         ".6f")
    budget = "" if result.seconds_budget is None else \
        f"; time budget {result.seconds_budget:g} s"
    click.echo(f"method         {result.method}: {result.reason}{budget}; seed {result.seed}")
    if result.colours is not None:
        click.echo(f"colours        {result.colours}   sample {result.samples} edges ("
                   f"{result.closed} triangles)   pilot {result.pilot_samples} edges   "
                   f"backend {result.backend}")
    else:
        click.echo(f"vertices       {result.vertices}   edges {result.edges}   wedges "
                   f"{result.wedges}   backend {result.backend}")
    click.echo("seconds        " + "  ".join(f"{k} {v:.3f}" for k, v in result.seconds.items()))


def _print_estimate_plan(plan: Any, as_json: bool, source: dict[str, Any]) -> None:
    """The plan of ``count --approx --explain``: one JSON object, or its lines."""
    if as_json:
        click.echo(json.dumps({**source, "estimate_plan": plan.to_dict()}))
        return
    click.echo(f"method         {plan.method} ({plan.reason})")
    about = "about " if plan.rows_estimated else ""
    rows = "unknown before reading" if plan.input_rows is None else f"{about}{plan.input_rows}"
    click.echo(f"input rows     {rows}   colours from {plan.colours_min_edges} rows "
               f"(dtri.estimate-colours-min-edges)")
    target = f"±{plan.error:g} at {plan.confidence:g} confidence"
    if plan.colours is not None:
        low, high = plan.colours
        kept = "" if plan.kept_rows is None else f", about {plan.kept_rows} rows"
        pilot = "" if plan.pilot_rows is None else f" (about {plan.pilot_rows} rows)"
        click.echo(f"colours        {low} - {high}, powers of two; the read keeps the rows "
                   f"monochromatic under {low}{kept}")
        click.echo(f"pilot          {high} colours{pilot}, prepared and counted with its edge "
                   f"supports: the most colours predicted within {target} are taken, or the "
                   f"whole input is prepared for wedges if even {low} are not")
    else:
        click.echo(f"wedges         {plan.wedges} (the prepared graph's oriented wedges)")
        click.echo(f"pilot          {plan.samples} wedges asked for" if plan.samples else
                   f"pilot          {plan.pilot_samples} wedges size the sample for {target}")


def _print_peaks(peaks: dict[str, int] | None, source: str | None, title: str) -> None:
    """The measured peak device bytes per stage, when the workers measured them."""
    if not peaks:
        return
    click.echo(f"{title} ({source}): " + "  ".join(
        f"{stage} {format_bytes(value)}" for stage, value in peaks.items()))


HOST_FIELDS = ("peak_host_bytes", "spilled_bytes", "read_back_bytes", "worker_host_bytes")
"""The host side of a run's memory in its summary (as in :meth:`dtri.CountResult.to_dict`):
printed by :func:`_print_host`, not as lines of their own."""


def _print_host(peaks: dict[str, int] | None, spilled: dict[str, int] | None,
                read_back: dict[str, int] | None, title: str) -> None:
    """The measured peak resident host memory of a worker per stage and, where the workers
    spilled, the bytes written to disk and read back; nothing in this process."""
    if not peaks:
        return
    click.echo(f"{title}: " + "  ".join(
        f"{stage} {format_bytes(value)}" for stage, value in peaks.items()))
    if spilled and spilled.get("total"):
        stages = sorted((stage for stage in spilled if stage != "total"),
                        key=lambda stage: -spilled[stage])
        shown = ", ".join(f"{stage} {format_bytes(spilled[stage])}"
                          for stage in stages[:MOVED_STAGES_SHOWN])
        more = f", {len(stages) - MOVED_STAGES_SHOWN} more" \
            if len(stages) > MOVED_STAGES_SHOWN else ""
        click.echo(f"spilled        {format_bytes(spilled['total'])} to disk ({shown}{more}); "
                   f"read back {format_bytes((read_back or {}).get('total', 0))}")


def _decomposition_line(spread: dict[str, Any]) -> str:
    """The count's decomposition, why, and the bytes the busiest worker is predicted to pull
    under each (the plan's ``decomposition``)."""
    grid = f" on a {spread['side']} x {spread['side']} grid" if spread["kind"] == "2d" else ""
    line = f"{spread['kind']}{grid} ({spread['reason']})"
    predicted = [f"{kind} {format_bytes(sum(moved.values()))}"
                 for kind, moved in (("1d", spread["moved_1d"]), ("2d", spread["moved_2d"]))
                 if moved]
    if len(predicted) > 1:
        line += "; busiest worker pulls " + ", ".join(predicted)
    if spread.get("link_bandwidth"):
        line += f"; link {format_bytes(int(spread['link_bandwidth']))}/s (measured)"
    return line


def _print_prepare_moves(predicted: dict[str, int] | None) -> None:
    """The bytes the busiest worker is predicted to receive in each preparation stage (the
    plan's ``moved_prepare``), where something is predicted to move."""
    if not predicted or not any(predicted.values()):
        return
    click.echo("prepare moves  busiest worker receives " + "  ".join(
        f"{stage} {format_bytes(value)}" for stage, value in predicted.items() if value))


MOVED_STAGES_SHOWN = 3
"""Stages named in the text line of the bytes moved between workers (the most first)."""


def _print_moves(moved_bytes: dict[str, dict[str, int]] | None,
                 bandwidth: float | None) -> None:
    """One line on the bytes moved between workers, when something moved: the total, the
    stages that moved most, the most one worker received, and the transfers' bandwidth."""
    from dtri.report import most_to_one_worker, total_moved

    if not moved_bytes or not (moved := total_moved(moved_bytes)):
        return
    stages = sorted(((sum(workers.values()), stage) for stage, workers in moved_bytes.items()),
                    reverse=True)
    named = ", ".join(f"{stage} {format_bytes(value)}"
                      for value, stage in stages[:MOVED_STAGES_SHOWN])
    more = f", {len(stages) - MOVED_STAGES_SHOWN} more" if len(stages) > MOVED_STAGES_SHOWN \
        else ""
    rate = "" if bandwidth is None else f"; {format_bytes(int(bandwidth))}/s a transfer"
    click.echo(f"moved          {format_bytes(moved)} between workers ({named}{more}); most to "
               f"one worker {format_bytes(most_to_one_worker(moved_bytes))}{rate}")


def _print_comms(protocol: str | None, probed: float | None) -> None:
    """The workers' protocol and the probed bandwidth of their link (``--explain``), where
    there is a cluster."""
    if protocol is None:
        return
    link = "" if probed is None else \
        f", {format_bytes(int(probed))}/s between two workers (probed once per cluster)"
    click.echo(f"comms          {protocol}{link}")


def _print_note(note: str | None) -> None:
    """The line on faster comms (``protocol_note`` of a result)."""
    if note is not None:
        click.echo(f"note           {note}")


def _print_plan(plan: dict[str, Any]) -> None:
    """The plan of ``dtri count --explain`` as a short table."""
    partitions = plan["partitions"]
    click.echo(f"plan           vertices {plan['vertices']}   edges {plan['edges']}   "
               f"oriented wedges {plan['wedges']}   partitions {len(partitions)}")
    kernel = f" ({plan['kernel']} kernel: {plan['kernel_reason']})" if plan.get("kernel") \
        else ""
    click.echo(f"bins           {plan['bins']} ({plan['bins_with_edges']} with edges)   "
               f"batches {plan['batches']} of at most {plan['batch_size']} wedges   "
               f"join {plan['join']}{kernel}")
    choices = plan["choices"]
    if plan.get("placement"):
        click.echo(f"runs in        {plan['placement']}")
    click.echo(f"orientation    {choices['orientation']} ({choices['orientation_reason']})")
    click.echo(f"order          {choices['order']} ({choices['order_reason']})")
    click.echo(f"decomposition  {_decomposition_line(plan['decomposition'])}")
    if plan.get("wire_format"):
        click.echo(f"wire format    {plan['wire_format']} ({plan['wire_reason']})")
    _print_prepare_moves(plan.get("moved_prepare"))
    if choices.get("longest_list") is not None:
        click.echo(f"lists          longest {choices['longest_list']}   hash tables up to "
                   f"{choices['hash_max_members']} members   wedges/edge "
                   f"{choices['wedges_per_edge']:.1f}")
    click.echo(f"budget         {format_bytes(plan['memory_budget'])}/worker, "
               f"{format_bytes(plan['task_budget'])}/task ({plan['workers']} workers x "
               f"{plan['threads_per_worker']} threads, {plan['backend']})")
    if plan.get("host_memory"):
        from dtri.report import host_memory_line

        click.echo(f"host memory    {host_memory_line(plan['host_memory'])}")
    click.echo()
    click.echo(f"{'stage':<14} {'tasks':>9} {'peak/task':>12} {'moved':>12}")
    for stage, row in plan["stages"].items():
        if row["tasks"]:
            flag = "  over budget" if stage in plan["over_budget"] else ""
            click.echo(f"{'dtri-' + stage:<14} {row['tasks']:>9} "
                       f"{format_bytes(row['peak_bytes']):>12} "
                       f"{format_bytes(row['moved_bytes']):>12}{flag}")
    click.echo(f"{'total':<14} {'':>9} {format_bytes(plan['peak_bytes']):>12} "
               f"{format_bytes(plan['moved_bytes']):>12}")
    click.echo("estimates from the sizes alone: bin sizes assume sources spread evenly; bytes "
               "moved are an upper bound that ignores locality")


# ------------------------------------------------------------------------------ prepare

@main.command("prepare", epilog=INPUT_MEANING)
@graph_source
@click.option("-o", "--output", "out", required=True, metavar="PATH",
              help="The folder (or fsspec URL) to save the prepared graph in; its parent "
                   "exists, and it must not exist or be empty. Written beside it and renamed "
                   "to it when complete.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def prepare_command(paths: tuple[str, ...], spec: str | None, seed: int, out: str,
                    as_json: bool, **values: Any) -> None:
    """Prepare the graph in PATHS (or --generate SPEC) once, canonical, ranked, oriented and
    sorted, and save it to -o PATH as Parquet partitions with their metadata. Every analytic
    command then reads PATH as its input without preparing it again ('dtri count PATH'), on
    either backend and any number of workers."""
    import time

    from dtri.output import reserved_output

    with _errors_as_one_line(), reserved_output(out) as folder, \
            _prepared(paths, spec, seed, values) as graph:
        started = time.perf_counter()
        graph.write_to(folder.fs, folder.temporary_path)
        folder.commit()
        seconds = {k: v for k, v in graph.seconds.items() if k != "prepare_total"}
        seconds["save"] = round(time.perf_counter() - started, 6)
        summary = {"output": out, "vertices": graph.vertices, "edges": graph.edges,
                   "wedges": graph.wedges, "partitions": graph.partitions,
                   "backend": graph.backend, "orientation": graph.orientation,
                   "order": graph.order, "seconds": seconds}
    _report(summary, as_json, _source(paths, spec, seed))


# ------------------------------------------------------------------------------ analytics

def analytic_output(command: Callable[..., Any]) -> Callable[..., Any]:
    """``-o/--output`` (Parquet), ``--top`` and ``--json``."""
    command = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON object with the summary instead of text.")(command)
    command = click.option("--top", type=click.IntRange(min=0), default=10, show_default=True,
                           help="Rows of the summary's top list.")(command)
    return click.option("-o", "--output", "out", metavar="PATH",
                        help="Write the per-vertex or per-edge result to Parquet at PATH (a "
                             "directory or fsspec URL whose parent exists; it must not exist or "
                             "be empty), into a folder beside it renamed to PATH when complete."
                        )(command)


def _report(summary: dict[str, Any], as_json: bool, source: dict[str, Any]) -> None:
    """One JSON object, or the summary as aligned lines (a top list as a small table)."""
    if as_json:
        click.echo(json.dumps({**source, **summary}))
        return
    for name, value in summary.items():
        if name in ("top", "seconds", "peak_device_bytes", "task_device_bytes",
                    "protocol_note", "resumed", *HOST_FIELDS) \
                or value is None or value == {}:
            continue
        if name == "task_budget":
            value = format_bytes(value)
        click.echo(f"{name:<22} {value}")
    if summary.get("top"):
        columns = list(summary["top"][0])
        click.echo("top")
        click.echo("  " + "  ".join(f"{c:>14}" for c in columns))
        for row in summary["top"]:
            click.echo("  " + "  ".join(f"{_shown(row[c]):>14}" for c in columns))
    click.echo("seconds                " + "  ".join(f"{k} {v:.3f}"
                                                     for k, v in summary["seconds"].items()))
    _resumed_line(summary.get("resumed"))
    _print_peaks(summary.get("peak_device_bytes"), "measured", "device peak")
    _print_host(summary.get("peak_host_bytes"), summary.get("spilled_bytes"),
                summary.get("read_back_bytes"), "host peak (worker RSS)")
    _print_note(summary.get("protocol_note"))


def _shown(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _run_analytic(paths: tuple[str, ...], spec: str | None, seed: int, out: str | None,
                  as_json: bool, values: dict[str, Any],
                  analyse: Callable[[Any, Any], dict[str, Any]]) -> None:
    """Check ``out``, prepare the graph, run ``analyse(graph, folder)`` (the
    :class:`dtri.output.OutputFolder` of ``out``, or ``None``) and print its summary."""
    import time

    from dtri.output import reserved_output

    # the output is checked, and its folder made, before the input is read
    with _errors_as_one_line(), reserved_output(out) as folder, \
            _prepared(paths, spec, seed, values) as graph:
        started = time.perf_counter()
        summary = analyse(graph, folder)
        seconds = {k: v for k, v in graph.seconds.items() if k != "prepare_total"}
        seconds["analytic"] = round(time.perf_counter() - started, 6)
        summary["seconds"] = seconds
        memory = graph.memory()
        if (peaks := memory.peak_device_bytes()) is not None:
            summary["peak_device_bytes"] = peaks
            summary["task_device_bytes"] = memory.task_device_bytes()
        summary["host_tasks"] = memory.host_tasks()
        summary.update(memory.host.fields())
        summary["protocol_note"] = graph.runtime.protocol_note
        summary.update(partitions=graph.partitions, task_budget=graph.task_budget,
                       staging=graph.staging.where, resumed=dict(graph.resumed))
    _report(summary, as_json, _source(paths, spec, seed))


NEGATIVE_INTEGER = re.compile(r"-[0-9]+")


def _no_unknown_options(ctx: click.Context, *words: str) -> None:
    """Refuse, as click would, the words that look like options: a command that takes a
    negative number as an argument lets unknown options through to its arguments
    (``ignore_unknown_options``, or click reads ``-1`` as an option)."""
    for word in words:
        if word.startswith("-") and word != "-" and not NEGATIVE_INTEGER.fullmatch(word):
            known = [name for param in ctx.command.params for name in param.opts
                     if name.startswith("-")]
            raise click.NoSuchOption(word, possibilities=difflib.get_close_matches(word, known),
                                     ctx=ctx)


class TrussK(click.ParamType):
    """K of ``dtri ktruss``: a number is read as an ``int``, anything else kept as the text
    given, for the command to check as the API does (:func:`dtri.options.checked_k`), in one
    line."""

    name = "integer >= 0"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
            return int(value)
        return value


def _checked_truss_k(ctx: click.Context, paths: tuple[str, ...], own: dict[str, Any]) -> None:
    """``dtri ktruss``'s K, checked before the input is read: an option given where K or a
    path stands is refused as click would, and K must be an integer of at least 0."""
    _no_unknown_options(ctx, *(word for word in (own["k"], *paths) if isinstance(word, str)))
    with _errors_as_one_line():
        own["k"] = checked_k(own["k"])


@dataclass(frozen=True)
class Analytic:
    """One analytic command, declared once: :data:`ANALYTICS` makes the click commands.

    The command prepares its input (:func:`graph_source`), calls the
    :class:`dtri.PreparedGraph` ``method`` with the command's own parameters named in
    ``method_args``, and hands the result to ``summary`` (:mod:`dtri.report`), whose
    ``fields`` it prints in this order, followed by the run's statistics."""

    name: str
    help: str
    method: str
    """The :class:`dtri.PreparedGraph` method that computes the result."""
    summary: str
    """The function of :mod:`dtri.report` that summarises the result (and writes it with
    ``-o``): ``summary(graph, result, folder, top, **own)``."""
    fields: tuple[str, ...]
    """The output's fields (where the summary gives them), in order."""
    writes: bool = True
    """``-o/--output`` and ``--top`` (else ``--json`` alone)."""
    arguments: tuple[Callable[..., Any], ...] = ()
    """Click decorators of the arguments before PATHS (``ktruss``'s K)."""
    options: tuple[Callable[..., Any], ...] = ()
    """Click decorators of the command's own options, after the output's."""
    method_args: tuple[str, ...] = ()
    """The command's own parameters (or ``top``) passed to ``method``, in order."""
    check: Callable[[click.Context, tuple[str, ...], dict[str, Any]], None] | None = None
    """Checks (and converts) the command's own parameters before the input is read."""
    plan: str | None = None
    """The :class:`dtri.PreparedGraph` method ``--explain`` prints instead (its own
    parameters ``orbits``), where the command has an ``--explain`` option."""
    context_settings: dict[str, Any] = field(default_factory=dict)


ANALYTICS = (
    Analytic(
        "triangles",
        "Triangles at each vertex of the graph in PATHS (or --generate SPEC): the total, the "
        "vertices with the most, and with -o every vertex's count (columns vertex, "
        "triangles).",
        method="triangles", summary="triangles_summary",
        fields=("vertices", "edges", "triangles", "vertex_sum", "top", "output")),
    Analytic(
        "clustering",
        "Local clustering coefficients (NetworkX's definition: 0 below degree 2): the "
        "average, the transitivity, the highest, and with -o every vertex's (columns vertex, "
        "clustering).",
        method="clustering", summary="clustering_summary",
        fields=("vertices", "edges", "average_clustering", "transitivity", "top", "output")),
    Analytic(
        "transitivity",
        "The transitivity of the graph: 3 × triangles / connected triples.",
        method="transitivity", summary="transitivity_summary",
        fields=("vertices", "edges", "triangles", "transitivity"), writes=False),
    Analytic(
        "support",
        "Triangles on each edge (its support): the edges with the most, and with -o every "
        "edge once (columns u, v, support; u < v).",
        method="edge_support", summary="support_summary",
        fields=("vertices", "edges", "triangles", "top", "output")),
    Analytic(
        "ktruss",
        "The K-truss (networkx.k_truss): the largest subgraph in which every edge lies on at "
        "least K - 2 of its triangles (an integer K of at least 0; up to 2 every edge stays), "
        "without isolated vertices. Prints its size; with -o writes its edges (columns u, v; "
        "u < v).",
        method="k_truss", summary="ktruss_summary",
        fields=("k", "vertices", "edges", "triangles", "graph_vertices", "graph_edges",
                "output"),
        arguments=(click.argument("k", type=TrussK()),), method_args=("k",),
        check=_checked_truss_k, context_settings={"ignore_unknown_options": True}),
    Analytic(
        "truss",
        "The truss number of every edge (the largest k whose k-truss holds it): the largest, "
        "the edges per truss number, and with -o every edge once (columns u, v, truss).",
        method="truss_numbers", summary="truss_summary",
        fields=("vertices", "edges", "max_truss", "edges_per_truss", "top", "output")),
    Analytic(
        "graphlets",
        "Graphlet degrees (the Fast Graphlet Transform's orbits): per vertex, how many "
        "connected subgraphs of up to four vertices of each shape it is in, and at which "
        "position. Prints the graph's copies of each graphlet and the vertices in most "
        "4-cliques; with -o writes every vertex's frequencies (columns vertex, sigma0 ... "
        "sigma15).",
        method="graphlet_summary", summary="graphlets_summary",
        fields=("vertices", "edges", "orbits", "kind", "graphlets", "top", "output"),
        options=(
            click.option("--orbits", type=click.Choice(GRAPHLET_ORBITS), default="all",
                         show_default=True,
                         help="all: the 16 orbits of the graphlets up to four vertices "
                              "(σ0-σ15); sigma0-4: those up to three (σ0-σ4: vertex, degree, "
                              "2-path end and centre, triangles)."),
            click.option("--kind", type=click.Choice(GRAPHLET_KINDS), default="net",
                         show_default=True,
                         help="net: induced subgraphs (graphlet degrees); raw: subgraphs that "
                              "need not be induced."),
            click.option("--explain", is_flag=True,
                         help="Plan the stages and print the plan instead: tasks, triangle "
                              "record batches, 4-cycle wedges to bin, their batches and anchor "
                              "ranges, and the largest task's estimated peak bytes per stage. "
                              "The input is still read and sorted."),
        ),
        method_args=("orbits", "kind", "top"), plan="graphlet_plan"),
)
"""dtri's analytic commands, one declaration each, in the order ``dtri --help`` lists them."""


def _param_names(*decorators: Callable[..., Any]) -> list[str]:
    """The names of the parameters that click decorators add, in their order."""
    def probe() -> None: ...

    for decorator in reversed(decorators):
        probe = decorator(probe)
    return [param.name for param in reversed(getattr(probe, "__click_params__", []))]


def _analytic_command(analytic: Analytic) -> click.Command:
    """The click command of one :class:`Analytic`: ``[ARGUMENTS] PATHS...`` or ``--generate``,
    the run's options, then ``-o``, ``--top`` and ``--json`` (or ``--json`` alone), then the
    command's own options."""
    names = _param_names(*analytic.arguments, *analytic.options)

    def run(**params: Any) -> None:
        from dtri import report

        paths, spec, seed = params.pop("paths"), params.pop("spec"), params.pop("seed")
        out, top, as_json = params.pop("out", None), params.pop("top", 0), params.pop("as_json")
        own = {name: params.pop(name) for name in names}
        if analytic.check is not None:
            analytic.check(click.get_current_context(), paths, own)
        if own.pop("explain", False) and analytic.plan is not None:
            with _errors_as_one_line(), _prepared(paths, spec, seed, params) as graph:
                plan = getattr(graph, analytic.plan)(own["orbits"])
            _report_plan(plan, as_json, _source(paths, spec, seed))
            return
        summarise = getattr(report, analytic.summary)
        given = {**own, "top": top}

        def analyse(graph: Any, folder: Any) -> dict[str, Any]:
            result = getattr(graph, analytic.method)(*(given[name]
                                                       for name in analytic.method_args))
            summary = summarise(graph, result, folder, top, **own)
            return {name: summary[name] for name in analytic.fields if name in summary}

        _run_analytic(paths, spec, seed, out, as_json, params, analyse)

    command: Callable[..., Any] = run
    for option in reversed(analytic.options):
        command = option(command)
    if analytic.writes:
        command = analytic_output(command)
    else:
        command = click.option("--json", "as_json", is_flag=True,
                               help="Print one JSON object.")(command)
    command = graph_source(command)
    for argument in reversed(analytic.arguments):
        command = argument(command)
    return click.command(analytic.name, help=analytic.help, epilog=INPUT_MEANING,
                         context_settings=analytic.context_settings)(command)


for _analytic in ANALYTICS:
    main.add_command(_analytic_command(_analytic))


def _report_plan(plan: dict[str, Any], as_json: bool, source: dict[str, Any]) -> None:
    """A graphlet plan as one JSON object, or a line per stage."""
    if as_json:
        click.echo(json.dumps({**source, "plan": plan}))
        return
    click.echo(f"vertices {plan['vertices']}   edges {plan['edges']}   partitions "
               f"{plan['partitions']}   task budget {format_bytes(plan['task_budget'])}")
    for stage, facts in plan["stages"].items():
        shown = "  ".join(f"{k} {format_bytes(v) if k.endswith('bytes') else v}"
                          for k, v in facts.items())
        click.echo(f"{stage:<12} {shown}")


# ------------------------------------------------------------------------------ generate, bench

@main.command()
@click.argument("spec")
@click.option("-o", "--output", "out", required=True,
              help="Directory (or fsspec URL) to write, whose parent exists; it must not "
                   "exist or be empty. Written beside it and renamed to it when complete.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the generator.")
@click.option("--partitions", type=click.IntRange(min=1),
              help="Number of partitions, i.e. of files written (default: at most 16Mi edges "
                   "each).")
@click.option("--format", "fmt", type=click.Choice(GENERATED_FORMATS), default="parquet",
              show_default=True,
              help="parquet: src,dst int64 columns; snap: 'src dst' lines in part-*.txt; csv: "
                   "part-*.csv with a src,dst header.")
@click.option("--backend", type=click.Choice(BACKENDS), default="cpu", show_default=True,
              help="Generate with NumPy/pandas (cpu) or CuPy/cuDF (gpu); the edges are the "
                   "same.")
@click.option("--scheduler", default="threads", show_default=True,
              help="Dask scheduler: threads, synchronous, or the address of a running one.")
@click.option("--scheduler-file", type=click.Path(dir_okay=False),
              help="Scheduler file written by 'dask scheduler --scheduler-file'.")
def generate(spec: str, out: str, seed: int, partitions: int | None, fmt: str, backend: str,
             scheduler: str, scheduler_file: str | None) -> None:
    """Write the edge list of a generated graph SPEC (rmat:SCALE[:EDGE_FACTOR] or gnm:N:M).

    One file per partition; 'dtri count OUT' reads it back. The edges are the same for a
    given SPEC and --seed whatever --partitions and --backend are.
    """
    from dtri import write_generated

    with _errors_as_one_line():
        files = write_generated(spec, out, seed=seed, partitions=partitions, format=fmt,
                                backend=backend, scheduler=scheduler,
                                scheduler_file=scheduler_file)
    click.echo(f"wrote {spec} (seed {seed}) to {out}: {files} {fmt} file"
               f"{'s' if files != 1 else ''}")


@main.command()
@click.argument("graphs", nargs=-1, required=True)
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True,
              help="Runs of dtri and of each peer; the best time is reported.")
@click.option("--peers", default="auto", show_default=True,
              help="Other counters to compare with: auto (pylibcugraph on gpu; networkit, "
                   "graphblas, igraph and networkx on cpu), none, or a comma-separated list of "
                   "pylibcugraph, networkit, graphblas, igraph, networkx.")
@click.option("--output", type=click.Path(dir_okay=False),
              help="Also append each JSON line to this file.")
@cli_options("cluster", "memory")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the generated graphs.")
def bench(graphs: tuple[str, ...], repeat: int, peers: str, output: str | None, seed: int,
          **values: Any) -> None:
    """Time dtri on each GRAPH (a spec such as rmat:16, or a path) and compare with peers.

    Prints one JSON line per graph: its size and count, dtri's end-to-end and in-memory
    seconds (with the stages), edges per second, each worker's peak memory and spilled
    bytes, and each peer's seconds, count and whether it agrees. Exits with status 1 if a
    peer's count differs from dtri's.
    """
    from dtri.bench import BenchDisagreement, run_bench

    def emit(record: dict[str, Any]) -> None:
        line = json.dumps(record)
        click.echo(line)
        if output:
            with open(output, "a") as handle:
                handle.write(line + "\n")

    with _errors_as_one_line():
        try:
            run_bench(list(graphs), from_cli(values), emit, repeat=repeat, peers=peers,
                      seed=seed)
        except BenchDisagreement as error:
            _fail(error, code=1)


def run() -> None:
    """The ``dtri`` program (``python -m dtri`` too): :func:`main`, then the process ends once
    its output is out. Python's own end then takes the CUDA and UCX state of a GPU run apart
    object by object: 0.9 s after a four-GPU count on a 4 x H200 host, its cluster already
    closed. This end keeps the steps of Python's that come before: the threading module's
    exit hooks (executors told to stop), then the threads that are not daemons joined (the
    CUDA driver's start, :func:`dtri.start_cuda_driver`), then the ``atexit`` handlers (Dask's
    among them); the standard streams are flushed, and the process ends with the status
    :func:`main` gave. An error that escapes :func:`main` ends it as Python would, with its
    traceback."""
    try:
        main()
    except SystemExit as end:
        status = exit_status(end.code)
    else:
        status = 0
    shutdown = getattr(threading, "_shutdown", None)  # CPython's first step of its end
    if shutdown is None or threading.current_thread() is not threading.main_thread():
        sys.exit(status)  # Python's own end
    shutdown()  # the threading module's exit hooks, then every thread not a daemon joined
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):  # a closed pipe (| head): nothing more to say
            stream.flush()
    os._exit(status)


def exit_status(code: Any) -> int:
    """The status a process ends with for ``SystemExit(code)``, as Python gives it: 0 for
    ``None``, an int as it is, and 1 for anything else, which is printed on stderr."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1

"""``dtri count``: the exact count and its statistics, its plan (``--explain``), or an
estimate with intervals (``--approx``) and its plan."""

from __future__ import annotations

import json
from typing import Any

import click
from dask.utils import format_bytes

from dtri.cli.graph_input import INPUT_MEANING, command_input, graph_source, input_fields, prepared
from dtri.cli.printing import print_host, print_moves, print_note, print_peaks, resumed_line
from dtri.cli.program import errors_as_one_line, fail, main


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
          with_clustering: bool | None, **values: Any) -> None:
    """Count the triangles of the graph in PATHS (files, globs, directories or URLs), or of
    the graph that --generate SPEC makes."""
    import dask

    from dtri import Approx
    from dtri import count as counted  # "count" is this command

    asked: dict[str, Any] = {
        "error": error, "confidence": confidence, "samples": samples, "seconds": seconds,
        "seed": sample_seed, "average_clustering": with_clustering, "method": method}
    asked = {name: value for name, value in asked.items() if value is not None}
    if asked and not approx:
        flag = {"seed": "--sample-seed", "average_clustering": "--[no-]clustering"}.get(
            next(iter(asked)), f"--{next(iter(asked))}")
        fail(f"{flag} goes with --approx")
    with errors_as_one_line():
        wanted = Approx(**asked) if approx else None  # checked before the input is read
    source = input_fields(paths, spec, seed)
    if wanted is not None:
        with errors_as_one_line():
            edges, options = command_input(paths, spec, seed, values)
            result = counted(edges, approx=wanted, explain=explain, **options)
        if explain:
            _print_estimate_plan(result, as_json, source)
        else:
            _print_estimate(result, as_json, source)
        return
    # one count a process: numba's kernels are not loaded ahead for a next one
    with errors_as_one_line(), dask.config.set({"dtri.kernel-load-ahead": False}), \
            prepared(paths, spec, seed, values) as graph:
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
                                   **{name: getattr(result, name) for name in EXPLAINED},
                                   "probed_link_bandwidth": probed}))
        else:
            _print_plan(result.plan)
            _print_comms(result.protocol, probed)
            print_note(result.protocol_note)
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
            print_peaks(result.peak_device_bytes, result.peak_device_source,
                        "measured (the stages run so far)")
            print_host(result.peak_host_bytes, result.spilled_bytes, result.read_back_bytes,
                       "host peak so far (worker RSS)")
            print_moves(result.moved_bytes, None)
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
    print_note(result.protocol_note)
    click.echo("seconds        " + "  ".join(f"{k} {v:.3f}" for k, v in result.seconds.items()))
    resumed_line(result.resumed)
    print_peaks(result.peak_device_bytes, result.peak_device_source, "device peak")
    print_host(result.peak_host_bytes, result.spilled_bytes, result.read_back_bytes,
               "host peak (worker RSS)")
    print_moves(result.moved_bytes, result.link_bandwidth)


QUICK_SAMPLES = 1 << 14
"""Wedges of the quick estimate that ``--explain`` prints."""
EXPLAINED = ("peak_device_bytes", "peak_device_source", "peak_host_bytes", "spilled_bytes",
             "read_back_bytes", "worker_host_bytes", "moved_bytes", "protocol", "protocol_note")
"""The result's fields that ``count --explain --json`` prints after the plan, in this order."""


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


def _decided(value: Any) -> str:
    """One value of the run's record as ``--explain`` shows it: sizes as sizes, and of a
    group of values those that are set."""
    if isinstance(value, dict):
        shown = [f"{k}={_decided(v)}" for k, v in value.items() if v is not None]
        return ", ".join(shown) if shown else "none"
    if isinstance(value, int) and not isinstance(value, bool):
        return format_bytes(value)
    return "none" if value is None else str(value)


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


def _print_comms(protocol: str | None, probed: float | None) -> None:
    """The workers' protocol and the probed bandwidth of their link (``--explain``), where
    there is a cluster."""
    if protocol is None:
        return
    link = "" if probed is None else \
        f", {format_bytes(int(probed))}/s between two workers (probed once per cluster)"
    click.echo(f"comms          {protocol}{link}")


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
    for n, (name, entry) in enumerate(plan.get("run", {}).items()):
        click.echo(f"{'decided' if n == 0 else '':<15}{name} {_decided(entry['value'])} "
                   f"({entry['reason']})")
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



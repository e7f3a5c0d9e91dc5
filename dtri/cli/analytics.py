"""The analytic commands (``dtri triangles``, ``clustering``, ``transitivity``, ``support``,
``ktruss``, ``truss``, ``graphlets``), one :class:`Analytic` declaration each: a method of
:class:`dtri.PreparedGraph` and its summary in :mod:`dtri.report`."""

from __future__ import annotations

import difflib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click
from dask.utils import format_bytes

from dtri.cli.graph_input import INPUT_MEANING, graph_source, input_fields, prepared
from dtri.cli.printing import print_summary
from dtri.cli.program import errors_as_one_line, main
from dtri.options import GRAPHLET_KINDS, GRAPHLET_ORBITS, checked_k


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


def run_analytic(paths: tuple[str, ...], spec: str | None, seed: int, out: str | None,
                  as_json: bool, values: dict[str, Any],
                  analyse: Callable[[Any, Any], dict[str, Any]]) -> None:
    """Check ``out``, prepare the graph, run ``analyse(graph, folder)`` (the
    :class:`dtri.output.OutputFolder` of ``out``, or ``None``) and print its summary."""
    from dtri.output import reserved_output

    # the output is checked, and its folder made, before the input is read
    with errors_as_one_line(), reserved_output(out) as folder, \
            prepared(paths, spec, seed, values) as graph:
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
    print_summary(summary, as_json, input_fields(paths, spec, seed))


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
    with errors_as_one_line():
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
            with errors_as_one_line(), prepared(paths, spec, seed, params) as graph:
                plan = getattr(graph, analytic.plan)(own["orbits"])
            _report_plan(plan, as_json, input_fields(paths, spec, seed))
            return
        summarise = getattr(report, analytic.summary)
        given = {**own, "top": top}

        def analyse(graph: Any, folder: Any) -> dict[str, Any]:
            result = getattr(graph, analytic.method)(*(given[name]
                                                       for name in analytic.method_args))
            summary = summarise(graph, result, folder, top, **own)
            return {name: summary[name] for name in analytic.fields if name in summary}

        run_analytic(paths, spec, seed, out, as_json, params, analyse)

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


for _analytic in ANALYTICS:
    main.add_command(_analytic_command(_analytic))

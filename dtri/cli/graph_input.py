"""A graph command's input: ``PATHS...`` or ``--generate SPEC``, and the run's options
(:func:`graph_source`), for the public API's :func:`dtri.prepare` and :func:`dtri.count`."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from dtri.cli.program import fail
from dtri.options import GROUPS, Backend, cli_options, from_cli

INPUT_MEANING = """\
Input is read as a simple undirected graph: an edge and its reverse are one edge, repeated
edges count once, self-loops are ignored (their vertex still counts as a vertex), and
columns after the first two (weights, timestamps) are ignored.
"""


def graph_source(command: Callable[..., Any]) -> Callable[..., Any]:
    """``PATHS...`` or ``--generate SPEC --seed N``, the input options, the cluster, memory and
    plan options, ``--progress``. A command whose backend is not ``cpu`` starts the CUDA
    driver first (:func:`dtri.start_cuda_driver`), so that it starts while the command
    imports dtri's API."""

    body = command

    @functools.wraps(body)
    def driver_first(*args: Any, **values: Any) -> Any:
        if values.get("backend") != Backend.CPU:
            from dtri import start_cuda_driver

            start_cuda_driver(values)
        return body(*args, **values)

    command = click.option("--progress/--no-progress", default=None,
                           help="Progress on stderr: a line per stage as it ends (stage, "
                                "seconds, rows where known), after Dask's progress bar on a "
                                "cluster (default: when stderr is a terminal).")(driver_first)
    command = cli_options(*GROUPS)(command)
    command = click.option("--seed", type=int, default=0, show_default=True,
                           help="Seed of the --generate graph.")(command)
    command = click.option("--generate", "spec", metavar="SPEC",
                           help="A generated graph instead of PATHS: rmat:SCALE[:EDGE_FACTOR] "
                                "(Graph500 R-MAT) or gnm:N:M, built on the workers.")(command)
    return click.argument("paths", nargs=-1)(command)


def output_folder(what: str) -> Callable[[Callable[..., Any]], Any]:
    """``-o/--output PATH``, required: the folder a command writes ``what`` to, renamed into
    place when complete."""
    return click.option("-o", "--output", "out", required=True, metavar="PATH",
                        help=f"The folder (or fsspec URL) to {what}; its parent exists, and it "
                             "must not exist or be empty. Written beside it and renamed to it "
                             "when complete.")


def command_input(paths: tuple[str, ...], spec: str | None, seed: int, values: dict[str, Any]
                  ) -> tuple[Any, dict[str, Any]]:
    """A command's input (the paths, or the generated graph) and its options, as
    :func:`dtri.prepare` and :func:`dtri.count` take them."""
    if bool(paths) == bool(spec):
        fail("give PATHS or --generate SPEC, not both" if paths
             else "give PATHS, or --generate SPEC")
    progress = values.pop("progress", None)
    options = from_cli(values, progress=sys.stderr.isatty() if progress is None else progress)
    if spec:
        from dtri import generated

        return generated(spec, seed=seed), vars(options)
    return list(paths), vars(options)


def prepared(paths: tuple[str, ...], spec: str | None, seed: int, values: dict[str, Any]) -> Any:
    """The prepared graph of a command's input (its own session, closed on release)."""
    from dtri import prepare

    edges, options = command_input(paths, spec, seed, values)
    return prepare(edges, **options)


def input_fields(paths: tuple[str, ...], spec: str | None, seed: int) -> dict[str, Any]:
    """The input as a command's JSON names it: its paths, or its spec and seed."""
    return {"generate": spec, "seed": seed} if spec else {"paths": list(paths)}


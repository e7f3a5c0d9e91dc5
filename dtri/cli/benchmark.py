"""``dtri bench``: the command of :mod:`dtri.bench`, one JSON line per graph."""

from __future__ import annotations

import json
from typing import Any

import click

from dtri.cli.program import errors_as_one_line, fail, main
from dtri.options import cli_options, from_cli


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
    seconds (with the stages), edges per second, the in-memory join's bytes read and
    bandwidth (on the GPU also as a fraction of its peak), each worker's peak memory and
    spilled bytes, and each peer's seconds, count and whether it agrees. Exits with status 1 if a
    peer's count differs from dtri's.
    """
    from dtri.bench import BenchDisagreement, run_bench

    def emit(record: dict[str, Any]) -> None:
        line = json.dumps(record)
        click.echo(line)
        if output:
            with open(output, "a") as handle:
                handle.write(line + "\n")

    with errors_as_one_line():
        try:
            run_bench(list(graphs), from_cli(values), emit, repeat=repeat, peers=peers,
                      seed=seed)
        except BenchDisagreement as error:
            fail(error, code=1)

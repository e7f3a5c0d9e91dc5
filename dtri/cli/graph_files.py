"""The commands that write a graph to a folder: ``dtri prepare`` (the prepared graph, for every
analytic command to read without preparing it again) and ``dtri generate`` (the edge list of a
generated graph)."""

from __future__ import annotations

import time
from typing import Any

import click

from dtri.cli.graph_input import INPUT_MEANING, graph_source, input_fields, output_folder, prepared
from dtri.cli.printing import print_summary
from dtri.cli.program import errors_as_one_line, main
from dtri.options import BACKENDS, GENERATED_FORMATS


@main.command("prepare", epilog=INPUT_MEANING)
@graph_source
@output_folder("save the prepared graph in")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def prepare_command(paths: tuple[str, ...], spec: str | None, seed: int, out: str,
                    as_json: bool, **values: Any) -> None:
    """Prepare the graph in PATHS (or --generate SPEC) once, canonical, ranked, oriented and
    sorted, and save it to -o PATH as Parquet partitions with their metadata. Every analytic
    command then reads PATH as its input without preparing it again ('dtri count PATH'), on
    either backend and any number of workers."""
    from dtri.output import reserved_output

    with errors_as_one_line(), reserved_output(out) as folder, \
            prepared(paths, spec, seed, values) as graph:
        started = time.perf_counter()
        graph.write_to(folder.fs, folder.temporary_path)
        folder.commit()
        seconds = {k: v for k, v in graph.seconds.items() if k != "prepare_total"}
        seconds["save"] = round(time.perf_counter() - started, 6)
        summary = {"output": out, "vertices": graph.vertices, "edges": graph.edges,
                   "wedges": graph.wedges, "partitions": graph.partitions,
                   "backend": graph.backend, "orientation": graph.orientation,
                   "order": graph.order, "seconds": seconds}
    print_summary(summary, as_json, input_fields(paths, spec, seed))


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

    with errors_as_one_line():
        files = write_generated(spec, out, seed=seed, partitions=partitions, format=fmt,
                                backend=backend, scheduler=scheduler,
                                scheduler_file=scheduler_file)
    click.echo(f"wrote {spec} (seed {seed}) to {out}: {files} {fmt} file"
               f"{'s' if files != 1 else ''}")

"""The ``dtri`` command line: a thin layer over :func:`dtri.count`."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from dask.utils import format_bytes, parse_bytes

from dtri.orient import ORIENTATIONS
from dtri.read import FORMATS
from dtri.session import BACKENDS

INPUT_MEANING = """\
Input is read as a simple undirected graph: an edge and its reverse are one edge, repeated
edges count once, self-loops are ignored (their vertex still counts as a vertex), and
columns after the first two (weights, timestamps) are ignored.
"""


class ByteSize(click.ParamType):
    """A byte count such as 2GiB, 500MB or 1000000."""

    name = "bytes"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_bytes(value)
        except ValueError:
            self.fail(f"{value!r} is not a size such as 2GiB, 500MB or 1000000", param, ctx)


def _columns(value: str | None) -> tuple[Any, Any] | None:
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",")]
    if len(parts) != 2 or not all(parts):
        raise click.BadParameter("give two columns, e.g. --columns src,dst or --columns 0,1")
    return tuple(int(p) if p.isdigit() else p for p in parts)  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dtri")
def main() -> None:
    """dtri: exact triangle counting for graphs too big for one GPU, as a Dask pipeline on
    cuDF (GPU) or pandas (CPU) partitions."""


@main.command(epilog=INPUT_MEANING)
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(("auto", *FORMATS)), default="auto",
              show_default=True,
              help="Input format; auto picks by extension (.mtx, .csv, .tsv, .parquet, else SNAP "
                   "text). .gz/.bz2 are read transparently.")
@click.option("--columns", help="Source and target columns, by name or 0-based position "
                                "(CSV/TSV/Parquet), e.g. src,dst or 0,1.")
@click.option("--header/--no-header", default=None,
              help="CSV/TSV: whether the first line is a header (default: detected).")
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
              help="cpu: pandas partitions; gpu: cuDF partitions on dask-cuda workers; auto: gpu "
                   "when cuDF imports and a GPU is visible.")
@click.option("--scheduler", envvar="DASK_SCHEDULER_ADDRESS",
              help="Address of a running Dask scheduler (tcp://host:8786; also read from "
                   "DASK_SCHEDULER_ADDRESS), or 'threads'/'synchronous'. Default: a local "
                   "cluster on this machine's GPUs or cores.")
@click.option("--scheduler-file", type=click.Path(dir_okay=False),
              help="Scheduler file written by 'dask scheduler --scheduler-file'.")
@click.option("--workers", type=click.IntRange(min=1),
              help="Workers of the local cluster (default: one per GPU, or per core).")
@click.option("--memory-budget", type=ByteSize(),
              help="Memory one worker may plan for, e.g. 8GiB (default: a quarter of the "
                   "worker's memory, GPU memory on the GPU backend).")
@click.option("--bins", type=click.IntRange(min=1),
              help="Number of radix bins, a power of two (default: from the sizes).")
@click.option("--orientation", type=click.Choice(ORIENTATIONS), default="degree",
              show_default=True, help="Orient edges by (degree, id) or by id.")
@click.option("--blocksize", default="64MiB", show_default=True,
              help="Bytes of text per read partition.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the count and "
                                                        "the statistics.")
@click.option("--progress/--no-progress", default=None,
              help="Dask progress bars on stderr (default: when stderr is a terminal).")
def count(paths: tuple[str, ...], fmt: str, columns: str | None, header: bool | None,
          backend: str, scheduler: str | None, scheduler_file: str | None, workers: int | None,
          memory_budget: int | None, bins: int | None, orientation: str, blocksize: str,
          as_json: bool, progress: bool | None) -> None:
    """Count the triangles of the graph in PATHS (files, globs, directories or URLs)."""
    from dtri.api import count as run_count
    from dtri.errors import DtriError

    try:
        result = run_count(
            list(paths), format=fmt, columns=_columns(columns), header=header, backend=backend,
            scheduler=scheduler, scheduler_file=scheduler_file, workers=workers,
            memory_budget=memory_budget, bins=bins, orientation=orientation,
            blocksize=blocksize,
            progress=sys.stderr.isatty() if progress is None else progress,
        )
    except (DtriError, ValueError, OSError) as error:
        click.echo(f"dtri: error: {error}", err=True)
        sys.exit(2)
    if as_json:
        click.echo(json.dumps({"paths": list(paths), **result.to_dict()}))
        return
    click.echo(f"triangles      {result.triangles}")
    click.echo(f"vertices       {result.vertices}")
    click.echo(f"edges          {result.edges}")
    click.echo(f"wedges         {result.wedges}")
    click.echo(f"bins           {result.bins}   batches {result.batches}   "
               f"partitions {result.partitions}")
    click.echo(f"backend        {result.backend} ({result.workers} workers, memory budget "
               f"{format_bytes(result.memory_budget)}/worker, {result.orientation} orientation)")
    click.echo("seconds        " + "  ".join(f"{k} {v:.3f}" for k, v in result.seconds.items()))

"""The ``dtri`` command line: a thin layer over :func:`dtri.count`."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from dask.utils import format_bytes, parse_bytes

from dtri.input.read import FORMATS
from dtri.kernels.orient import ORIENTATIONS
from dtri.pipeline import JOINS
from dtri.runtime.session import BACKENDS, PROTOCOLS
from dtri.runtime.staging import STAGINGS

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


MEMORY_CAP_OPTIONS = (
    click.option(
        "--memory-limit", type=ByteSize(),
        help="Host memory per worker of the local cluster, e.g. 4GiB: Dask spills stored "
             "results to disk above 60% of it (their size) or 70% (process memory); pause "
             "and terminate are off. Default: Dask's (RAM / workers)."),
    click.option(
        "--spill-directory", type=click.Path(file_okay=False),
        help="Where the local cluster's workers spill (default: Dask's temporary-directory, "
             "else the system's)."),
    click.option(
        "--device-memory-limit", type=ByteSize(),
        help="GPU: device memory of stored results per worker above which dask-cuda moves "
             "them to host memory (default: dask-cuda's 80% of the GPU; with --rmm-pool-size, "
             "the pool less twice the memory budget)."),
    click.option(
        "--rmm-pool-size", type=ByteSize(),
        help="GPU: hard cap on the GPU memory per worker: an RMM pool of this size that "
             "cannot grow, shared by cuDF and CuPy. The default --memory-budget is a quarter "
             "of it."),
)
"""Memory options of the local cluster (:class:`dtri.runtime.session.MemoryCaps`)."""

scheduler_file_option = click.option(
    "--scheduler-file", type=click.Path(dir_okay=False),
    help="Scheduler file written by 'dask scheduler --scheduler-file'.")


def local_cluster_options(command: Any) -> Any:
    """``--workers``, ``--protocol`` and the memory caps: the shape of the local cluster a
    command starts (caps given with a running cluster are an error)."""
    for option in reversed(MEMORY_CAP_OPTIONS):
        command = option(command)
    command = click.option(
        "--protocol", type=click.Choice(PROTOCOLS), default="auto", show_default=True,
        help="Comms of the local cluster started for the run: auto is UCX (NVLink) between "
             "several GPU workers when distributed-ucxx is installed, else TCP.")(command)
    return click.option(
        "--workers", type=click.IntRange(min=1),
        help="Workers of the local cluster (default: one per GPU, or per core).")(command)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dtri")
def main() -> None:
    """dtri: exact triangle counting for graphs too big for one GPU, as a Dask pipeline on
    cuDF (GPU) or pandas (CPU) partitions."""


def _fail(message: Any, code: int = 2) -> None:
    """Print one ``dtri: error:`` line on stderr and exit."""
    click.echo(f"dtri: error: {message}", err=True)
    sys.exit(code)


@main.command(epilog=INPUT_MEANING)
@click.argument("paths", nargs=-1)
@click.option("--generate", "spec", metavar="SPEC",
              help="Count a generated graph instead of PATHS: rmat:SCALE[:EDGE_FACTOR] "
                   "(Graph500 R-MAT) or gnm:N:M, built on the workers.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the --generate graph.")
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
@scheduler_file_option
@local_cluster_options
@click.option("--memory-budget", type=ByteSize(),
              help="Memory one worker may plan for, e.g. 8GiB (default: a quarter of the "
                   "worker's memory, GPU memory on the GPU backend, or of --rmm-pool-size / "
                   "--memory-limit when given).")
@click.option("--bins", type=click.IntRange(min=1),
              help="Number of radix bins, a power of two (default: from the sizes).")
@click.option("--orientation", type=click.Choice(ORIENTATIONS), default="degree",
              show_default=True, help="Orient edges by (degree, id) or by id.")
@click.option("--join", type=click.Choice(JOINS), default="auto", show_default=True,
              help="wedges: write closure keys in budget-sized batches, radix-bin, sorted "
                   "search; intersect: fused sorted-list intersection, no wedge written (a CUDA "
                   "kernel on GPUs); auto: per partition from its wedge count.")
@click.option("--staging", type=click.Choice(STAGINGS), default="auto", show_default=True,
              help="Where stage results wait between tasks: host (host memory; each GPU task "
                   "moves its own inputs to the device and its results back), device (GPU "
                   "memory, spilled by dask-cuda), auto: host when --rmm-pool-size caps the "
                   "GPU workers, device otherwise.")
@click.option("--blocksize", default="64MiB", show_default=True,
              help="Bytes of text per read partition.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object with the count and the statistics (with --explain: "
                   "the plan).")
@click.option("--explain", is_flag=True,
              help="Plan the count and print the plan instead of counting: bins, wedge batches, "
                   "join per partition, and per task kind the tasks, estimated peak memory of "
                   "the largest task and estimated bytes moved between workers. The input is "
                   "still read and sorted; no wedge is written.")
@click.option("--progress/--no-progress", default=None,
              help="Dask progress bars on stderr (default: when stderr is a terminal).")
def count(paths: tuple[str, ...], spec: str | None, seed: int, fmt: str, columns: str | None,
          header: bool | None, backend: str, scheduler: str | None, scheduler_file: str | None,
          workers: int | None, protocol: str, memory_limit: int | None,
          spill_directory: str | None, device_memory_limit: int | None,
          rmm_pool_size: int | None, memory_budget: int | None, bins: int | None,
          orientation: str, join: str, staging: str, blocksize: str, as_json: bool,
          explain: bool, progress: bool | None) -> None:
    """Count the triangles of the graph in PATHS (files, globs, directories or URLs), or of
    the graph that --generate SPEC makes."""
    from dtri.api import count as run_count
    from dtri.errors import DtriError

    if bool(paths) == bool(spec):
        _fail("give PATHS or --generate SPEC, not both" if paths
              else "give PATHS to count, or --generate SPEC")
    try:
        if spec:
            from dtri.input.generate import from_spec
            from dtri.runtime.session import resolve_backend

            backend = resolve_backend(backend, False)
            edges: Any = from_spec(spec, seed=seed, backend=backend)
        else:
            edges = list(paths)
        result = run_count(
            edges, format=fmt, columns=_columns(columns), header=header, backend=backend,
            scheduler=scheduler, scheduler_file=scheduler_file, workers=workers,
            protocol=protocol, memory_budget=memory_budget, bins=bins, orientation=orientation,
            join=join, blocksize=blocksize, explain=explain, memory_limit=memory_limit,
            spill_directory=spill_directory, device_memory_limit=device_memory_limit,
            rmm_pool_size=rmm_pool_size, staging=staging,
            progress=sys.stderr.isatty() if progress is None else progress,
        )
    except (DtriError, ValueError, OSError) as error:
        _fail(error)
    source = {"generate": spec, "seed": seed} if spec else {"paths": list(paths)}
    if explain:
        if as_json:
            click.echo(json.dumps({**source, "plan": result.plan, "seconds": result.seconds}))
        else:
            _print_plan(result.plan)
        return
    if as_json:
        click.echo(json.dumps({**source, **result.to_dict()}))
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


def _print_plan(plan: dict[str, Any]) -> None:
    """The plan of ``dtri count --explain`` as a short table."""
    partitions = plan["partitions"]
    click.echo(f"plan           vertices {plan['vertices']}   edges {plan['edges']}   "
               f"wedges {plan['wedges']}   partitions {len(partitions)}")
    click.echo(f"bins           {plan['bins']} ({plan['bins_with_edges']} with edges)   "
               f"batches {plan['batches']} of at most {plan['batch_size']} wedges   "
               f"join {plan['join']}")
    click.echo(f"budget         {format_bytes(plan['memory_budget'])}/worker, "
               f"{format_bytes(plan['task_budget'])}/task ({plan['workers']} workers x "
               f"{plan['threads_per_worker']} threads, {plan['backend']})")
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


GENERATE_FORMATS = ("parquet", "snap", "csv")


@main.command()
@click.argument("spec")
@click.option("-o", "--output", "out", required=True,
              help="Directory (or fsspec URL) to write; it must not exist or be empty.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the generator.")
@click.option("--partitions", type=click.IntRange(min=1),
              help="Number of partitions, i.e. of files written (default: at most 16Mi edges "
                   "each).")
@click.option("--format", "fmt", type=click.Choice(GENERATE_FORMATS), default="parquet",
              show_default=True,
              help="parquet: src,dst int64 columns; snap: 'src dst' lines in part-*.txt; csv: "
                   "part-*.csv with a src,dst header.")
@click.option("--backend", type=click.Choice(BACKENDS), default="cpu", show_default=True,
              help="Generate with NumPy/pandas (cpu) or CuPy/cuDF (gpu); the edges are the "
                   "same.")
@click.option("--scheduler", default="threads", show_default=True,
              help="Dask scheduler: threads, synchronous, or the address of a running one.")
@scheduler_file_option
def generate(spec: str, out: str, seed: int, partitions: int | None, fmt: str, backend: str,
             scheduler: str, scheduler_file: str | None) -> None:
    """Write the edge list of a generated graph SPEC (rmat:SCALE[:EDGE_FACTOR] or gnm:N:M).

    One file per partition; 'dtri count OUT' reads it back. The edges are the same for a
    given SPEC and --seed whatever --partitions and --backend are.
    """
    from fsspec.core import url_to_fs

    from dtri.errors import DtriError
    from dtri.input.generate import from_spec
    from dtri.runtime.session import open_session, resolve_backend

    try:
        chosen = resolve_backend(backend, False)
        frame = from_spec(spec, seed=seed, npartitions=partitions, backend=chosen)
        fs, path = url_to_fs(out)
        if fs.exists(path) and (not fs.isdir(path) or fs.ls(path)):
            raise DtriError(f"{out} already exists; give a new or empty directory")
        fs.makedirs(path, exist_ok=True)
        with open_session(chosen, scheduler, scheduler_file):
            if fmt == "parquet":
                frame.to_parquet(out, write_index=False)
            else:
                # Text is written from pandas: cuDF partitions are copied to the host first.
                text = frame.to_backend("pandas") if chosen == "gpu" else frame
                suffix = "txt" if fmt == "snap" else "csv"
                text.to_csv(f"{out.rstrip('/')}/part-*.{suffix}",
                            name_function=lambda i: f"{i:05d}", index=False,
                            sep=" " if fmt == "snap" else ",", header=fmt == "csv")
    except (DtriError, ValueError, OSError) as error:
        _fail(error)
    click.echo(f"wrote {spec} (seed {seed}) to {out}: {frame.npartitions} {fmt} file"
               f"{'s' if frame.npartitions != 1 else ''}")


@main.command()
@click.argument("graphs", nargs=-1, required=True)
@click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
              help="Backend of dtri's runs (and of the generated graphs).")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True,
              help="Runs of dtri and of each peer; the best time is reported.")
@click.option("--peers", default="auto", show_default=True,
              help="Other counters to compare with: auto (pylibcugraph on gpu; networkit and "
                   "networkx on cpu), none, or a comma-separated list of pylibcugraph, "
                   "networkit, networkx.")
@click.option("--output", type=click.Path(dir_okay=False),
              help="Also append each JSON line to this file.")
@click.option("--scheduler", envvar="DASK_SCHEDULER_ADDRESS",
              help="Address of a running Dask scheduler, or 'threads'/'synchronous'. Default: "
                   "a local cluster, started once for the whole benchmark.")
@scheduler_file_option
@local_cluster_options
@click.option("--memory-budget", type=ByteSize(),
              help="Memory one worker may plan for (default: a quarter of the worker's "
                   "memory or cap).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the generated graphs.")
def bench(graphs: tuple[str, ...], backend: str, repeat: int, peers: str, output: str | None,
          scheduler: str | None, scheduler_file: str | None, workers: int | None,
          protocol: str, memory_limit: int | None, spill_directory: str | None,
          device_memory_limit: int | None, rmm_pool_size: int | None,
          memory_budget: int | None, seed: int) -> None:
    """Time dtri on each GRAPH (a spec such as rmat:16, or a path) and compare with peers.

    Prints one JSON line per graph: its size and count, dtri's end-to-end and in-memory
    seconds (with the stages), edges per second, each worker's peak memory and spilled
    bytes, and each peer's seconds, count and whether it agrees. Exits with status 1 if a
    peer's count differs from dtri's.
    """
    from dtri.bench import BenchDisagreement, BenchOptions, run_bench
    from dtri.errors import DtriError

    def emit(record: dict[str, Any]) -> None:
        line = json.dumps(record)
        click.echo(line)
        if output:
            with open(output, "a") as handle:
                handle.write(line + "\n")

    options = BenchOptions(backend=backend, repeat=repeat, peers=peers, scheduler=scheduler,
                           scheduler_file=scheduler_file, workers=workers, seed=seed,
                           memory_budget=memory_budget, protocol=protocol,
                           memory_limit=memory_limit, spill_directory=spill_directory,
                           device_memory_limit=device_memory_limit,
                           rmm_pool_size=rmm_pool_size)
    try:
        run_bench(list(graphs), options, emit)
    except BenchDisagreement as error:
        _fail(error, code=1)
    except (DtriError, ValueError, OSError) as error:
        _fail(error)

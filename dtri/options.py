"""Every option of a run, in one place, validated once.

:class:`Options` is what the Python API takes (as keywords), what the command line builds from
its flags (:func:`cli_options` makes the click options from the same fields) and what every
layer below reads. A value is checked and normalised when the object is made (sizes such as
``"2GiB"`` become bytes, names are checked against their choices, combinations that cannot
work are refused), so no layer re-declares or re-checks an option.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, replace
from enum import StrEnum
from typing import Any

from dask.utils import parse_bytes

from dtri.errors import ConfigurationError

BACKENDS = ("auto", "cpu", "gpu")


class Backend(StrEnum):
    """The backend a run decided on (``--backend``, ``auto`` resolved once when the runtime
    opens: :func:`dtri.runtime.resolve.choose_backend`). It equals its name as a string
    (``"cpu"``, ``"gpu"``), so it prints, compares and serialises as one."""

    CPU = "cpu"
    GPU = "gpu"

    @property
    def on_gpu(self) -> bool:
        """cuDF/CuPy partitions on GPU workers."""
        return self is Backend.GPU

    @property
    def frames(self) -> str:
        """Dask's DataFrame backend of the partitions: ``cudf`` or ``pandas``."""
        return "cudf" if self.on_gpu else "pandas"

    def __repr__(self) -> str:
        return repr(self.value)

RMM_ALIGNMENT = 256
"""RMM pools are sized in multiples of 256 bytes; an ``--rmm-pool-size`` is rounded down to
one (and dtri's own pools of page-locked memory start at one)."""
PROTOCOLS = ("auto", "tcp", "ucx")
STAGINGS = ("auto", "host", "device")
ORIENTATIONS = ("auto", "degree", "id", "adirection")
ORDERS = ("auto", "rank", "degree", "aorder")
JOINS = ("auto", "wedges", "intersect")
DECOMPOSITIONS = ("auto", "1d", "2d")
FORMATS = ("auto", "snap", "csv", "tsv", "mtx", "parquet")
LOCAL_SCHEDULERS = ("threads", "synchronous", "sync", "single-threaded")
"""Dask's schedulers that run tasks in this process (``--scheduler``), without workers."""
GRAPHLET_ORBITS = ("all", "sigma0-4")
"""The orbit sets of :meth:`dtri.PreparedGraph.graphlets` (``--orbits``): σ0-σ15, or σ0-σ4."""
GRAPHLET_KINDS = ("net", "raw")
"""The graphlet degrees' kinds (``--kind``): induced subgraphs, or all subgraphs."""
GENERATED_FORMATS = ("parquet", "snap", "csv")
"""The files :func:`dtri.write_generated` (``dtri generate --format``) writes."""
LOCAL_CLUSTER_OPTIONS = ("workers", "protocol", "memory_limit", "spill_directory",
                         "device_memory_limit", "rmm_pool_size")
"""The options that shape only a local cluster that dtri starts (their defaults: ``auto``,
``None``)."""
SIZE_OPTIONS = ("memory_limit", "device_memory_limit", "rmm_pool_size", "memory_budget",
                "blocksize")
GROUPS = ("input", "cluster", "memory", "plan", "output")
"""What the options are about: reading files, where the run goes, memory, how it counts, what
it keeps."""


def _option(default: Any, group: str, flag: str, help: str, choices: tuple | None = None,
            kind: str = "", **click: Any) -> Any:
    """A field of :class:`Options` with its command-line flag, help and check."""
    return field(default=default, metadata={"group": group, "flag": flag, "help": help,
                                            "choices": choices, "kind": kind, "click": click})


def checked_k(k: Any) -> int:
    """The ``k`` of a k-truss (``dtri ktruss K``, :meth:`dtri.PreparedGraph.k_truss`) as an
    ``int``: an integer (NumPy's too; not a bool) of at least 0. As in ``networkx.k_truss``,
    every ``k`` up to 2 keeps every edge."""
    integer = isinstance(k, numbers.Integral) and not isinstance(k, bool)
    if not integer or k < 0:
        raise ValueError(f"k must be an integer of at least 0, got {int(k) if integer else k!r}")
    return int(k)


@dataclass(frozen=True)
class Options:
    """The options of a run (all keyword, with defaults), checked when made."""

    # ---- input
    format: str = _option(
        "auto", "input", "--format", "Input format; auto picks by extension (.mtx, .csv, .tsv, "
        ".parquet, else SNAP text). .gz/.bz2 are read transparently.", FORMATS)
    columns: tuple[Any, Any] | None = _option(
        None, "input", "--columns", "Source and target columns, by name or 0-based position "
        "(CSV/TSV/Parquet), e.g. src,dst or 0,1.", kind="columns")
    header: bool | None = _option(
        None, "input", "--header/--no-header", "CSV/TSV: whether the first line is a header "
        "(default: detected).", kind="flag")
    blocksize: int = _option(64 << 20, "input", "--blocksize",
                             "Bytes of text per read partition, e.g. 64MiB.", kind="size")
    storage_options: dict | None = field(default=None, metadata={"group": "input"})
    """Passed to fsspec for URLs (no command-line flag)."""
    npartitions: int | None = field(default=None, metadata={"group": "plan"})
    """Sorted partitions to make (default: fitted to the workers and the budget); for
    in-memory input, also the partitions it is cut into (no command-line flag)."""

    # ---- where it runs
    backend: str = _option(
        "auto", "cluster", "--backend", "cpu: pandas partitions; gpu: cuDF partitions on "
        "dask-cuda workers; auto: gpu when cuDF imports and a GPU is visible (or the input is "
        "on the GPU).", BACKENDS)
    scheduler: str | None = _option(
        None, "cluster", "--scheduler", "Address of a running Dask scheduler (tcp://host:8786; "
        "also read from DASK_SCHEDULER_ADDRESS), or 'threads'/'synchronous'. Default: the "
        "active distributed.Client; else this process (synchronous), when the input fits "
        "one task (on the CPU, the kernels on every core) or, on the GPU, when the current "
        "GPU holds the whole graph; else a local cluster on this machine's GPUs or cores.",
        envvar="DASK_SCHEDULER_ADDRESS")
    scheduler_file: str | None = _option(
        None, "cluster", "--scheduler-file", "Scheduler file written by 'dask scheduler "
        "--scheduler-file'.", kind="path")
    workers: int | str = _option(
        "auto", "cluster", "--workers", "Start a local cluster of this many workers. auto (the "
        "default, where a local cluster is started): one per core on the CPU (N CPU workers "
        "share the cores, cores / N threads each); on the GPU the "
        "number of GPUs that the time model predicts fastest for the input, from the link's "
        "bandwidth measured when the cluster starts (--explain shows the predictions).",
        kind="workers")
    protocol: str = _option(
        "auto", "cluster", "--protocol", "Comms of the local cluster started for the run: auto "
        "is UCX (NVLink) between several GPU workers when distributed-ucxx is installed (the "
        "cuda12/cuda13 extras install it), else TCP, which the run's output then notes with "
        "the command that installs it.", PROTOCOLS)

    # ---- memory
    memory_limit: int | None = _option(
        None, "memory", "--memory-limit", "Host memory per worker of the local cluster, e.g. "
        "4GiB: the whole worker process (its own memory, page-locked staging, the running "
        "tasks); stored results beyond what is left spill to disk. A limit too small is "
        "refused, naming the least. Default: Dask's (RAM / workers), unplanned.", kind="size")
    spill_directory: str | None = _option(
        None, "memory", "--spill-directory", "Where the local cluster's workers spill "
        "(default: Dask's temporary-directory, else the system's).", kind="directory")
    device_memory_limit: int | None = _option(
        None, "memory", "--device-memory-limit", "GPU: device memory of stored results per "
        "worker above which dask-cuda moves them to host memory (default: dask-cuda's 80% of "
        "the GPU; with --rmm-pool-size, the pool less twice the memory budget that device "
        "staging gives, and at least a quarter of the pool).", kind="size")
    rmm_pool_size: int | None = _option(
        None, "memory", "--rmm-pool-size", "GPU: hard cap on the GPU memory per worker: an RMM "
        "pool of this size that cannot grow, shared by cuDF and CuPy. The default "
        "--memory-budget is half of it under host staging (the default with this option), a "
        "quarter under --staging device.", kind="size")
    memory_budget: int | None = _option(
        None, "memory", "--memory-budget", "Memory one worker may plan for, e.g. 8GiB; its "
        "threads share it, so each task plans for its share. Default: a quarter of the "
        "worker's memory (on the GPU backend the GPU's, or --rmm-pool-size; on the CPU its "
        "memory limit: --memory-limit, else Dask's), half of it under host staging on the "
        "GPU.", kind="size")
    staging: str = _option(
        "auto", "memory", "--staging", "Where stage results wait between tasks: host (host "
        "memory; each GPU task moves its own inputs to the device and its results back), "
        "device (GPU memory, spilled by dask-cuda), auto: host when --rmm-pool-size caps the "
        "GPU workers, device otherwise.", STAGINGS)

    # ---- how the graph is prepared and counted
    orientation: str = _option(
        "auto", "plan", "--orientation", "Point each edge to the higher of its ends by (degree, "
        "id), by id, or adirection: by an approximate peeling (each round peels the vertices "
        "of at most (1 + epsilon) times the mean remaining degree), which bounds every "
        "out-list; auto: degree, unless its longest out-list is too long for the hash "
        "tables of the intersection.", ORIENTATIONS)
    order: str = _option(
        "auto", "plan", "--order", "Vertex order in which the intersection kernel takes its "
        "work: rank (as stored), degree (longest lists first), or aorder (greedy bucketing "
        "of each vertex's memory-access profile, heavy and light work side by side); auto: "
        "rank, measured fastest (the kernel's pieces are cut to equal work already).", ORDERS)
    join: str = _option(
        "auto", "plan", "--join", "wedges: write closure keys in budget-sized batches, "
        "radix-bin, sorted search; intersect: fused sorted-list intersection, no wedge written "
        "(a CUDA kernel on GPUs); auto: per partition from its wedge count.", JOINS)
    decomposition: str = _option(
        "auto", "plan", "--decomposition", "How the count's join is spread over the workers: "
        "1d (each worker joins its source ranges against every list they reach), 2d (a q x q "
        "grid of the largest square number of workers, each keeping one block of the "
        "adjacency and seeing the others in q Cannon rounds: each pulls O(m / q) instead of "
        "O(m)); auto: 2d where the planner's bytes model predicts fewer bytes for the busiest "
        "worker (a grid of at least 2 x 2).", DECOMPOSITIONS)
    bins: int | None = _option(
        None, "plan", "--bins", "Number of radix bins, a power of two (default: from the "
        "sizes).", kind="count")

    # ---- output
    checkpoint: str | None = _option(
        None, "output", "--checkpoint", "Keep each finished stage in this folder (the "
        "prepared graph, then the count's and the analytics' task results), written "
        "atomically: the same command run again after a kill skips what is there and says "
        "what it skipped and the seconds that saved. A folder made of other input, with "
        "other options or by another dtri is refused.", kind="directory")
    progress: bool = field(default=False, metadata={"group": "output"})
    """Progress on stderr: a ``dtri: STAGE SECONDS s`` line as each stage ends (with its rows
    where known), after Dask's progress bar of the stage on a cluster."""

    def __post_init__(self) -> None:
        for name in SIZE_OPTIONS:
            object.__setattr__(self, name, _size(name, getattr(self, name)))
        for name in ("spill_directory", "checkpoint"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, os.fspath(getattr(self, name)))
        if self.checkpoint is not None:
            _check_checkpoint(self.checkpoint)
        if self.columns is not None:
            columns = tuple(self.columns)
            if len(columns) != 2:
                raise ConfigurationError(f"columns must name exactly two columns, got "
                                         f"{self.columns!r}")
            object.__setattr__(self, "columns", columns)
        for spec in fields(self):
            choices = spec.metadata.get("choices")
            value = getattr(self, spec.name)
            if choices and value not in choices:
                raise ConfigurationError(f"{_flag(spec.name)} must be one of "
                                         f"{', '.join(choices)}, got {value!r}")
        if self.workers is None:  # the API's word for the default
            object.__setattr__(self, "workers", "auto")
        for name in ("workers", "npartitions", "bins", *SIZE_OPTIONS):
            value = getattr(self, name)
            if name == "workers" and value == "auto":
                continue
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigurationError(f"{_flag(name)} must be a positive integer, got "
                                         f"{value!r}")
        if self.bins is not None and self.bins & (self.bins - 1):
            raise ConfigurationError(f"--bins must be a power of two, got {self.bins}")
        self._refuse_cluster_options_elsewhere()
        if self.staging == "host" and self.join == "wedges":
            raise ConfigurationError(
                "host staging (--staging host, the default with --rmm-pool-size) counts with "
                "the fused join: give --join intersect or auto, or --staging device")

    def _refuse_cluster_options_elsewhere(self) -> None:
        """Refuse options of a local cluster where the run is sent elsewhere: to a local
        scheduler (no workers) or to a running cluster (``--scheduler``,
        ``--scheduler-file``), and both of those together."""
        if self.scheduler is not None and self.scheduler_file is not None:
            raise ConfigurationError(
                f"--scheduler {self.scheduler} and --scheduler-file {self.scheduler_file} "
                "both name a scheduler: give one")
        if self.scheduler is None and self.scheduler_file is None:
            return
        given = [_flag(name) for name in LOCAL_CLUSTER_OPTIONS
                 if getattr(self, name) not in (None, "auto")]
        refuse_local_cluster_options(
            given, f"--scheduler {self.scheduler} (in this process, no workers)"
            if self.scheduler in LOCAL_SCHEDULERS
            else f"the cluster at {self.scheduler or self.scheduler_file}")

    @classmethod
    def of(cls, options: Options | None = None, **changes: Any) -> Options:
        """``options`` (default: the defaults) with ``changes``; an unknown name is refused
        with the list of known ones."""
        known = {spec.name for spec in fields(cls)}
        if unknown := sorted(set(changes) - known):
            raise TypeError(f"unknown option {unknown[0]!r}; the options are "
                            f"{', '.join(sorted(known))}")
        base = options or cls()
        return replace(base, **changes) if changes else base

    @property
    def asked_backend(self) -> Backend | None:
        """The backend ``--backend`` names; ``None`` for ``auto``, which the runtime resolves."""
        return None if self.backend == "auto" else Backend(self.backend)

    @property
    def worker_count(self) -> int | None:
        """``--workers`` as a number, ``None`` for ``auto``."""
        return None if self.workers == "auto" else int(self.workers)

    def read_options(self) -> dict[str, Any]:
        """What :func:`dtri.input.read.read_edges` takes."""
        return {"format": self.format, "header": self.header, "blocksize": self.blocksize,
                "storage_options": self.storage_options}


RUNTIME_OPTIONS = frozenset(spec.name for spec in fields(Options)
                            if spec.metadata.get("group") in ("cluster", "memory"))
"""The options that shape the runtime (cluster, memory): a session's, fixed when it opens."""


CAP_FLAGS = ("--memory-limit", "--spill-directory", "--device-memory-limit", "--rmm-pool-size")


def refuse_local_cluster_options(given: list[str], where: str) -> None:
    """Refuse the ``given`` flags of a local cluster for a run that goes to ``where``
    instead (a local scheduler, a running cluster), in one line."""
    if not given:
        return
    hint = ("give a running cluster's workers their own limits (dask worker --memory-limit, "
            "dask cuda worker --device-memory-limit --rmm-pool-size)"
            if set(given) <= set(CAP_FLAGS) else "give one or the other")
    raise ConfigurationError(
        f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} only to the local "
        f"cluster that dtri starts, not to {where}; {hint}")


def _check_checkpoint(path: str) -> None:
    """A ``--checkpoint`` folder that can be made or reused: not empty, not a file, and on
    this machine's disk under a folder that exists (a URL is checked when it is opened)."""
    if not path.strip():
        raise ConfigurationError("--checkpoint is empty; give a folder")
    if "://" in path:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise ConfigurationError(f"--checkpoint {path} is a file; give a folder")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ConfigurationError(f"--checkpoint {path}: its folder {parent} does not exist")


def _flag(name: str) -> str:
    spec = next(s for s in fields(Options) if s.name == name)
    flag = spec.metadata.get("flag")
    return flag.split("/")[0] if flag else name


MAX_SIZE = 2**63 - 1
"""The most bytes a size may give (int64; ``1e400`` is infinity, which no integer holds)."""


def _size(name: str, value: Any) -> int | None:
    """Bytes from an int or a string such as ``"2GiB"``."""
    if value is None or isinstance(value, int):
        return value
    try:
        size = parse_bytes(value)
    except (ValueError, TypeError, OverflowError):
        raise ConfigurationError(f"{_flag(name)} {value!r} is not a size such as 2GiB, 500MB "
                                 "or 1000000") from None
    if size > MAX_SIZE:
        raise ConfigurationError(f"{_flag(name)} {value!r} is more bytes than any machine has "
                                 f"(at most {MAX_SIZE})")
    return size


# -------------------------------------------------------------------------- the command line

def cli_options(*groups: str, exclude: tuple[str, ...] = ()) -> Callable[[Any], Any]:
    """A decorator adding the click options of the fields in ``groups`` to a command; the
    command receives them by field name (:func:`from_cli` turns them into :class:`Options`)."""
    import click

    def size_type() -> click.ParamType:
        class ByteSize(click.ParamType):
            name = "bytes"

            def convert(self, value: Any, param: Any, ctx: Any) -> int:
                try:
                    size = value if isinstance(value, int) else parse_bytes(value)
                except (ValueError, OverflowError):
                    self.fail(f"{value!r} is not a size such as 2GiB, 500MB or 1000000", param,
                              ctx)
                if size > MAX_SIZE:
                    self.fail(f"{value!r} is more bytes than any machine has (at most "
                              f"{MAX_SIZE})", param, ctx)
                return size

        return ByteSize()

    def workers_type() -> click.ParamType:
        class Workers(click.ParamType):
            name = "auto|N"

            def convert(self, value: Any, param: Any, ctx: Any) -> int | str:
                if value == "auto" or (isinstance(value, int) and value >= 1):
                    return value
                if str(value).isdigit() and int(value) >= 1:
                    return int(value)
                self.fail(f"{value!r} is neither auto nor a positive number of workers", param,
                          ctx)

        return Workers()

    def decorate(command: Any) -> Any:
        for spec in reversed(fields(Options)):
            meta = spec.metadata
            if meta.get("group") not in groups or "flag" not in meta or spec.name in exclude:
                continue
            kind, extra = meta["kind"], dict(meta["click"])
            if meta["choices"]:
                extra.update(type=click.Choice(meta["choices"]), show_default=True)
            elif kind == "size":
                extra.update(type=size_type())
            elif kind == "count":
                extra.update(type=click.IntRange(min=1))
            elif kind == "workers":
                extra.update(type=workers_type(), show_default=True)
            elif kind == "directory":
                extra.update(type=click.Path(file_okay=False))
            elif kind == "path":
                extra.update(type=click.Path(dir_okay=False))
            default = None if spec.default is MISSING else spec.default
            if kind == "size" and default is not None:
                extra.update(show_default=f"{default >> 20}MiB")
            command = click.option(meta["flag"], spec.name, default=default, help=meta["help"],
                                   **extra)(command)
        return command

    return decorate


def from_cli(values: dict[str, Any], **extra: Any) -> Options:
    """:class:`Options` from a command's keyword arguments (those that are options)."""
    known = {spec.name for spec in fields(Options)}
    chosen = {name: value for name, value in values.items() if name in known}
    if isinstance(chosen.get("columns"), str):
        chosen["columns"] = parse_columns(chosen["columns"])
    return Options.of(**chosen, **extra)


def parse_columns(value: str) -> tuple[Any, Any]:
    """``"src,dst"`` or ``"0,1"``: two columns by name or 0-based position."""
    parts = [p.strip() for p in value.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ConfigurationError("give two columns, e.g. --columns src,dst or --columns 0,1")
    return tuple(int(p) if p.isdigit() else p for p in parts)  # type: ignore[return-value]

"""Checkpoints: a run's finished stages kept in a folder (``--checkpoint DIR``), so that the
same run, started again after a kill, skips them.

A checkpoint folder holds:

* ``dtri-checkpoint.json``: what the checkpoint is of: the input (its files by path, size and
  modification time; a generated graph by its spec and seed; in-memory edges by a hash of
  their values: :func:`input_identity`), the options that shape the prepared graph, and the
  dtri version. A run whose input, options or dtri differ is refused in one line: a
  checkpoint is never reused for something else.
* ``prepared/``: the prepared graph, saved as ``dtri prepare`` saves one
  (:mod:`dtri.prepared.saved`), renamed into place when complete.
* ``STAGE-DIGEST/``: the results of one analytic stage's tasks, one small file a task unit
  (:class:`UnitResults`: the count's wedge batches and fused-join tasks), or one file a
  partition with a ``done.json`` once all are there (:class:`PartitionResults`: triangles at
  each vertex, support of each edge). ``DIGEST`` names the plan the units belong to: a run
  that plans otherwise (other workers, another budget) does not reuse them.

Every file is written beside its name and renamed into place, so a file under its name is
complete. A run reports the stages it skipped, and the seconds they took when they ran
(:attr:`dtri.prepared.graph.PreparedGraph.resumed`).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import sys
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from fsspec.implementations.local import LocalFileSystem

from dtri.errors import ConfigurationError, DtriError
from dtri.kernels.compiled import compile_seconds
from dtri.output import TEMPORARY_MARK
from dtri.prepared.saved import dtri_version, has_metadata, shaping_options

if TYPE_CHECKING:
    from dtri.prepared.graph import PreparedGraph
    from dtri.runtime.tasks import Tasks
    from dtri.runtime.timer import StageTimer

CHECKPOINT_NAME = "dtri-checkpoint.json"
CHECKPOINT_FORMAT = "dtri-checkpoint"
CHECKPOINT_VERSION = 1
PREPARED_FOLDER = "prepared"
DONE_NAME = "done.json"


class CheckpointError(DtriError):
    """A checkpoint made of other input, with other options or by another dtri, or damaged:
    one line naming it and what differs."""


# ------------------------------------------------------------------------ the input

def input_identity(edges: Any, storage_options: dict | None = None,
                   hash_values: bool = False) -> dict[str, Any] | None:
    """What ``edges`` are, to tell whether a checkpoint or a saved graph was made of them:
    files by path, size and modification time; a generated graph by its kind, parameters,
    edges and seed; with ``hash_values``, NumPy arrays and pandas frames by a hash of their
    values. ``None`` where it cannot be told (a Dask collection, device arrays, or values
    not hashed)."""
    from dtri.input.frames import is_path_like
    from dtri.input.generate import GeneratedGraph

    if is_path_like(edges):
        from dtri.input.read import expand_paths

        listed = [os.fspath(e) for e in (edges if isinstance(edges, list | tuple) else [edges])]
        files = []
        for fs, path, _ in expand_paths(listed, storage_options):
            info = fs.info(path)
            modified = info.get("mtime") or info.get("LastModified") or info.get("ETag")
            files.append({"path": fs.unstrip_protocol(path), "size": info.get("size"),
                          "modified": str(modified)})
        return {"paths": files}
    if isinstance(edges, GeneratedGraph):
        return {"generated": {"kind": edges.kind, "params": list(edges.params),
                              "edges": edges.edges, "seed": edges.seed}}
    pandas = sys.modules.get("pandas")
    if hash_values and (isinstance(edges, np.ndarray) or (
            pandas is not None and isinstance(edges, pandas.DataFrame))):
        from dask.base import tokenize

        return {"values": tokenize(edges)}
    return None


def differences(made: dict[str, Any], given: dict[str, Any]) -> str | None:
    """The first way a checkpoint's manifest ``made`` differs from this run's ``given``, as
    words for the refusal; ``None`` where they agree."""
    if made.get("dtri_version") != given["dtri_version"]:
        return (f"it was made by dtri {made.get('dtri_version')}, this is dtri "
                f"{given['dtri_version']}")
    if made.get("input") != given["input"]:
        return f"it was made from other input ({_shown_input(made.get('input'))})"
    for name, value in given["options"].items():
        if made.get("options", {}).get(name) != value:
            return (f"it was made with {name} {made.get('options', {}).get(name)!r}, this run "
                    f"gives {value!r}")
    return None


def _shown_input(identity: Any) -> str:
    if not isinstance(identity, dict):
        return "unknown"
    if "paths" in identity:
        files = identity["paths"]
        first = files[0] if files else {}
        more = f" and {len(files) - 1} more" if len(files) > 1 else ""
        return f"{first.get('path')} of {first.get('size')} bytes{more}"
    if "generated" in identity:
        made = identity["generated"]
        return f"a generated {made.get('kind')} graph of {made.get('edges')} edges, seed " \
               f"{made.get('seed')}"
    return "in-memory edges of other values"


def resumed_line(stage: str, seconds: float, progress: bool, units: str = "") -> None:
    """With progress, the line on a stage skipped (or ``units`` of it) on stderr."""
    if progress:
        what = f"{units} of " if units else ""
        print(f"dtri: skipped {what}{stage} (checkpoint), saved {seconds:.2f} s",
              file=sys.stderr, flush=True)


# ------------------------------------------------------------------------ files

def write_atomically(fs: Any, path: str, data: bytes) -> None:
    """``data`` written beside ``path`` and renamed to it (on a local disk atomically)."""
    temporary = f"{path}{TEMPORARY_MARK}{uuid.uuid4().hex}"
    with fs.open(temporary, "wb") as handle:
        handle.write(data)
    if isinstance(fs, LocalFileSystem):
        os.replace(temporary, path)
    else:
        fs.mv(temporary, path)


def read_json(fs: Any, path: str, shown: str) -> dict[str, Any]:
    """A checkpoint's JSON file; a damaged one is one line naming it."""
    try:
        with fs.open(path, "r") as handle:
            value = json.load(handle)
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{shown}: damaged checkpoint file ({error}); remove the "
                              "checkpoint folder to start again") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{shown}: damaged checkpoint file (not a JSON object); remove "
                              "the checkpoint folder to start again")
    return value


class Checkpoint:
    """A checkpoint folder, opened for one run (:meth:`open`)."""

    def __init__(self, url: str, fs: Any, root: str):
        self.url = url.rstrip("/") or url
        self.fs = fs
        self.root = root

    @classmethod
    def open(cls, url: str, identity: dict[str, Any] | None, options: Any) -> Checkpoint:
        """The checkpoint at ``url`` for a run of ``identity`` (:func:`input_identity`) with
        ``options``: made here if the folder is missing or empty; refused in one line where it
        was made of other input, with other options or by another dtri."""
        from dtri.input.read import filesystem

        if identity is None:
            raise ConfigurationError(
                "--checkpoint needs an input dtri can tell again: files, a --generate graph, "
                "or NumPy/pandas edges")
        fs, root = filesystem(url, options.storage_options)
        root = root.rstrip("/") or root
        checkpoint = cls(url, fs, root)
        manifest = {"format": CHECKPOINT_FORMAT, "format_version": CHECKPOINT_VERSION,
                    "dtri_version": dtri_version(), "input": identity,
                    "options": shaping_options(options)}
        name = checkpoint.path(CHECKPOINT_NAME)
        if fs.exists(name):
            made = read_json(fs, name, checkpoint.shown(CHECKPOINT_NAME))
            if made.get("format") != CHECKPOINT_FORMAT \
                    or made.get("format_version") != CHECKPOINT_VERSION:
                raise CheckpointError(
                    f"{checkpoint.shown(CHECKPOINT_NAME)}: not a checkpoint this dtri reads "
                    f"(format version {made.get('format_version')!r}); remove the folder or "
                    "give another --checkpoint")
            if (why := differences(made, manifest)) is not None:
                raise CheckpointError(
                    f"{checkpoint.url}: a checkpoint of another run: {why}; give another "
                    "--checkpoint, or remove this one to start again")
            checkpoint.remove_temporaries()
            return checkpoint
        if fs.exists(root) and (not fs.isdir(root) or fs.ls(root)):
            raise CheckpointError(f"{checkpoint.url}: exists and is not a dtri checkpoint (no "
                                  f"{CHECKPOINT_NAME}); give a new or empty folder")
        fs.makedirs(root, exist_ok=True)
        write_atomically(fs, name, json.dumps(manifest, indent=1).encode())
        return checkpoint

    def path(self, *names: str) -> str:
        return posixpath.join(self.root, *names)

    def shown(self, *names: str) -> str:
        """A file of the checkpoint as the user named the folder."""
        return posixpath.join(self.url, *names)

    def remove_temporaries(self) -> None:
        """Remove what a killed run left half written (temporary files and folders)."""
        for folder in (self.root, *self._stage_folders()):
            for name in self.fs.ls(folder, detail=False):
                if TEMPORARY_MARK in posixpath.basename(name.rstrip("/")):
                    self.fs.rm(name, recursive=True)

    def _stage_folders(self) -> list[str]:
        return [name for name in self.fs.ls(self.root, detail=False)
                if self.fs.isdir(name) and TEMPORARY_MARK not in name
                and posixpath.basename(name.rstrip("/")) != PREPARED_FOLDER]

    # -------------------------------------------------------------- the prepared graph

    @property
    def prepared_url(self) -> str:
        """Where the prepared graph is saved (a URL or path as the user gave the folder)."""
        return self.shown(PREPARED_FOLDER)

    def has_prepared(self) -> bool:
        return has_metadata(self.fs, self.path(PREPARED_FOLDER))

    # -------------------------------------------------------------- analytic stages

    def units(self, stage: str, plan: Any) -> UnitResults:
        """The unit results of ``stage`` under ``plan`` (any JSON value naming the plan)."""
        return UnitResults(self, f"{stage}-{digest(plan)}")

    def partitions(self, stage: str, partitions: int) -> PartitionResults:
        """The per-partition results of ``stage`` over ``partitions`` partitions."""
        return PartitionResults(self, f"{stage}-{partitions}", partitions)


def digest(value: Any) -> str:
    """A short hash of a JSON value (what a stage folder's name carries of its plan)."""
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def unit_name(key: tuple) -> str:
    return "-".join(str(part) for part in key) + ".json"


def record_unit(fs: Any, folder: str, name: str, run: str, started: float,
                compiled: float | None, *values: Any) -> int:
    """A unit's result (the exact sum of ``values``), written to its file with the seconds
    since its stage began (``started``, wall clock) and the ``run`` that made it. In the
    process that began the stage (``compiled``: its compile seconds then), the seconds spent
    compiling kernels since are left out, as the stage timer leaves them out."""
    total = sum(int(value) for value in values)
    seconds = time.time() - started
    if compiled is not None:
        seconds -= compile_seconds() - compiled
    record = {"value": total, "seconds": round(max(seconds, 0.0), 6), "run": run}
    write_atomically(fs, posixpath.join(folder, name), json.dumps(record).encode())
    return total


class UnitResults:
    """The finished units (integer results) of one analytic stage in a checkpoint: those a
    run finds are not run again, and each unit it runs is written as it ends."""

    def __init__(self, checkpoint: Checkpoint, folder: str):
        self.checkpoint = checkpoint
        self.folder = folder
        self.run = uuid.uuid4().hex
        self.started = time.time()
        self.compiled = compile_seconds()
        fs, path = checkpoint.fs, checkpoint.path(folder)
        fs.makedirs(path, exist_ok=True)
        self.found: dict[str, dict[str, Any]] = {}
        for name in fs.ls(path, detail=False):
            base = posixpath.basename(name.rstrip("/"))
            if base.endswith(".json") and TEMPORARY_MARK not in base:
                record = read_json(fs, name, checkpoint.shown(folder, base))
                if not isinstance(record.get("value"), int):
                    raise CheckpointError(f"{checkpoint.shown(folder, base)}: damaged "
                                          "checkpoint file (no integer value); remove the "
                                          "checkpoint folder to start again")
                self.found[base] = record
        self.reused: list[dict[str, Any]] = []
        self.units = 0

    def saved(self, key: tuple) -> int | None:
        """The result of unit ``key`` where a run before finished it (then it counts as
        reused), else ``None``."""
        self.units += 1
        record = self.found.get(unit_name(key))
        if record is None:
            return None
        self.reused.append(record)
        return int(record["value"])

    def kept(self, tasks: Tasks, key: tuple, *values: Any) -> Any:
        """A task that sums ``values`` (unit ``key``'s delayed results) and writes the sum."""
        return tasks.task("checkpoint", record_unit, self.checkpoint.fs,
                          self.checkpoint.path(self.folder), unit_name(key), self.run,
                          self.started, self.compiled if tasks.eager else None, *values,
                          key=(self.folder, *key), on_host=True)

    def resumed(self) -> dict[str, Any] | None:
        """What reusing saved: the units reused of all, and the seconds the runs that made
        them took to reach them (per run, its latest reused unit); ``None``: none reused."""
        if not self.reused:
            return None
        latest: dict[str, float] = {}
        for record in self.reused:
            run = str(record.get("run"))
            latest[run] = max(latest.get(run, 0.0), float(record.get("seconds", 0.0)))
        return {"seconds": round(sum(latest.values()), 6), "tasks": len(self.reused),
                "of": self.units}


def write_part(fs: Any, folder: str, p: int, values: Any) -> int:
    """Write partition ``p``'s result array (where it lives); return its length."""
    import io

    from dtri.kernels.dispatch import to_host

    buffer = io.BytesIO()
    np.save(buffer, to_host(values), allow_pickle=False)
    write_atomically(fs, posixpath.join(folder, f"part-{p:05d}.npy"), buffer.getvalue())
    return int(values.shape[0])


def read_part(fs: Any, folder: str, shown: str, p: int, length: int, on_device: bool) -> Any:
    """Partition ``p``'s result array, read on the worker that keeps it; a damaged file is
    one line naming it."""
    import io

    name = f"part-{p:05d}.npy"
    try:
        with fs.open(posixpath.join(folder, name), "rb") as handle:
            values = np.load(io.BytesIO(handle.read()), allow_pickle=False)
    except (OSError, ValueError) as error:
        raise CheckpointError(f"{posixpath.join(shown, name)}: damaged checkpoint file "
                              f"({error}); remove the checkpoint folder to start again"
                              ) from None
    if values.shape != (length,):
        raise CheckpointError(f"{posixpath.join(shown, name)}: damaged checkpoint file "
                              f"({values.shape[0] if values.ndim else 0} values where the "
                              f"partition has {length})")
    if on_device:
        import cupy

        return cupy.asarray(values)
    return values


class PartitionResults:
    """One array per partition of an analytic stage in a checkpoint, complete once its
    ``done.json`` (written after every partition's file) is there."""

    def __init__(self, checkpoint: Checkpoint, folder: str, partitions: int):
        self.checkpoint = checkpoint
        self.folder = folder
        self.partitions = partitions
        fs = checkpoint.fs
        done = checkpoint.path(folder, DONE_NAME)
        self.done = read_json(fs, done, checkpoint.shown(folder, DONE_NAME)) \
            if fs.exists(done) else None

    @property
    def finished(self) -> bool:
        return self.done is not None

    def read(self, tasks: Tasks, lengths: list[int], on_device: bool) -> list[Any]:
        """Delayed: partition ``p``'s array, read on its owner."""
        parts = []
        for p, length in enumerate(lengths):
            with tasks.placed(p):
                parts.append(tasks.task("checkpoint", read_part, self.checkpoint.fs,
                                        self.checkpoint.path(self.folder),
                                        self.checkpoint.shown(self.folder), p, length,
                                        on_device, key=(self.folder, p), on_host=True))
        return parts

    def write(self, tasks: Tasks, timer: StageTimer, values: list[Any], seconds: float) -> None:
        """Write every partition's array where it lives, then ``done.json`` with the
        ``seconds`` the stage took."""
        fs, folder = self.checkpoint.fs, self.checkpoint.path(self.folder)
        fs.makedirs(folder, exist_ok=True)
        written = []
        for p, value in enumerate(values):
            with tasks.placed(p):
                written.append(tasks.task("checkpoint", write_part, fs, folder, p, value,
                                          key=(self.folder, "write", p), on_host=True))
        timer.compute("checkpoint", written)
        write_atomically(fs, posixpath.join(folder, DONE_NAME),
                         json.dumps({"seconds": round(seconds, 6)}).encode())


def kept_partitions(graph: PreparedGraph, stage: str, lengths: list[int],
                    build: Callable[[], list[Any]]) -> list[Any]:
    """A per-partition stage of ``graph``'s analytics (``build()``: its delayed arrays, one
    a partition of ``lengths[p]`` values), persisted: read from the graph's checkpoint where
    a run before finished it (the stage skipped), else run, and written there when the graph
    has a checkpoint."""
    timer = graph.timer()
    checkpoint = graph.checkpoint
    results = None if checkpoint is None else checkpoint.partitions(stage, len(lengths))
    if results is not None and results.done is not None:  # finished
        on_device = graph.staging.in_gpu_memory
        values = list(timer.submit(stage, *results.read(graph.tasks, lengths, on_device)))
        timer.settle()
        saved = float(results.done.get("seconds", 0.0))
        graph.resumed[stage] = {"seconds": saved}
        resumed_line(stage, saved, graph.options.progress)
        return values
    started = time.perf_counter()
    values = list(timer.submit(stage, *build()))
    timer.settle()
    if results is not None:
        results.write(graph.tasks, timer, values, time.perf_counter() - started)
    return values

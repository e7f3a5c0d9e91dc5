"""Checkpoints: a run's finished stages kept in a folder (``--checkpoint DIR``), so that the
same run, started again after a kill, skips them.

A checkpoint folder holds:

* ``dtri-checkpoint.json``: what the checkpoint is of: the input (its files by path, size,
  modification time and a fingerprint of their bytes; a generated graph by its spec and
  seed; in-memory edges by a hash of their values: :func:`input_identity`), the options
  that shape the prepared graph, and the dtri version. A run whose input, options or dtri
  differ is refused in one line: a checkpoint is never reused for something else.
* ``dtri-checkpoint.lock``: while a run uses the checkpoint, which process it is (its pid,
  host and start time). A second run is refused in one line while that process lives; a
  lock whose process on this host has ended is taken over.
* ``prepared/``: the prepared graph, saved as ``dtri prepare`` saves one
  (:mod:`dtri.prepared.saved`), renamed into place when complete.
* ``STAGE-DIGEST/``: the results of one analytic stage's tasks, one small file a task unit
  (:class:`UnitResults`: the count's wedge batches and fused-join tasks), or one file a
  partition with a ``done.json`` once all are there (:class:`PartitionResults`: triangles at
  each vertex, support of each edge). ``DIGEST`` names the plan the units belong to: a run
  that plans otherwise (other workers, another budget) does not reuse them.

A file's fingerprint hashes all its bytes up to ``dtri.checkpoint-hash-whole-bytes``; a
larger file's hashes evenly spread blocks (``dtri.checkpoint-hash-samples`` and
``-sample-bytes``), so an edit between them that keeps its size and time is not seen.

Every file is written beside its name and renamed into place, so a file under its name is
complete. A run reports the stages it skipped, and the seconds they took when they ran
(:attr:`dtri.prepared.graph.GraphData.resumed`).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import sys
import time
import uuid
from contextlib import suppress
from typing import TYPE_CHECKING, Any

import numpy as np
from fsspec.implementations.local import LocalFileSystem

from dtri.errors import ConfigurationError, DtriError
from dtri.kernels.compiled import compile_seconds
from dtri.output import TEMPORARY_MARK
from dtri.prepared.saved import dtri_version, has_metadata, shaping_options

if TYPE_CHECKING:
    from dtri.runtime.tasks import Tasks
    from dtri.runtime.timer import StageTimer

CHECKPOINT_NAME = "dtri-checkpoint.json"
CHECKPOINT_FORMAT = "dtri-checkpoint"
CHECKPOINT_VERSION = 2
LOCK_NAME = "dtri-checkpoint.lock"
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
    edges and seed; with ``hash_values``, files by their bytes' fingerprint too
    (:func:`file_fingerprint`), and NumPy arrays and pandas frames by a hash of their
    values. ``None`` where it cannot be told (a Dask collection, device arrays, or values
    not hashed)."""
    from dtri.input.frames import is_path_like
    from dtri.input.generate import GeneratedGraph

    if is_path_like(edges):
        from dtri.input.sources import expand_paths

        listed = [os.fspath(e) for e in (edges if isinstance(edges, list | tuple) else [edges])]
        files = []
        for fs, path, _ in expand_paths(listed, storage_options):
            info = fs.info(path)
            modified = info.get("mtime") or info.get("LastModified") or info.get("ETag")
            file = {"path": fs.unstrip_protocol(path), "size": info.get("size"),
                    "modified": str(modified)}
            if hash_values:
                file["fingerprint"] = file_fingerprint(fs, path, int(info.get("size") or 0))
            files.append(file)
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


def file_fingerprint(fs: Any, path: str, size: int) -> str:
    """A hash of the bytes of the file ``path`` of ``size`` bytes: all of them up to
    ``dtri.checkpoint-hash-whole-bytes``, else evenly spread samples (the module's rule)."""
    import dask
    from dask.utils import parse_bytes

    whole = parse_bytes(dask.config.get("dtri.checkpoint-hash-whole-bytes"))
    digest = hashlib.blake2b(digest_size=20)
    with fs.open(path, "rb") as handle:
        if size <= whole:
            while block := handle.read(1 << 22):
                digest.update(block)
            return f"blake2b:{digest.hexdigest()}"
        samples = max(int(dask.config.get("dtri.checkpoint-hash-samples")), 2)
        length = min(parse_bytes(dask.config.get("dtri.checkpoint-hash-sample-bytes")), size)
        digest.update(str(size).encode())
        for i in range(samples):
            handle.seek((size - length) * i // (samples - 1))
            digest.update(handle.read(length))
    return f"blake2b-{samples}-samples:{digest.hexdigest()}"


def differences(made: dict[str, Any], given: dict[str, Any]) -> str | None:
    """The first way a checkpoint's manifest ``made`` differs from this run's ``given``, as
    words for the refusal; ``None`` where they agree."""
    if made.get("dtri_version") != given["dtri_version"]:
        return (f"it was made by dtri {made.get('dtri_version')}, this is dtri "
                f"{given['dtri_version']}")
    if made.get("input") != given["input"]:
        if (changed := changed_file(made.get("input"), given["input"])) is not None:
            return (f"{changed} has other bytes than when it was made, at the same size and "
                    "modification time")
        return f"it was made from other input ({_shown_input(made.get('input'))})"
    for name, value in given["options"].items():
        if made.get("options", {}).get(name) != value:
            return (f"it was made with {name} {made.get('options', {}).get(name)!r}, this run "
                    f"gives {value!r}")
    return None


def changed_file(made: Any, given: dict[str, Any]) -> str | None:
    """The first input file that only its fingerprint tells from the one a checkpoint was
    made of; ``None`` where the files differ otherwise too, or not at all."""
    if not isinstance(made, dict) or "paths" not in made or "paths" not in given:
        return None
    before, now = made["paths"], given["paths"]
    if len(before) != len(now):
        return None
    without = [{k: v for k, v in f.items() if k != "fingerprint"} for f in before]
    if without != [{k: v for k, v in f.items() if k != "fingerprint"} for f in now]:
        return None
    return next((f["path"] for f, g in zip(before, now, strict=True) if f != g), None)


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


def this_process() -> dict[str, Any]:
    """What a lock records of the process holding it."""
    import socket

    import psutil

    return {"pid": os.getpid(), "host": socket.gethostname(),
            "started": round(psutil.Process().create_time(), 2)}


def lives(holder: dict[str, Any]) -> bool | None:
    """Whether the process a lock names still runs: ``None`` where it runs on another host,
    which this one cannot tell."""
    import socket

    import psutil

    if holder.get("host") != socket.gethostname():
        return None
    try:
        started = round(psutil.Process(int(holder["pid"])).create_time(), 2)
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False
    return started == holder.get("started")  # else its pid was given to another process


class Checkpoint:
    """A checkpoint folder, opened for one run (:meth:`open`), which holds its lock until
    :meth:`close`."""

    def __init__(self, url: str, fs: Any, root: str):
        self.url = url.rstrip("/") or url
        self.fs = fs
        self.root = root
        self.locked = False

    def lock(self) -> None:
        """Take the checkpoint's lock for this process: refused in one line while another
        live process holds it; taken over from one that has ended."""
        name, mine = self.path(LOCK_NAME), this_process()
        data = json.dumps(mine).encode()
        for _ in range(3):
            if self._create(name, data):
                break
            try:
                with self.fs.open(name, "r") as handle:
                    holder = json.load(handle)
            except FileNotFoundError:
                continue  # released meanwhile: try again
            except (OSError, ValueError):
                holder = {}  # half written by a run killed as it locked: taken over
            alive = lives(holder) if holder else False
            if alive is None:
                raise CheckpointError(
                    f"{self.url}: in use by a run on {holder.get('host')} (pid "
                    f"{holder.get('pid')}); wait for it to end, or remove "
                    f"{self.shown(LOCK_NAME)} if that run is gone")
            if alive:
                since = time.strftime("%H:%M:%S", time.localtime(holder["started"]))
                raise CheckpointError(
                    f"{self.url}: in use by another run (pid {holder['pid']}, started "
                    f"{since}); wait for it to end, or give another --checkpoint")
            write_atomically(self.fs, name, data)  # its process ended: taken over
            break
        with self.fs.open(name, "r") as handle:  # two runs took over at once: one keeps it
            if json.load(handle) != mine:
                raise CheckpointError(f"{self.url}: in use by another run that started as "
                                      "this one did; give another --checkpoint")
        self.locked = True

    def _create(self, name: str, data: bytes) -> bool:
        """``name`` made with ``data`` if it did not exist (on a local disk atomically)."""
        if isinstance(self.fs, LocalFileSystem):
            try:
                descriptor = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
            return True
        if self.fs.exists(name):
            return False
        write_atomically(self.fs, name, data)
        return True

    def close(self) -> None:
        """Let go of the lock (idempotent)."""
        if not self.locked:
            return
        self.locked = False
        with suppress(OSError, ValueError), self.fs.open(self.path(LOCK_NAME), "r") as handle:
            if json.load(handle) == this_process():  # else gone already, or not ours
                self.fs.rm(self.path(LOCK_NAME))

    @classmethod
    def open(cls, url: str, identity: dict[str, Any] | None, options: Any) -> Checkpoint:
        """The checkpoint at ``url`` for a run of ``identity`` (:func:`input_identity`) with
        ``options``: made here if the folder is missing or empty; refused in one line where it
        was made of other input, with other options or by another dtri."""
        from dtri.input.sources import filesystem

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
        if not fs.exists(name):
            listed = fs.ls(root, detail=False) if fs.exists(root) and fs.isdir(root) else []
            if fs.exists(root) and (not fs.isdir(root) or any(
                    posixpath.basename(n.rstrip("/")) != LOCK_NAME for n in listed)):
                raise CheckpointError(f"{checkpoint.url}: exists and is not a dtri checkpoint "
                                      f"(no {CHECKPOINT_NAME}); give a new or empty folder")
            fs.makedirs(root, exist_ok=True)
        checkpoint.lock()  # a run making it at the same time holds it, or this one does
        try:
            if not fs.exists(name):
                write_atomically(fs, name, json.dumps(manifest, indent=1).encode())
            else:
                checkpoint.check(name, manifest)
        except BaseException:
            checkpoint.close()
            raise
        return checkpoint

    def check(self, name: str, manifest: dict[str, Any]) -> None:
        """The manifest ``name`` against this run's: refused in one line where they differ;
        else what a killed run left half written is removed."""
        made = read_json(self.fs, name, self.shown(CHECKPOINT_NAME))
        if made.get("format") != CHECKPOINT_FORMAT \
                or made.get("format_version") != CHECKPOINT_VERSION:
            raise CheckpointError(
                f"{self.shown(CHECKPOINT_NAME)}: not a checkpoint this dtri reads "
                f"(format version {made.get('format_version')!r}); remove the folder or "
                "give another --checkpoint")
        if (why := differences(made, manifest)) is not None:
            raise CheckpointError(
                f"{self.url}: a checkpoint of another run: {why}; give another "
                "--checkpoint, or remove this one to start again")
        self.remove_temporaries()

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
        return [tasks.task("checkpoint", read_part, self.checkpoint.fs,
                           self.checkpoint.path(self.folder), self.checkpoint.shown(self.folder),
                           p, length, on_device, key=(self.folder, p), on_host=True,
                           at=tasks.owner(p)) for p, length in enumerate(lengths)]

    def write(self, tasks: Tasks, timer: StageTimer, values: list[Any], seconds: float) -> None:
        """Write every partition's array where it lives, then ``done.json`` with the
        ``seconds`` the stage took."""
        fs, folder = self.checkpoint.fs, self.checkpoint.path(self.folder)
        fs.makedirs(folder, exist_ok=True)
        written = [tasks.task("checkpoint", write_part, fs, folder, p, value,
                              key=(self.folder, "write", p), on_host=True, at=tasks.owner(p))
                   for p, value in enumerate(values)]
        timer.compute("checkpoint", written)
        write_atomically(fs, posixpath.join(folder, DONE_NAME),
                         json.dumps({"seconds": round(seconds, 6)}).encode())

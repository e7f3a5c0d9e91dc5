"""The saved prepared graph: what :func:`dtri.prepare` leaves on the workers, as files.

A saved graph is a folder (local, or an fsspec URL) of:

* ``dtri-graph.json``: the metadata. Its ``format`` and ``format_version`` say what the
  folder is and which layout it has; ``dtri_version``; the options that shaped the
  preparation (``options``); the orientation and the vertex order with their reasons; the
  counts (``vertices``, ``edges``, ``wedges``, ``partitions``); the partitions' rank
  ``bounds``; their summaries (what the planners read: :class:`~dtri.kernels.csr.
  PartitionSummary`); the preparation's ``seconds`` and ``read``; and the ``input`` it was
  prepared from, where known.
* ``edges/part-PPPPP.parquet``: sorted partition ``P`` as the targets of its CSR, column
  ``dst`` (int32 ranks, grouped by source, ascending within each source).
* ``vertices/part-PPPPP.parquet``: the ranks ``[bounds[P], bounds[P + 1])`` (the sources of
  partition ``P``): ``id`` (the input id), ``degree``, ``out_degree`` (the CSR's list
  lengths, whose prefix sums are its offsets), and where the graph has them ``schedule`` (the
  rows in the vertex order, :attr:`~dtri.kernels.csr.CSR.schedule`) and ``present``.

The folder is written through fsspec into a temporary folder beside its name and renamed into
place when complete (:mod:`dtri.output`), so a save that is killed never leaves a folder that
looks saved. Each partition's files are written by a task on the worker that holds it, and
read back by a task on the worker that will keep it: partition ``P`` goes to the owner of
``P`` in the opening run, whatever the backend or the number of workers that saved it.
"""

from __future__ import annotations

import io
import itertools
import json
import posixpath
import sys
from typing import Any

import numpy as np

from dtri.errors import DtriError
from dtri.kernels.csr import CSR, PartitionSummary, as_csr, stored
from dtri.kernels.dispatch import array_module, is_device_object, to_host
from dtri.version import VERSION

METADATA_NAME = "dtri-graph.json"
"""The metadata file of a saved graph; its presence makes a folder one."""
FORMAT = "dtri-prepared-graph"
FORMAT_VERSION = 1
"""The layout written here; a folder of any other version is refused."""
EDGES_FOLDER = "edges"
VERTICES_FOLDER = "vertices"
SHAPING_OPTIONS = ("format", "columns", "header", "orientation", "order", "npartitions")
"""The options whose values shape the prepared graph (what it is, or how it is cut)."""


class SavedGraphError(DtriError):
    """A saved graph (or checkpoint) that cannot be read: names the file and what is wrong."""


def part_name(folder: str, p: int) -> str:
    """The file of partition ``p`` in ``folder`` (``edges`` or ``vertices``)."""
    return posixpath.join(folder, f"part-{p:05d}.parquet")


def dtri_version() -> str:
    """The version of dtri that writes (and must read) saves and checkpoints."""
    return VERSION


def shaping_options(options: Any) -> dict[str, Any]:
    """The options of a run that shape its prepared graph, as JSON values."""
    return {name: (list(value) if isinstance(value, tuple) else value)
            for name in SHAPING_OPTIONS for value in [getattr(options, name)]}


# ------------------------------------------------------------------------ writing

def write_partition(fs: Any, root: str, p: int, part: tuple, ids: Any, degree: Any,
                    present: Any, low: int, high: int) -> int:
    """Write partition ``p`` (a stored CSR over the ranks ``[low, high)``) and its vertices
    under ``root``; return its edges. Runs where the partition lives: a partition on the
    device is written from the device by pylibcudf, one on the host by pyarrow."""
    csr = as_csr(part)
    on_device = is_device_object(csr.dst)
    xp = array_module(csr.dst)
    offsets = csr.offsets
    columns = {"id": ids[low:high], "degree": degree[low:high],
               "out_degree": (offsets[1:] - offsets[:-1]).astype(xp.int64, copy=False)}
    if csr.schedule is not None:
        columns["schedule"] = csr.schedule.astype(xp.int64, copy=False)
    if present is not None:
        columns["present"] = present[low:high].astype(bool, copy=False)
    tables = {EDGES_FOLDER: {"dst": csr.dst.astype(xp.int32, copy=False)},
              VERTICES_FOLDER: columns}
    for folder, table in tables.items():
        path = part_name(posixpath.join(root, folder), p)
        if on_device:
            _write_on_device(fs, path, table)
        else:
            _write_on_host(fs, path, table)
    return int(csr.edges)


def _array_module(on_device: bool) -> Any:
    if on_device:
        import cupy

        return cupy
    return np


def _write_on_device(fs: Any, path: str, columns: dict[str, Any]) -> None:
    """Device arrays as one Parquet file, encoded on the device by pylibcudf (cuDF's own
    writer, without cuDF's frames, whose import takes about 1.9 s of a process on an H100)."""
    import pylibcudf as plc

    from dtri.input.sources import local_path

    table = plc.Table([_device_column(values) for values in columns.values()])
    metadata = plc.io.types.TableInputMetadata(table)
    for column, name in zip(metadata.column_metadata, columns, strict=True):
        column.set_name(name)
    local = local_path(fs, path)
    buffer = io.BytesIO()
    sink = plc.io.SinkInfo([local if local is not None else buffer])
    plc.io.parquet.write_parquet(
        plc.io.parquet.ParquetWriterOptions.builder(sink, table).metadata(metadata).build())
    if local is None:
        with fs.open(path, "wb") as handle:
            handle.write(buffer.getbuffer())


_COLUMN_TYPES: dict[np.dtype, str] = {np.dtype(np.int32): "INT32",
                                      np.dtype(np.int64): "INT64",
                                      np.dtype(np.bool_): "BOOL8"}
"""The NumPy types of a saved graph's columns, by the name of their pylibcudf type."""


def _device_column(values: Any) -> Any:
    """A contiguous CuPy array as a pylibcudf column over its memory (no copy)."""
    import cupy
    import pylibcudf as plc

    values = cupy.ascontiguousarray(values)
    kind = plc.DataType(getattr(plc.TypeId, _COLUMN_TYPES[values.dtype]))
    return plc.Column(kind, values.shape[0], plc.gpumemoryview(values), None, 0, 0, [])


def _write_on_host(fs: Any, path: str, columns: dict[str, Any]) -> None:
    """Host arrays as one Parquet file, by pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({name: pa.array(to_host(values)) for name, values in columns.items()})
    with fs.open(path, "wb") as handle:
        pq.write_table(table, handle)


def write_metadata(fs: Any, root: str, metadata: dict[str, Any]) -> None:
    """Write the metadata file (last: the folder is complete once it is there)."""
    with fs.open(posixpath.join(root, METADATA_NAME), "w") as handle:
        json.dump(metadata, handle, indent=1)


def graph_metadata(*, options: Any, orientation: str, orientation_reason: str, order: str,
                   order_reason: str, vertices: int, bounds: list[int],
                   summaries: list[PartitionSummary], seconds: dict[str, float],
                   read: dict[str, int], present: bool, input_identity: dict | None,
                   ) -> dict[str, Any]:
    """The metadata of a saved graph (see the module docstring)."""
    return {"format": FORMAT, "format_version": FORMAT_VERSION,
            "dtri_version": dtri_version(), "options": shaping_options(options),
            "orientation": orientation, "orientation_reason": orientation_reason,
            "order": order, "order_reason": order_reason, "vertices": int(vertices),
            "edges": sum(s.edges for s in summaries),
            "wedges": sum(s.wedges for s in summaries), "partitions": len(summaries),
            "bounds": [int(b) for b in bounds],
            "summaries": [[*s[:7], list(s.checkpoint_rows), list(s.checkpoint_wedges)]
                          for s in summaries],
            "present": present, "seconds": dict(seconds), "read": dict(read),
            "input": input_identity}


# ------------------------------------------------------------------------ reading

def has_metadata(fs: Any, root: str) -> bool:
    """Whether ``root`` is a folder with a saved graph's metadata file."""
    try:
        return fs.isfile(posixpath.join(root, METADATA_NAME))
    except OSError:
        return False


def is_saved_graph(path: Any, storage_options: dict | None = None) -> bool:
    """Whether ``path`` (a string naming one folder, alone or in a list) is a saved graph,
    by its metadata file."""
    import os

    if isinstance(path, list | tuple) and len(path) == 1:
        path = path[0]
    if not isinstance(path, str | os.PathLike):
        return False
    from dtri.input.sources import filesystem

    try:
        fs, root = filesystem(os.fspath(path), storage_options)
    except (DtriError, ValueError, OSError):
        return False
    return has_metadata(fs, root.rstrip("/") or root)


def read_metadata(fs: Any, root: str, shown: str) -> dict[str, Any]:
    """The checked metadata of the saved graph at ``root`` (``shown``: its name as given);
    an unknown format or version, or a damaged file, is one line naming the file."""
    name = posixpath.join(shown.rstrip("/"), METADATA_NAME)
    try:
        with fs.open(posixpath.join(root, METADATA_NAME), "r") as handle:
            metadata = json.load(handle)
    except FileNotFoundError:
        raise SavedGraphError(f"{name}: missing; not a saved dtri graph (write one with "
                              "dtri prepare INPUT -o FOLDER)") from None
    except (OSError, ValueError) as error:
        raise SavedGraphError(f"{name}: damaged, not JSON ({error})") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise SavedGraphError(f"{name}: not the metadata of a saved dtri graph")
    version = metadata.get("format_version")
    if version != FORMAT_VERSION:
        raise SavedGraphError(
            f"{name}: format version {version!r} is not one this dtri "
            f"({dtri_version()}) reads (it reads version {FORMAT_VERSION}); prepare the "
            "input again")
    try:
        partitions, bounds = int(metadata["partitions"]), list(metadata["bounds"])
        summaries = [PartitionSummary._make([*row[:7], tuple(row[7]), tuple(row[8])])
                     for row in metadata["summaries"]]
        valid = (len(bounds) == partitions + 1 == len(summaries) + 1 and bounds[0] == 0
                 and bounds[-1] == int(metadata["vertices"])
                 and all(a <= b for a, b in itertools.pairwise(bounds)))
    except (KeyError, TypeError, ValueError, IndexError):
        valid = False
    if not valid:
        raise SavedGraphError(f"{name}: damaged (its partitions, bounds and summaries do "
                              "not agree)")
    metadata["summaries"] = summaries
    return metadata


def check_files(fs: Any, root: str, shown: str, partitions: int) -> None:
    """Every partition's two files are there; a missing one is one line naming it."""
    for folder in (EDGES_FOLDER, VERTICES_FOLDER):
        try:
            found = set(fs.ls(posixpath.join(root, folder), detail=False))
        except (FileNotFoundError, NotADirectoryError):
            found = set()
        names = {posixpath.basename(name.rstrip("/")) for name in found}
        for p in range(partitions):
            wanted = part_name(folder, p)
            if posixpath.basename(wanted) not in names:
                raise SavedGraphError(f"{posixpath.join(shown.rstrip('/'), wanted)}: missing "
                                      "from the saved graph; save it again")


def _read_table(fs: Any, path: str, shown: str, columns: list[str], on_device: bool
                ) -> dict[str, Any]:
    """A Parquet file's ``columns`` as arrays: decoded on the device where ``on_device``
    (:func:`_read_on_device`), else by pyarrow. A damaged file or a missing column is one
    line naming it."""
    try:
        if on_device:
            return _read_on_device(fs, [path], columns)
        return _read_on_host(fs, path, columns)
    except (OSError, RuntimeError, ValueError, KeyError, IndexError) as error:
        raise SavedGraphError(f"{shown}: damaged partition of a saved graph "
                              f"({str(error).strip() or type(error).__name__})") from None


def _read_on_host(fs: Any, path: str, columns: list[str]) -> dict[str, Any]:
    """A Parquet file's ``columns`` as NumPy arrays, by pyarrow through ``fs``: the file's own
    reader, and integers from their buffers (:func:`dtri.input.parquet.arrow_integers`), so
    that a count imports neither pyarrow's datasets nor pandas (0.2 s)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dtri.input.parquet import arrow_integers

    with fs.open(path, "rb") as handle:
        table = pq.ParquetFile(handle).read(columns=columns)
    return {name: arrow_integers(column) if pa.types.is_integer(column.type)
            and not column.null_count else column.to_numpy()
            for name in columns for column in [table.column(name)]}


def _read_on_device(fs: Any, paths: list[str], columns: list[str]) -> dict[str, Any]:
    """Parquet files' ``columns`` as CuPy arrays, the files' rows one after the other. Files
    on this machine are read and decoded on the device by pylibcudf in one call (cuDF's
    reader, without the import of cuDF's frames); others are read by pyarrow and copied.
    Raises what the readers raise, ``KeyError`` for a missing column and ``ValueError`` for
    a column of another type or with nulls."""
    import cupy

    from dtri.input.sources import local_path

    locals_ = [local_path(fs, path) for path in paths]
    if not all(local is not None for local in locals_):
        tables = [_read_on_host(fs, path, columns) for path in paths]
        return {name: cupy.asarray(np.concatenate([t[name] for t in tables]))
                for name in columns}
    import pylibcudf as plc

    from dtri.runtime.local_cluster import OPERATOR_MODULES, import_operator_modules

    options = plc.io.parquet.ParquetReaderOptions.builder(
        plc.io.SourceInfo(locals_)).column_names(columns).build()
    if not set(OPERATOR_MODULES) <= set(sys.modules):
        import_operator_modules()  # while this thread waits on the read
    read = plc.io.parquet.read_parquet(options)
    found = dict(zip(read.column_names(include_children=False), read.columns, strict=True))
    missing = [name for name in columns if name not in found]
    if missing:
        raise KeyError(f"no column {missing[0]!r}")
    from dtri.runtime.gpu import column_array

    types = {name: dtype for dtype, name in _COLUMN_TYPES.items()}
    return {name: column_array(found[name], types) for name in columns}


def read_partition(fs: Any, root: str, shown: str, p: int, low: int, high: int, edges: int,
                   schedule: bool, on_device: bool) -> tuple:
    """Sorted partition ``p`` (the ranks ``[low, high)``, ``edges`` edges) as a stored CSR,
    on the device where ``on_device``. Runs on the worker that keeps it."""
    xp = _array_module(on_device)
    edges_file, vertices_file = part_name(EDGES_FOLDER, p), part_name(VERTICES_FOLDER, p)
    dst = _read_table(fs, posixpath.join(root, edges_file),
                      posixpath.join(shown, edges_file), ["dst"], on_device)["dst"]
    vertices = _read_table(fs, posixpath.join(root, vertices_file),
                           posixpath.join(shown, vertices_file),
                           ["out_degree", *(["schedule"] if schedule else [])], on_device)
    dst = dst.astype(xp.int32, copy=False)
    out_degree = vertices["out_degree"]
    if dst.shape[0] != edges or out_degree.shape[0] != high - low \
            or int(out_degree.sum()) != edges:
        raise SavedGraphError(f"{posixpath.join(shown, edges_file)}: damaged partition of a "
                              f"saved graph ({dst.shape[0]} edges and {out_degree.shape[0]} "
                              f"sources, where the metadata says {edges} and {high - low})")
    offsets = xp.zeros(high - low + 1, dtype=xp.int64)
    xp.cumsum(out_degree, out=offsets[1:])
    rows = vertices["schedule"].astype(xp.int64, copy=False) if schedule else None
    return stored(CSR(dst, offsets, low, rows))


def _read_tables(fs: Any, paths: list[str], columns: list[str], on_device: bool,
                 decode: bool = True) -> dict[str, Any]:
    """Parquet files' ``columns``, the files' rows one after the other, on the device where
    ``on_device``: decoded there in one read where ``decode``, else read on the host file by
    file and copied once. Raises what the reader raises."""
    if on_device and decode:
        return _read_on_device(fs, paths, columns)
    tables = [_read_on_host(fs, path, columns) for path in paths]
    arrays = {name: np.concatenate([table[name] for table in tables]) for name in columns}
    if not on_device:
        return arrays
    from dtri.runtime.gpu import device_array

    return {name: device_array(values) for name, values in arrays.items()}


def read_whole(fs: Any, root: str, bounds: list[int], edges: list[int], schedule: bool,
               present: bool, on_device: bool) -> tuple[list[tuple], Any, Any, Any] | None:
    """Every sorted partition (as :func:`read_partition` gives it) and the vertex-wide
    arrays (as :func:`read_vertices`), each kind of file read at once: an in-process run's
    one task, two reads instead of three a partition (R-MAT 26's open stage on one H100:
    4.02 s against 4.50 s). ``None`` where a file cannot be read or the rows do not agree with
    the metadata: the reads file by file then name the damaged one. A small graph
    (:func:`~dtri.input.parquet.decodes_on_device`) is read on the host and copied: the device
    reader's start costs more."""
    from dtri.input.parquet import decodes_on_device

    xp = _array_module(on_device)
    partitions = len(edges)
    names = ["id", "degree", "out_degree", *(["schedule"] if schedule else []),
             *(["present"] if present else [])]
    decode = decodes_on_device(sum(edges))
    try:
        dst = _read_tables(fs, [posixpath.join(root, part_name(EDGES_FOLDER, p))
                                for p in range(partitions)], ["dst"], on_device, decode)["dst"]
        columns = _read_tables(fs, [posixpath.join(root, part_name(VERTICES_FOLDER, p))
                                    for p in range(partitions)], names, on_device, decode)
    except (OSError, RuntimeError, ValueError, KeyError, IndexError, SavedGraphError):
        return None
    out_degree = columns["out_degree"]
    if dst.shape[0] != sum(edges) or out_degree.shape[0] != bounds[-1]:
        return None
    offsets = xp.zeros(out_degree.shape[0] + 1, dtype=xp.int64)
    xp.cumsum(out_degree, out=offsets[1:])
    starts = to_host(offsets[xp.asarray(bounds)]).tolist()  # each partition's first edge
    if [b - a for a, b in itertools.pairwise(starts)] != list(edges):
        return None
    dst = dst.astype(xp.int32, copy=False)
    rows = columns["schedule"].astype(xp.int64, copy=False) if schedule else None
    parts = [stored(CSR(dst[starts[p]: starts[p + 1]],
                        offsets[bounds[p]: bounds[p + 1] + 1] - starts[p], bounds[p],
                        rows[bounds[p]: bounds[p + 1]] if rows is not None else None))
             for p in range(partitions)]
    return parts, columns["id"], columns["degree"], columns["present"] if present else None


def read_vertices(fs: Any, root: str, shown: str, partitions: int, vertices: int,
                  present: bool, on_device: bool) -> tuple[Any, Any, Any]:
    """The vertex-wide arrays by rank: input ids, degrees, and presence (``None`` where the
    graph has every rank)."""
    xp = _array_module(on_device)
    names = ["id", "degree", *(["present"] if present else [])]
    tables = [_read_table(fs, posixpath.join(root, part_name(VERTICES_FOLDER, p)),
                          posixpath.join(shown, part_name(VERTICES_FOLDER, p)), names,
                          on_device)
              for p in range(partitions)]
    arrays = [xp.concatenate([t[name] for t in tables]) if tables
              else xp.zeros(0, dtype=xp.int64) for name in names]
    if arrays[0].shape[0] != vertices:
        raise SavedGraphError(f"{posixpath.join(shown, VERTICES_FOLDER)}: damaged, "
                              f"{arrays[0].shape[0]} vertices where the metadata says "
                              f"{vertices}")
    return arrays[0], arrays[1], arrays[2] if present else None

"""Read Parquet edge lists by row groups: planned from the files' schemas and footers
(:func:`plan_parquet`), cut into pieces of at most a task's rows (:func:`parquet_pieces`), each
piece read as a cuDF or pandas frame (:func:`read_parquet_piece`) or, in process, as arrays on
the host or the device (:func:`read_parquet_arrays`, :func:`read_parquet_device_arrays`)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dask
import numpy as np
from fsspec import AbstractFileSystem

from dtri.errors import InputError
from dtri.input.edges import EdgeArrays
from dtri.input.sources import INT64_MAX, edges_meta, filesystem, local_path, resolve_columns

if TYPE_CHECKING:
    import dask.dataframe as dd

    from dtri.options import Backend


PARQUET_BYTES_PER_ROW = 16
"""A row of a Parquet read in memory: two int64 ids (the unit ``blocksize`` counts)."""

MAX_ROW_GROUP_SLICES = 64
"""A row group is read in at most this many slices. Each slice decodes the group from its
start up to its own last row (Parquet pages are found by scanning), so ``k`` slices decode the
group ``(k + 1) / 2`` times over; beyond this many, rewriting the file costs less."""

STREAM_BATCH_ROWS = 1 << 16
"""Rows per batch when a slice of a row group is decoded batch by batch."""

PARQUET_PIECE_ROWS = 1 << 25
"""Most rows of a Parquet read's partition (512 MiB as int64 ids), so that a read spreads
over the workers; fewer where a task's memory budget says so."""


@dataclass(frozen=True)
class RowSlice:
    """Rows ``[start, stop)`` of row group ``group`` of one Parquet file (a whole group where
    they are all of it)."""

    url: str
    name: str  # the file as errors show it
    group: int
    start: int
    stop: int
    group_rows: int

    @property
    def rows(self) -> int:
        return self.stop - self.start

    @property
    def whole(self) -> bool:
        return self.start == 0 and self.stop == self.group_rows


@dataclass(frozen=True)
class ParquetPlan:
    """The Parquet files of one read, their id columns, the name errors show, and their row
    groups ``(url, name, group, rows)`` in order, to be cut into pieces of at most
    ``piece_rows`` rows (:meth:`pieces`)."""

    urls: tuple[str, ...]
    columns: tuple[str, str]
    label: str
    groups: tuple[tuple[str, str, int, int], ...] = ()
    piece_rows: int = 1
    mixed_types: bool = False
    """Whether the files hold the id columns as integers of different types (read file by
    file, each as int64)."""

    @property
    def rows(self) -> int:
        return sum(rows for *_, rows in self.groups)

    def pieces(self) -> list[tuple[RowSlice, ...]]:
        """The read's partitions (:func:`parquet_pieces`; raises for a row group too large to
        slice)."""
        return parquet_pieces(list(self.groups), self.piece_rows)


@contextmanager
def _parquet_errors(name: str) -> Iterator[None]:
    """pyarrow's refusal of a file that is not Parquet (or is cut short) as an InputError
    naming the file."""
    import pyarrow as pa

    try:
        yield
    except pa.ArrowInvalid as error:
        raise InputError(f"not a readable Parquet file ({error})", name) from None


def _footer_facts(fs: AbstractFileSystem, path: str, name: str, columns: list[str]
                  ) -> tuple[Any, list[int], str | None]:
    """From one Parquet file's footer: its Arrow schema, the rows of each row group, and a
    negative id its statistics record (if any)."""
    import pyarrow.parquet as pq

    with fs.open(path, "rb") as f, _parquet_errors(name):
        meta = pq.ParquetFile(f).metadata
        schema = meta.schema.to_arrow_schema()
    rows, negative = [], None
    for group in range(meta.num_row_groups):
        row_group = meta.row_group(group)
        rows.append(row_group.num_rows)
        for k in range(meta.num_columns):
            chunk = row_group.column(k)
            stats = chunk.statistics
            if (chunk.path_in_schema in columns and stats is not None and stats.has_min_max
                    and isinstance(stats.min, int) and stats.min < 0 and negative is None):
                negative = f"negative vertex id {stats.min} in column {chunk.path_in_schema!r}"
    return schema, rows, negative


def parquet_pieces(groups: list[tuple[str, str, int, int]], piece_rows: int
                   ) -> list[tuple[RowSlice, ...]]:
    """The row groups ``(url, name, group, rows)`` of a read, in order, cut into pieces of at
    most ``piece_rows`` rows: consecutive small groups (of any files) taken together, a group
    larger than that cut into slices of about equal rows. A group that would need more than
    :data:`MAX_ROW_GROUP_SLICES` slices is refused with how to rewrite its file."""
    from dask.utils import format_bytes

    pieces: list[tuple[RowSlice, ...]] = []
    current: list[RowSlice] = []
    size = 0
    for url, name, group, rows in groups:
        if not rows:
            continue
        if rows > piece_rows:
            slices = -(-rows // piece_rows)
            if slices > MAX_ROW_GROUP_SLICES:
                shown = format_bytes(rows * PARQUET_BYTES_PER_ROW)
                raise InputError(
                    f"row group {group} holds {rows:,} rows ({shown} as int64 ids), more "
                    f"than {MAX_ROW_GROUP_SLICES} "
                    f"pieces of the {piece_rows:,} rows a read task may hold under this memory "
                    "budget; rewrite the file with smaller row groups, e.g. pyarrow.parquet."
                    "write_table(table, path, row_group_size=1_000_000), or give a larger "
                    "--memory-budget", name)
            if current:
                pieces.append(tuple(current))
                current, size = [], 0
            step = -(-rows // slices)
            pieces.extend((RowSlice(url, name, group, start, min(start + step, rows), rows),)
                          for start in range(0, rows, step))
            continue
        if current and size + rows > piece_rows:
            pieces.append(tuple(current))
            current, size = [], 0
        current.append(RowSlice(url, name, group, 0, rows, rows))
        size += rows
    if current:
        pieces.append(tuple(current))
    return pieces


def _check_id_types(schema: Any, picked: list[str], name: str) -> None:
    """Refuse id columns of a Parquet file that are not integers (any width: each file is
    read as int64)."""
    import pyarrow as pa

    for column in picked:
        kind = schema.field(column).type
        if not pa.types.is_integer(kind):
            shown = np.dtype(kind.to_pandas_dtype()) if pa.types.is_floating(kind) else kind
            raise InputError(f"column {column!r} has type {shown}, not integer ids", name)


def _check_same_columns(schema: Any, picked: list[str], name: str, first: str) -> None:
    """Refuse a Parquet file of a read that lacks the id columns of its first file
    (``first``), or holds them as other than integers."""
    names = [str(n) for n in schema.names]
    if not set(picked) <= set(names):
        raise InputError(f"has columns {names}, expected {picked} as in {first}", name)
    _check_id_types(schema, picked, name)


def plan_parquet(
    files: list[tuple[AbstractFileSystem, str, str]],
    columns: tuple[str | int, str | int] | None,
    piece_rows: int,
) -> ParquetPlan:
    """Check the schema (integer id columns) and the footers (no negative ids) of the files,
    and list their row groups, to be cut into pieces of at most ``piece_rows`` rows."""
    import pyarrow.parquet as pq

    label = files[0][2] if len(files) == 1 else f"{files[0][2]} (one of {len(files)} files)"
    fs, path, first = files[0]
    with fs.open(path, "rb") as handle, _parquet_errors(first):
        schema = pq.read_schema(handle)
    names = [str(name) for name in schema.names]
    if columns is None:
        columns = ("src", "dst") if {"src", "dst"} <= set(names) else (0, 1)
    positions = resolve_columns(columns, names, label)
    if max(positions) >= len(names):
        raise InputError(f"no column {max(positions)}; the columns are {names}", label)
    picked = [names[k] for k in positions]
    _check_id_types(schema, picked, label)
    groups: list[tuple[str, str, int, int]] = []
    types = set()
    for fs, path, name in files:
        schema, rows, negative = _footer_facts(fs, path, name, picked)
        if name != first:
            _check_same_columns(schema, picked, name, first)
        types.add(tuple(str(schema.field(column).type) for column in picked))
        if negative is not None:
            raise InputError(negative, name)
        url = fs.unstrip_protocol(path)
        groups.extend((url, name, g, n) for g, n in enumerate(rows))
    urls = tuple(fs.unstrip_protocol(path) for fs, path, _ in files)
    return ParquetPlan(urls, (picked[0], picked[1]), label, tuple(groups), max(1, piece_rows),
                       len(types) > 1)


def _open_parquet(url: str, storage_options: dict | None) -> tuple[Any, Any]:
    """A Parquet file to read with pyarrow: by its own path where it is local (pyarrow's
    native reader), else through fsspec; the handle to close (or ``None``)."""
    import pyarrow.parquet as pq

    fs, path = filesystem(url, storage_options)
    if (local := local_path(fs, path)) is not None:
        return pq.ParquetFile(local, buffer_size=1 << 20, pre_buffer=False), None
    handle = fs.open(path, "rb")
    return pq.ParquetFile(handle, buffer_size=1 << 20, pre_buffer=False), handle


def _piece_tables(piece: tuple[RowSlice, ...], columns: list[str],
                  storage_options: dict | None) -> list[tuple[str, Any]]:
    """One piece's id columns as Arrow tables, read on the host, with the names of their
    files: the whole row groups of each file in one call (decoded on several threads), a
    slice of a row group batch by batch (only the batches that overlap it are kept)."""
    import pyarrow as pa

    tables = []
    for url, grouped in itertools.groupby(piece, key=lambda s: s.url):
        reader, handle = _open_parquet(url, storage_options)
        try:
            slices = list(grouped)
            name = slices[0].name
            if all(s.whole for s in slices):
                tables.append((name, reader.read_row_groups([s.group for s in slices],
                                                            columns=columns, use_threads=True)))
                continue
            for s in slices:
                kept, row = [], 0
                for batch in reader.iter_batches(batch_size=STREAM_BATCH_ROWS,
                                                 row_groups=[s.group], columns=columns):
                    low, high = max(s.start - row, 0), min(s.stop - row, batch.num_rows)
                    if high > low:
                        kept.append(batch.slice(low, high - low))
                    row += batch.num_rows
                    if row >= s.stop:
                        break
                schema = pa.schema([reader.schema_arrow.field(c) for c in columns])
                tables.append((name, pa.Table.from_batches(kept, schema=schema)))
        finally:
            if handle is not None:
                handle.close()
    return tables


def read_parquet_piece(piece: tuple[RowSlice, ...], plan: ParquetPlan,
                       storage_options: dict | None, backend: Backend) -> Any:
    """One piece of a planned Parquet read as an ``src, dst`` frame (a ``read-edges`` task):
    cuDF, whose reader decodes whole row groups on the device (a piece's device memory is
    bounded by its rows), or pandas, read by pyarrow on the host (so are slices of a row
    group, then copied to the device once)."""
    source, target = plan.columns
    if backend.on_gpu and all(s.whole for s in piece):
        import cudf

        files: dict[str, list[int]] = {}
        for s in piece:
            files.setdefault(s.url, []).append(s.group)
        reads = [list(files)] if not plan.mixed_types else [[url] for url in files]
        frames = [_checked_ids(cudf.read_parquet(urls, columns=list(plan.columns),
                                                 row_groups=[files[url] for url in urls],
                                                 storage_options=storage_options)
                               .rename(columns={source: "src", target: "dst"}),
                               plan.label, plan.columns)
                  for urls in reads]
        return frames[0] if len(frames) == 1 else cudf.concat(frames, ignore_index=True)
    import pandas as pd

    arrays = read_parquet_arrays(piece, plan, storage_options)  # checked file by file
    frame = pd.DataFrame({"src": arrays.src, "dst": arrays.dst})  # a copy of its own
    if backend.on_gpu:
        import cudf

        return cudf.from_pandas(frame)
    return frame


def _checked_ids(frame: Any, label: str, names: tuple[str, str]) -> Any:
    """Check a cuDF partition of a Parquet read for nulls, negatives and overflow; int64
    ids."""
    for column, original in zip(("src", "dst"), names, strict=True):
        ids = frame[column]
        _check_id_column(ids, original, label, bool(ids.isna().any()))
    return frame.astype("int64")


def _check_id_column(ids: Any, original: str, label: str, nulls: bool) -> None:
    """Refuse a column of ids with nulls, a negative id, or an unsigned id past int64."""
    if nulls:
        raise InputError(f"missing (null) vertex id in column {original!r}", label)
    if len(ids) and ids.min() < 0:
        raise InputError(f"negative vertex id {ids.min()} in column {original!r}", label)
    if len(ids) and ids.dtype.kind == "u" and ids.max() > INT64_MAX:
        raise InputError(f"vertex id {ids.max()} is larger than 2**63-1", label)


def arrow_integers(chunked: Any) -> np.ndarray:
    """An Arrow column of integers without nulls as one NumPy array, read from its chunks'
    data buffers (``to_numpy`` would import pandas, 0.2 s to 0.4 s, to check its types)."""
    views = []
    for chunk in chunked.chunks:
        dtype = np.dtype(str(chunk.type))  # int8 .. uint64: the schema was checked
        views.append(np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk),
                                   offset=chunk.offset * dtype.itemsize))
    if not views:
        return np.zeros(0, dtype=np.dtype(str(chunked.type)))
    return views[0] if len(views) == 1 else np.concatenate(views)


def read_parquet_arrays(piece: tuple[RowSlice, ...], plan: ParquetPlan,
                        storage_options: dict | None) -> EdgeArrays:
    """One piece of a planned Parquet read as int64 ``src``, ``dst`` arrays, read by pyarrow
    on the host, each file's ids checked (nulls, negatives, ids past int64) before they are
    joined: an in-process CPU run's ``read-edges`` task, which needs no DataFrame (Dask's
    DataFrame and pandas take about 1 s to import on this project's 2-core machine), and
    the host's part of :func:`read_parquet_piece`."""
    columns: list[list[np.ndarray]] = [[], []]
    for name, table in _piece_tables(piece, list(plan.columns), storage_options):
        for kept, original in zip(columns, plan.columns, strict=True):
            chunked = table.column(original)
            nulls = bool(chunked.null_count)
            ids = np.zeros(0, dtype=np.int64) if nulls else arrow_integers(chunked)
            _check_id_column(ids, original, name, nulls)
            kept.append(ids.astype(np.int64, copy=False))
    src, dst = (np.concatenate(kept) if len(kept) > 1 else kept[0] if kept
                else np.zeros(0, dtype=np.int64) for kept in columns)
    return EdgeArrays(src, dst)


def read_parquet_device_arrays(piece: tuple[RowSlice, ...], plan: ParquetPlan,
                               storage_options: dict | None) -> EdgeArrays:
    """One piece of a planned Parquet read as int64 CuPy ``src``, ``dst`` arrays: an
    in-process GPU run's ``read-edges`` task. Whole row groups of this machine's files are
    decoded on the device by pylibcudf (without importing cuDF's frames), and each file's ids
    get the host's checks (:func:`_check_id_column`). Other pieces are read on the host
    (:func:`read_parquet_arrays`) and copied once, as are files the device reader refuses
    and ids with nulls: the host's read names the file and the fault."""
    from dtri.runtime.gpu import device_array

    files: dict[str, list[RowSlice]] = {}
    for s in piece:
        files.setdefault(s.url, []).append(s)
    paths = {url: path for url in files
             if (path := local_path(*filesystem(url, storage_options))) is not None}
    if piece and all(s.whole for s in piece) and len(paths) == len(files):
        batches = [list(files)] if not plan.mixed_types else [[url] for url in files]
        try:
            read = [_device_ids([paths[url] for url in urls],
                                [[s.group for s in files[url]] for url in urls],
                                list(plan.columns)) for urls in batches]
        except (OSError, RuntimeError, ValueError, KeyError):
            read = None  # read again on the host, which names the file and the fault
        if read is not None:
            import cupy

            for urls, ids in zip(batches, read, strict=True):
                _check_device_ids(ids, [files[url] for url in urls], plan.columns)
            kept = [[column.astype(cupy.int64, copy=False) for column in ids] for ids in read]
            if len(kept) == 1:
                return EdgeArrays(*kept[0])
            return EdgeArrays(*(cupy.concatenate([ids[k] for ids in kept]) for k in (0, 1)))
    arrays = read_parquet_arrays(piece, plan, storage_options)
    return EdgeArrays(device_array(arrays.src), device_array(arrays.dst))


def _check_device_ids(ids: tuple[Any, Any], files: list[list[RowSlice]],
                      columns: tuple[str, str]) -> None:
    """The host's checks of :func:`_check_id_column` on the device's id columns of a read,
    file by file (``files``: each file's row groups, in the read's order), so that an error
    names the file."""
    start = 0
    for groups in files:
        stop = start + sum(s.rows for s in groups)
        for column, original in zip(ids, columns, strict=True):
            _check_id_column(column[start:stop], original, groups[0].name, False)
        start = stop


DEVICE_PARQUET_MIN_ROWS = "dtri.device-parquet-min-rows"
"""``dask.config`` key: the rows from which an in-process GPU run decodes Parquet files on the
device (:func:`decodes_on_device`); below it pyarrow's read on the host and one copy cost
less than the device reader's start."""


def decodes_on_device(rows: int) -> bool:
    """Whether an in-process GPU run decodes ``rows`` rows of Parquet files on the device
    (raw edges or a saved graph): from :data:`DEVICE_PARQUET_MIN_ROWS`."""
    return rows >= int(dask.config.get(DEVICE_PARQUET_MIN_ROWS))


_DEVICE_ID_TYPES = {f"{kind}{bits}": np.dtype(f"{kind.lower()[0]}{bits // 8}")
                    for kind in ("INT", "UINT") for bits in (8, 16, 32, 64)}
"""The NumPy types of integer id columns, by the name of their pylibcudf type."""


def _device_ids(paths: list[str], groups: list[list[int]], columns: list[str]
                ) -> tuple[Any, Any]:
    """The row groups ``groups`` of the files ``paths`` (of one id type), read and decoded
    on the device: their two id columns as CuPy arrays of the files' type, unchecked.
    Raises ``ValueError`` for a null or a column not of integers, ``KeyError`` for a
    missing column, and what the reader raises."""
    import pylibcudf as plc

    from dtri.runtime.gpu import column_array

    options = plc.io.parquet.ParquetReaderOptions.builder(
        plc.io.SourceInfo(paths)).column_names(columns).build()
    options.set_row_groups(groups)
    read = plc.io.parquet.read_parquet(options)
    found = dict(zip(read.column_names(include_children=False), read.columns, strict=True))
    first, second = (column_array(found[name], _DEVICE_ID_TYPES) for name in columns)
    return first, second


def parquet_collection(plan: ParquetPlan, storage_options: dict | None, backend: Backend
                       ) -> dd.DataFrame:
    """Parquet as ``src, dst``: one ``read-edges`` task per piece of the plan."""
    import dask.dataframe as dd

    meta = edges_meta()
    if backend.on_gpu:
        import cudf

        meta = cudf.from_pandas(meta)
    pieces = plan.pieces()
    if not pieces:
        return dd.from_pandas(meta, npartitions=1)
    return dd.from_map(read_parquet_piece, pieces, plan=plan,
                       storage_options=storage_options, backend=backend, meta=meta,
                       label="read-edges", enforce_metadata=False)

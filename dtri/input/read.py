"""Read edge lists (SNAP text, CSV/TSV, Matrix Market, Parquet) into a lazy Dask DataFrame
of exactly two int64 columns, ``src`` and ``dst``, holding the vertex ids as written: planned
(:func:`plan_read`) as text blocks (:mod:`dtri.input.text`) or Parquet pieces
(:mod:`dtri.input.parquet`) of the files :mod:`dtri.input.sources` finds and opens."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from dask.utils import parse_bytes

from dtri.errors import ConfigurationError, InputError, InputNotFoundError
from dtri.input.parquet import PARQUET_PIECE_ROWS, ParquetPlan, parquet_collection, plan_parquet
from dtri.input.sources import FORMATS, edges_meta, expand_paths, format_from_name
from dtri.input.text import (
    MIN_TEXT_BYTES_PER_EDGE,
    TextBlock,
    counted_collection,
    parse_block,
    plan_text_file,
    text_layout,
)
from dtri.options import Backend

if TYPE_CHECKING:
    import dask.dataframe as dd


def read_edges(
    urlpath: str | os.PathLike | list[str],
    format: str = "auto",
    *,
    columns: tuple[str | int, str | int] | None = None,
    header: bool | None = None,
    blocksize: int | str = "64MiB",
    storage_options: dict | None = None,
    dataframe_backend: str = "pandas",
    max_rows: int | None = None,
) -> dd.DataFrame:
    """Lazily read edge lists into a Dask DataFrame with int64 columns ``src`` and ``dst``.

    ``urlpath`` is a path, glob, directory or fsspec URL, or a list of those.  ``format`` is
    one of FORMATS or "auto" (each file's by its name, see format_from_name; SNAP text where
    the name says nothing).  ``columns`` picks the source and target by name (csv/tsv with a
    header, parquet) or 0-based position.  ``header``
    (csv/tsv only): None treats the first non-comment line as a header when every field of it
    is a non-numeric name.  Only parquet is read with ``dataframe_backend``; text is parsed
    with pandas.  When nothing matches here but a distributed client is active, the read is
    planned on a worker, for files only the cluster's workers see.

    Uncompressed text is split into ``blocksize`` byte ranges aligned to newlines, and so is
    the text of a gzip file: the planner decompresses it once to find seek points (one every
    ``blocksize`` bytes of text, :mod:`dtri.input.gzip_index`), and each block decompresses
    from the point before it, so the work stays linear in the file. Other compressed streams
    (bz2, xz, ...) cannot be entered in the middle: a file smaller than blocksize/4 is one
    block, and a larger one ceil(4 * compressed size / blocksize) blocks, block k
    decompressing from the start up to decompressed offset k * blocksize and the last one
    reading on to EOF: quadratic decompression work in exchange for parallel parsing and about
    one block of text per task.  Recompress such inputs with gzip, or as many smaller files.

    Parquet is read by row groups (:func:`parquet_pieces`): consecutive groups, of one file or
    of several, taken together up to :data:`PARQUET_PIECE_ROWS` rows per partition, a larger
    group cut into slices.  ``max_rows`` (the rows one task of the run may hold, from its
    memory budget) caps every partition, whatever the files' layout: a text block is then at
    most ``max_rows`` × 4 bytes (``"1 2\\n"``, the shortest line of an edge), a Parquet piece
    at most ``max_rows`` rows.
    """
    if (backend := next((b for b in Backend if b.frames == dataframe_backend), None)) is None:
        raise ConfigurationError(f"unknown dataframe backend {dataframe_backend!r}")
    size = parse_bytes(blocksize) if isinstance(blocksize, str) else int(blocksize)
    if size <= 0:
        raise ConfigurationError(f"blocksize must be positive, got {blocksize!r}")
    if isinstance(urlpath, list | tuple):
        urlpath = [os.fspath(p) for p in urlpath]
    options: dict[str, Any] = {"columns": columns, "header": header, "blocksize": size,
                               "storage_options": storage_options, "max_rows": max_rows}
    try:
        plan = plan_read(urlpath, format, **options)
    except InputNotFoundError:
        # Not here, but the cluster's workers may see it (a disk mounted on them alone).
        from dtri.runtime.resolve import active_client

        if (client := active_client()) is None:
            raise
        plan = client.submit(plan_read, urlpath, format, **options, pure=False).result()
    return collection_from_plan(plan, storage_options, backend)


ReadPlan = tuple[TextBlock, ...] | ParquetPlan
"""What planning a read learns by opening the inputs: the text blocks, or the parquet files."""


def plan_read(
    urlpath: str | os.PathLike | list[str],
    format: str = "auto",
    *,
    columns: tuple[str | int, str | int] | None = None,
    header: bool | None = None,
    blocksize: int = 64 << 20,
    storage_options: dict | None = None,
    max_rows: int | None = None,
) -> ReadPlan:
    """Find the files, check their formats, cut text into blocks and Parquet into pieces of
    row groups: all the file access a read needs before its tasks run (sizes as
    :func:`read_edges` says). Plain data, so a worker can plan for a client that does not see
    the files."""
    if format != "auto" and format not in FORMATS:
        raise ConfigurationError(f"unknown format {format!r}; expected 'auto' or one of {FORMATS}")
    if columns is not None:  # NumPy integers count as positions too
        # (two, as annotated: :func:`resolve_columns` says so where one reads them)
        columns = cast("tuple[str | int, str | int]",
                       tuple(int(c) if isinstance(c, np.integer) else c for c in columns))
    files = expand_paths(urlpath, storage_options)
    formats = [format if format != "auto" else format_from_name(p) or "snap" for _, p, _ in files]
    if "parquet" in formats:
        if set(formats) != {"parquet"}:
            raise InputError("cannot read parquet and text files together", files[0][2])
        return plan_parquet(files, columns, min(PARQUET_PIECE_ROWS,
                                                 max_rows or PARQUET_PIECE_ROWS))
    if max_rows is not None:
        blocksize = max(1, min(blocksize, max_rows * MIN_TEXT_BYTES_PER_EDGE))
    blocks: list[TextBlock] = []
    for (fs, path, name), fmt in zip(files, formats, strict=True):
        layout, start = text_layout(fs, path, name, fmt, columns, header)
        blocks.extend(plan_text_file(fs, path, name, layout, start, blocksize))
    return tuple(blocks)


def collection_from_plan(plan: ReadPlan, storage_options: dict | None = None,
                         backend: Backend = Backend.CPU) -> dd.DataFrame:
    """The Dask DataFrame of a planned read; each task opens its own block or piece."""
    import dask.dataframe as dd

    if isinstance(plan, ParquetPlan):
        return parquet_collection(plan, storage_options, backend)
    if not plan:  # no data blocks (e.g. an empty Matrix Market file)
        return dd.from_pandas(edges_meta(), npartitions=1)
    if any(block.layout.shape is not None or block.seek_points is not None for block in plan):
        return counted_collection(plan)
    return dd.from_map(parse_block, list(plan), meta=edges_meta(), label="read-edges",
                       enforce_metadata=False)

"""Turn whatever the caller has into the pipeline's input: partitions of ``src, dst``.

On a cluster the input is a Dask DataFrame (:func:`as_edge_frame`): paths, globs, directories
and URLs go through :func:`dtri.input.read.read_edges`; Dask, pandas and cuDF DataFrames keep
their partitions (the first two columns, or ``src``/``dst`` when present, or the two named in
``columns``); ``(m, 2)`` NumPy or CuPy arrays become one frame each; a generated graph
(:class:`~dtri.input.generate.GeneratedGraph`) is built partition by partition.

An in-process run (:func:`local_input`) reads text files, NumPy arrays and generated graphs
as delayed :class:`EdgeArrays` instead, through the same readers and generators but without
pandas or Dask DataFrames, which take longer to import than a small graph takes to count; it
reads Parquet files likewise, once their read is planned (:func:`parquet_arrays`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

import dask
import numpy as np

from dtri.errors import InputError, InputNotFoundError
from dtri.input.edges import EdgeArrays
from dtri.kernels.canonicalize import checked_id_column
from dtri.kernels.dispatch import is_device_object
from dtri.options import Backend

if TYPE_CHECKING:
    import dask.dataframe as dd

    from dtri.options import Options

DEFAULT_PARTITION_ROWS = 4_000_000
TEXT_BYTES_PER_EDGE = 8
"""A low guess of the bytes of one edge's line in a text file (``"123 4567\\n"`` is 9), so
that a file's edges are not underestimated when an in-process run is chosen."""
COMPRESSION_RATIO = 4
"""A high guess of how much gzip or bz2 shrinks an edge list (SNAP's are 3-4x)."""


class LocalInput(NamedTuple):
    """An input as an in-process run reads it: delayed :class:`EdgeArrays` partitions and
    the rows they hold (for text files, a high estimate from their sizes). Parquet files
    have no partitions here, only their rows, from the files' footers, to decide where the
    run goes: their read is planned for the run's task budget (:func:`parquet_arrays`)."""

    parts: list[Any]
    rows: int
    device_parts: list[Any] | None = None
    """The partitions made on the GPU, where they can be (a generated graph)."""

    def on(self, backend: Backend) -> list[Any]:
        """The partitions for a run on ``backend``."""
        return self.device_parts if backend.on_gpu and self.device_parts else self.parts


def is_path_like(edges: Any) -> bool:
    """A path, URL or glob, or a list of them."""
    if isinstance(edges, str | os.PathLike):
        return True
    return isinstance(edges, list | tuple) and bool(edges) and all(
        isinstance(e, str | os.PathLike) for e in edges
    )


def input_on_gpu(edges: Any) -> bool:
    """True when the caller's edges already live in cuDF/CuPy objects."""
    if dask.is_dask_collection(edges):
        return is_device_object(getattr(edges, "_meta", None))
    return is_device_object(edges)


def user_edges(edges: Any) -> Any:
    """The edges a caller gave, under the rule the command line's reader keeps: a list or
    tuple of pairs (not of paths) is an ``(m, 2)`` NumPy array, and an array's columns after
    its first two (weights, timestamps) are left out, as a text file's are. Anything else
    is returned as it is, for the readers to take or refuse."""
    if isinstance(edges, list | tuple) and not is_path_like(edges):
        try:
            pairs = np.asarray(edges) if len(edges) else np.zeros((0, 2), dtype=np.int64)
        except ValueError:  # rows of unequal length
            raise InputError("a list of edges must hold pairs of vertex ids, such as "
                             "[(0, 1), (1, 2)]") from None
        if pairs.ndim != 2 or pairs.shape[1] < 2:
            raise InputError(f"a list of edges must hold pairs of vertex ids, such as "
                             f"[(0, 1), (1, 2)]; got rows of shape {pairs.shape[1:]}")
        edges = pairs
    is_array = isinstance(edges, np.ndarray) or _device_array(edges)
    if is_array and edges.ndim == 2 and edges.shape[1] > 2:
        edges = edges[:, :2]
    return edges


def _check_edge_array(edges: Any) -> None:
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise InputError(f"an edge array must have shape (m, 2) (or more columns, of which "
                         f"the first two are read), got {edges.shape}")


def _array_parts(edges: np.ndarray) -> list[EdgeArrays]:
    _check_edge_array(edges)
    if edges.dtype.kind not in "iu":
        raise InputError(f"an edge array has dtype {edges.dtype}; vertex ids must be integers")
    part = EdgeArrays(edges[:, 0], edges[:, 1])
    for column in ("src", "dst"):  # here, while a row's position is the array's row
        checked_id_column(part, column)
    return [part]


def _device_array(edges: Any) -> bool:
    """A CuPy array (any array on the GPU that is not a frame)."""
    return is_device_object(edges) and hasattr(edges, "ndim") and not hasattr(edges, "columns")


def arrays_on(part: EdgeArrays, backend: Backend) -> EdgeArrays:
    """An in-process partition where ``backend`` computes: host arrays go to the GPU, one
    copy a column (a small text file needs no cuDF reader on the way)."""
    if not backend.on_gpu or is_device_object(part.src):
        return part
    from dtri.runtime.gpu import device_array

    return EdgeArrays(device_array(part.src), device_array(part.dst))


def _generated_part(maker: Any, bounds: tuple[int, int]) -> EdgeArrays:
    return EdgeArrays(*maker.arrays(bounds))


def _text_rows(blocks: tuple) -> int:
    """A high estimate of the edges of a planned text read, from its files' sizes."""
    files = {(block.fs, block.path): block.compression for block in blocks}
    return sum(fs.size(path) * (COMPRESSION_RATIO if compression else 1)
               for (fs, path), compression in files.items()) // TEXT_BYTES_PER_EDGE


def local_input(edges: Any, options: Options) -> LocalInput | None:
    """``edges`` as an in-process run reads it (text files, an ``(m, 2)`` NumPy or CuPy
    array, a generated graph; Parquet files by their rows only); ``None`` for the inputs that
    go through a Dask DataFrame without a known size (DataFrames, and files this process
    cannot see)."""
    from dtri.input.generate import GeneratedGraph

    if isinstance(edges, GeneratedGraph):
        token = dask.base.tokenize(edges)
        ranges = edges.ranges(options.npartitions)
        cpu, gpu = ([dask.delayed(_generated_part, pure=True)(
                        edges.maker(backend), bounds,
                        dask_key_name=(f"dtri-generate-{backend}-{token}", k))
                     for k, bounds in enumerate(ranges)] for backend in Backend)
        return LocalInput(cpu, edges.edges, gpu)
    if (isinstance(edges, np.ndarray) or _device_array(edges)) and options.columns is None:
        return LocalInput(_array_parts(edges), int(edges.shape[0]))
    if (plan := read_plan(edges, options, None)) is None:
        return None  # not files, or none seen here: perhaps the cluster's workers see them
    from dtri.input.parquet import ParquetPlan
    from dtri.input.text import checked_blocks, parse_block_arrays

    if isinstance(plan, ParquetPlan):  # read through a Dask frame; its rows are in the footers
        return LocalInput([], plan.rows)
    return LocalInput(checked_blocks(plan, parse_block_arrays), _text_rows(plan))


def parquet_arrays(plan: Any, storage_options: dict | None, backend: Backend) -> list[Any]:
    """An in-process run's partitions of a planned Parquet read: one delayed
    :class:`EdgeArrays` a piece (a ``read-edges`` task), without pandas, cuDF's or Dask's
    DataFrames: read by pyarrow on the CPU (:func:`dtri.input.parquet.read_parquet_arrays`),
    decoded on the device by pylibcudf on the GPU
    (:func:`dtri.input.parquet.read_parquet_device_arrays`) from
    :data:`~dtri.input.parquet.DEVICE_PARQUET_MIN_ROWS` rows (:func:`~dtri.input.parquet.
    decodes_on_device`), fewer read by pyarrow and copied to the device later
    (:func:`arrays_on`); none for another plan (or no pieces)."""
    from dtri.input.parquet import (
        ParquetPlan,
        decodes_on_device,
        read_parquet_arrays,
        read_parquet_device_arrays,
    )

    if not isinstance(plan, ParquetPlan):
        return []
    on_device = backend.on_gpu and decodes_on_device(plan.rows)
    reader = read_parquet_device_arrays if on_device else read_parquet_arrays
    token = dask.base.tokenize(plan, storage_options, backend)
    return [dask.delayed(reader)(piece, plan, storage_options,
                                 dask_key_name=(f"read-edges-parquet-{token}", k))
            for k, piece in enumerate(plan.pieces())]


def read_plan(edges: Any, options: Options, max_rows: int | None) -> Any:
    """The read plan of a path-like input (:func:`dtri.input.read.plan_read`, made once: its
    rows size the run before anything is read), ``None`` for other inputs and for files this
    process cannot see (the cluster's workers plan those)."""
    if not is_path_like(edges):
        return None
    from dtri.input.read import plan_read

    try:  # plan_read takes a path or a list or tuple of them (expand_paths)
        return plan_read(edges, columns=options.columns, max_rows=max_rows,
                         **options.read_options())
    except InputNotFoundError:
        return None


def planned_rows(edges: Any, plan: Any = None) -> tuple[int | None, bool]:
    """The input edges of ``edges`` before any is read, and whether that is an estimate (text
    files, from their sizes); ``None`` where unknown (a Dask collection, files the workers
    plan)."""
    from dtri.input.generate import GeneratedGraph
    from dtri.input.parquet import ParquetPlan

    if isinstance(edges, GeneratedGraph):
        return edges.edges, False
    if isinstance(plan, ParquetPlan):
        return plan.rows, False
    if plan is not None:
        return _text_rows(plan), True
    return known_rows(edges), False


def known_rows(edges: Any) -> int | None:
    """The rows of an input that is not read in-process, where known without reading it
    (pandas and cuDF frames, arrays); ``None`` for Dask collections and files."""
    if dask.is_dask_collection(edges) or is_path_like(edges):
        return None
    shape = getattr(edges, "shape", None)
    return int(shape[0]) if shape else None


def _select_columns(frame: Any, columns: tuple[Any, Any] | None) -> Any:
    names = list(frame.columns)
    if columns is None:
        columns = ("src", "dst") if {"src", "dst"} <= set(names) else (0, 1)
    if len(names) < 2:
        raise InputError(f"an edge frame needs two columns, got {names}")
    chosen = []
    for column in columns:
        if isinstance(column, int) and column not in names:
            if not 0 <= column < len(names):
                raise InputError(f"column position {column} is out of range for columns {names}")
            column = names[column]
        if column not in names:
            raise InputError(f"no column {column!r} among {names}")
        chosen.append(column)
    if names == ["src", "dst"] == chosen:  # as it is: a persisted frame stays persisted
        return frame
    selected = frame[chosen]
    selected.columns = ["src", "dst"]
    return selected


def _array_frame(edges: Any) -> Any:
    _check_edge_array(edges)
    if is_device_object(edges):
        import cudf

        return cudf.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})
    import pandas as pd

    return pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})


def as_edge_frame(edges: Any, backend: Backend | str, *, columns: tuple[Any, Any] | None = None,
                  npartitions: int | None = None, max_rows: int | None = None,
                  files_on_host: bool = False, plan: Any = None,
                  **read_options: Any) -> dd.DataFrame:
    """A Dask DataFrame of ``src, dst`` with pandas (``cpu``) or cuDF (``gpu``) partitions.

    ``max_rows``: the most rows a partition may hold (from a task's memory budget), whatever
    the files' layout; generated graphs and in-memory frames are cut to it too (a Dask
    DataFrame keeps its partitions: the preparation splits one that is too big).
    ``files_on_host``: text is parsed into host memory (pandas) and left there even on the
    GPU backend, for a run whose partitions wait there (host staging). Parquet is read on
    the GPU all the same (cuDF decodes it there, a piece at a time, in a budget's rows)."""
    import dask.dataframe as dd

    from dtri.input.generate import GeneratedGraph, default_partitions

    backend = Backend(backend)  # callers outside dtri.input may give "cpu" or "gpu"
    if isinstance(edges, GeneratedGraph):
        if npartitions is None and max_rows:
            npartitions = max(default_partitions(edges.edges), -(-edges.edges // max_rows))
        frame = edges.frame(backend, npartitions)
    elif is_path_like(edges):
        from dtri.input.read import collection_from_plan, read_edges

        frame = (collection_from_plan(plan, read_options.get("storage_options"), backend)
                 if plan is not None else
                 read_edges(edges, columns=columns, dataframe_backend=backend.frames,
                            max_rows=max_rows, **read_options))
        if npartitions is None and files_on_host and not is_device_object(frame._meta):
            return frame  # text in host memory, where the run keeps it
    elif isinstance(edges, dd.DataFrame):
        frame = _select_columns(edges, columns)
    else:
        if isinstance(edges, np.ndarray) or (is_device_object(edges)
                                             and not hasattr(edges, "columns")):
            edges = _array_frame(edges)
        if not hasattr(edges, "columns"):
            raise InputError(
                f"cannot read edges from a {type(edges).__name__}: pass a path, a Dask, pandas "
                "or cuDF DataFrame, or an (m, 2) NumPy/CuPy array"
            )
        edges = _select_columns(edges, columns)
        parts = npartitions or max(1, -(-len(edges) // DEFAULT_PARTITION_ROWS),
                                   -(-len(edges) // (max_rows or len(edges) or 1)))
        frame = dd.from_pandas(edges, npartitions=parts, sort=False)
    if npartitions and frame.npartitions != npartitions:
        frame = frame.repartition(npartitions=npartitions)
    if is_device_object(frame._meta) != backend.on_gpu:
        frame = frame.to_backend(backend.frames)
    return frame

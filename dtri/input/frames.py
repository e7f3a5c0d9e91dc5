"""Turn whatever the caller has into the pipeline's input: a Dask DataFrame of ``src, dst``.

Paths, globs, directories and URLs go through :func:`dtri.input.read.read_edges`; Dask, pandas and
cuDF DataFrames keep their partitions (the first two columns, or ``src``/``dst`` when present,
or the two named in ``columns``); ``(m, 2)`` NumPy or CuPy arrays become one frame each.
"""

from __future__ import annotations

import os
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dtri.errors import InputError
from dtri.kernels.dispatch import is_device_object

DEFAULT_PARTITION_ROWS = 4_000_000


def is_path_like(edges: Any) -> bool:
    """A path, URL or glob, or a list of them."""
    if isinstance(edges, str | os.PathLike):
        return True
    return isinstance(edges, list | tuple) and bool(edges) and all(
        isinstance(e, str | os.PathLike) for e in edges
    )


def input_on_gpu(edges: Any) -> bool:
    """True when the caller's edges already live in cuDF/CuPy objects."""
    if isinstance(edges, dd.DataFrame):
        return is_device_object(edges._meta)
    return is_device_object(edges)


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
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise InputError(f"an edge array must have shape (m, 2), got {edges.shape}")
    if is_device_object(edges):
        import cudf

        return cudf.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})
    return pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})


def as_edge_frame(edges: Any, backend: str, *, columns: tuple[Any, Any] | None = None,
                  npartitions: int | None = None, **read_options: Any) -> dd.DataFrame:
    """A Dask DataFrame of ``src, dst`` with pandas (``cpu``) or cuDF (``gpu``) partitions."""
    if is_path_like(edges):
        from dtri.input.read import read_edges

        frame = read_edges(edges, columns=columns,
                           dataframe_backend="cudf" if backend == "gpu" else "pandas",
                           **read_options)
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
        parts = npartitions or max(1, -(-len(edges) // DEFAULT_PARTITION_ROWS))
        frame = dd.from_pandas(edges, npartitions=parts, sort=False)
    if npartitions and frame.npartitions != npartitions:
        frame = frame.repartition(npartitions=npartitions)
    on_gpu = is_device_object(frame._meta)
    if backend == "gpu" and not on_gpu:
        frame = frame.to_backend("cudf")
    elif backend == "cpu" and on_gpu:
        frame = frame.to_backend("pandas")
    return frame

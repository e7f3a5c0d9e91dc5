"""Canonicalize: the input as a simple undirected graph.

Each edge becomes ``(min, max)``, so both directions of an edge and repeated edges collapse
into one row after a distributed ``drop_duplicates``. Self-loops are kept here as ``(v, v)``
rows: they close no triangle, but their vertex is part of the input (it is counted among the
vertices), and the orientation stage drops them.
"""

from __future__ import annotations

import dask.dataframe as dd

from dtri.dispatch import array_module, column_to_array, frame_from_arrays
from dtri.errors import InputError


def canonical_pairs(frame):  # frame: pandas or cuDF DataFrame with integer src, dst
    """One partition's edges as ``(min(src, dst), max(src, dst))`` int64 pairs."""
    src = column_to_array(frame["src"])
    dst = column_to_array(frame["dst"])
    xp = array_module(src)
    low = xp.minimum(src, dst).astype(xp.int64, copy=False)
    if low.shape[0] and int(low.min()) < 0:
        raise InputError(f"negative vertex id {int(low.min())}: vertex ids must be >= 0")
    high = xp.maximum(src, dst).astype(xp.int64, copy=False)
    return frame_from_arrays(frame, {"src": low, "dst": high})


def check_integer_columns(edges: dd.DataFrame) -> None:
    """Refuse non-integer id columns up front (floats would silently round)."""
    for column in ("src", "dst"):
        kind = edges[column].dtype.kind
        if kind not in "iu":
            raise InputError(
                f"column {column!r} has dtype {edges[column].dtype}; vertex ids must be integers"
            )


def canonicalize(edges: dd.DataFrame) -> dd.DataFrame:
    """Distinct undirected edges ``src <= dst`` (self-loops as ``(v, v)``), hash-partitioned."""
    check_integer_columns(edges)
    pairs = edges[["src", "dst"]].map_partitions(
        canonical_pairs, meta=edges._meta[["src", "dst"]].astype("int64"),
        token="dtri-canonicalize",
    )
    return pairs.drop_duplicates(split_out=max(1, edges.npartitions), ignore_index=True)

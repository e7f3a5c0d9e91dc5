"""Canonicalize: the input as a simple undirected graph over dense vertex ids.

Each edge becomes ``(min, max)``. The distinct ids of both columns are the vertices
(self-loop-only vertices included: they are part of the input), merged over partitions by a
tree. A vertex set is held one of two ways, whichever is smaller: the ids ascending (int64),
where ``searchsorted`` turns any id (``10**15`` works) into a dense id ``0 .. n-1``; or, where
the ids are few enough to index an array, a mark per id ``0 .. largest`` (bool), whose running
count is the dense id: no sort, no binary search, and an eighth of the bytes per id when the
tree and the renaming send the set between workers.
Self-loops close no triangle and are dropped; the remaining edges are packed into 64-bit keys
``(low << bits) | high`` and made unique where they were read (:func:`canonical_keys`):
duplicates and both directions of an edge merge within one sender. An edge that two senders
both hold stays in both until the sort's exchange brings its copies together
(:mod:`dtri.prepared.distributed`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dtri.errors import InputError
from dtri.kernels.bins import checked_key_bits, pack_edges
from dtri.kernels.dispatch import (
    array_module,
    column_to_array,
    is_device_object,
    sorted_unique,
    to_host,
)

if TYPE_CHECKING:
    import dask.dataframe as dd


INT64_MAX = 2**63 - 1
ENDS = {"src": "source", "dst": "target"}


def _row_name(values: Any, position: int) -> str:
    """The row at ``position`` of a column as the caller knows it: by its frame's index label
    (a pandas or cuDF column), or by its position (an array)."""
    index = getattr(values, "index", None)
    if index is None:
        return f"row {position}"
    label = index[position]
    return f"row {label.item() if hasattr(label, 'item') else label}"


def checked_id_column(part: Any, column: str) -> Any:
    """Column ``src`` or ``dst`` of a partition (pandas, cuDF or :class:`EdgeArrays`) as an
    array of its own integer type, refusing a missing id (null, NA) and an unsigned id above
    2**63-1, which int64 would turn into a negative one. Only columns that can hold nulls or
    such ids are scanned."""
    values = part[column]
    if getattr(values, "hasnans", False):
        first = int(values.isna().to_numpy().argmax())
        raise InputError(f"{_row_name(values, first)} has no {ENDS[column]} id (null)")
    ids = column_to_array(values)
    if ids.dtype.kind == "u" and ids.dtype.itemsize == 8 and ids.shape[0] \
            and int(ids.max()) > INT64_MAX:
        first = int((ids > INT64_MAX).argmax())
        raise InputError(f"{ENDS[column]} id {int(ids[first])} in {_row_name(values, first)} "
                         "is larger than 2**63-1")
    return ids


def id_columns(frame: Any) -> tuple[Any, Any]:
    """One partition's ``src``, ``dst`` (pandas or cuDF, integer) as int64 arrays
    (:func:`checked_id_column`)."""
    src, dst = checked_id_column(frame, "src"), checked_id_column(frame, "dst")
    xp = array_module(src)
    return src.astype(xp.int64, copy=False), dst.astype(xp.int64, copy=False)


def check_integer_columns(edges: dd.DataFrame) -> None:
    """Refuse non-integer id columns up front (floats would silently round)."""
    for column in ("src", "dst"):
        kind = edges[column].dtype.kind
        if kind not in "iu":
            raise InputError(
                f"column {column!r} has dtype {edges[column].dtype}; vertex ids must be integers"
            )


DENSE_TABLE_PER_ID = 2
"""Ids up to this many times the ids looked up (plus :data:`DENSE_TABLE_MIN`) are renamed
through a table indexed by id: it costs no more memory than the ids themselves."""
DENSE_TABLE_MIN = 1 << 16


def dense_range(largest: int, ids: int, per_id: int = DENSE_TABLE_PER_ID) -> bool:
    """Whether ids in ``[0, largest]`` are few enough, for ``ids`` of them to look up, to index
    a table by id, of at most ``per_id`` entries an id (plus :data:`DENSE_TABLE_MIN`)."""
    return 0 <= largest < per_id * ids + DENSE_TABLE_MIN


MARKS_BYTES_PER_ID = 8
"""A vertex set is held as marks (one byte per id up to the largest) where that is at most
this many bytes per id of the ids it stands for, as an int64 id costs."""


def is_marks(vertices: Any) -> bool:
    """Whether a vertex set is held as marks (bool, one per id) rather than ascending ids."""
    return vertices.dtype.kind == "b"


def partition_vertices(frame: Any) -> Any:
    """The distinct vertex ids of one partition: marks where the largest id is at most
    :data:`MARKS_BYTES_PER_ID` bytes per id read, else ascending int64 ids; refuses negative
    ids."""
    src, dst = id_columns(frame)
    xp = array_module(src)
    smallest, largest = (xp.stack([xp.minimum(src.min(), dst.min()), xp.maximum(
        src.max(), dst.max())]).tolist() if src.shape[0] else (-1, -1))  # one wait, not two
    if smallest >= 0 and dense_range(largest, 2 * src.shape[0], MARKS_BYTES_PER_ID):
        present = xp.zeros(largest + 1, dtype=bool)
        present[src] = True
        present[dst] = True
        return present
    vertices = sorted_unique(xp.concatenate([src, dst]))
    if vertices.shape[0] and int(vertices[0]) < 0:
        raise InputError(f"negative vertex id {int(vertices[0])}: vertex ids must be >= 0")
    return vertices


def merge_vertices(*vertex_sets: Any) -> Any:
    """Union of vertex sets (:func:`partition_vertices`): marks where any of them is marks
    and marks up to the largest id are no bigger than the sets merged, else ascending ids."""
    xp = array_module(vertex_sets[0])
    marks = [s for s in vertex_sets if is_marks(s)]
    ids = [s for s in vertex_sets if not is_marks(s) and s.shape[0]]
    if marks:
        longest = max(int(m.shape[0]) for m in marks)
        size = max([longest] + [largest_id(s) + 1 for s in ids])
        if size <= longest + MARKS_BYTES_PER_ID * sum(int(s.shape[0]) for s in ids):
            present = xp.zeros(size, dtype=bool)
            for m in marks:
                present[:m.shape[0]] |= m
            for s in ids:
                present[s] = True
            return present
    return sorted_unique(xp.concatenate([vertex_ids(s) for s in vertex_sets]))


def vertex_ids(vertices: Any) -> Any:
    """A vertex set's ids, ascending (int64)."""
    if not is_marks(vertices):
        return vertices
    return array_module(vertices).flatnonzero(vertices).astype("int64", copy=False)


def ids_by_rank(vertices: Any, order: Any | None) -> Any:
    """The input id of every rank: the vertex set's ids reindexed by ``order``
    (:func:`dtri.kernels.orient.rank_and_order`; ``None``: dense ids are the ranks)."""
    ids = vertex_ids(vertices)
    return ids if order is None else ids[order]


def vertex_count(vertices: Any) -> int:
    """Number of distinct vertices in a vertex set."""
    if is_marks(vertices):
        return int(array_module(vertices).count_nonzero(vertices))
    return int(vertices.shape[0])


def largest_id(vertices: Any) -> int:
    """The largest id of a vertex set (-1 when empty)."""
    if is_marks(vertices):
        return int(vertices.shape[0]) - 1
    return int(vertices[-1]) if vertices.shape[0] else -1


def canonical_keys(frame: Any, vertices: Any) -> Any:
    """One partition's simple edges as packed dense keys ``(low << bits) | high``, distinct and
    ascending. ``vertices`` holds every id of ``frame`` (:func:`partition_vertices` has
    checked them); dense ids keep the order of ids, so ``(min, max)`` is taken after the
    renaming."""
    src, dst = id_columns(frame)
    if is_device_object(src) != is_device_object(vertices):  # summed on the host, out of
        vertices = array_module(src).asarray(vertices) if is_device_object(src) \
            else to_host(vertices)  # device memory (a host fallback), or the other way
    xp = array_module(vertices)
    bits = checked_key_bits(vertex_count(vertices))
    if is_device_object(vertices) and dense_range(largest_id(vertices), 2 * src.shape[0]):
        from dtri.kernels.orient import fused_prepare

        if fused_prepare():
            from dtri.kernels.prepare.cuda import dense_edge_keys  # one fused pass

            return sorted_unique(dense_edge_keys(src, dst, dense_table(vertices), bits))
    a, b = dense_ids(vertices, src, dst)
    simple = a != b
    low, high = xp.minimum(a[simple], b[simple]), xp.maximum(a[simple], b[simple])
    return sorted_unique(pack_edges(low, high, bits))


def dense_ids(vertices: Any, *ids: Any) -> list[Any]:
    """The dense ids (positions among the ascending ids of ``vertices``) of id arrays whose
    every id is in ``vertices``: by a table indexed by id where :func:`dense_range` allows,
    else by binary search."""
    xp = array_module(vertices)
    count = sum(int(i.shape[0]) for i in ids)
    largest = largest_id(vertices)
    if largest < 0 or not dense_range(largest, count):
        ascending = vertex_ids(vertices)
        return [xp.searchsorted(ascending, i) for i in ids]
    table = dense_table(vertices)
    return [table[i] for i in ids]


def dense_table(vertices: Any) -> Any:
    """The dense id of every id ``0 .. largest`` that is in the vertex set (int64; other
    entries are not read): the running count of marks, or the ids' positions."""
    xp = array_module(vertices)
    if is_marks(vertices):
        table = xp.cumsum(vertices, dtype=xp.int64)
        table -= 1
        return table
    table = xp.zeros(int(vertices[-1]) + 1, dtype=xp.int64)
    table[vertices] = xp.arange(vertices.shape[0], dtype=xp.int64)
    return table

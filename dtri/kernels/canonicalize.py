"""Canonicalize: the input as a simple undirected graph over dense vertex ids.

Each edge becomes ``(min, max)``. The distinct ids of both columns, ascending, are the vertices
(self-loop-only vertices included: they are part of the input), merged over partitions by a
tree; ``searchsorted`` into them turns any id (``10**15`` works) into a dense id ``0 .. n-1``.
Where the ids are few enough to index an array (:func:`dense_range`), a table of marks does
both instead, in two passes over the ids and no sort or binary search.
Self-loops close no triangle and are dropped; the remaining edges are packed into 64-bit keys
``(low << bits) | high`` and sent by a hash of the key to one receiving partition each, which
makes them unique: duplicates and both directions of an edge meet there and merge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dtri.errors import InputError
from dtri.kernels.bins import checked_key_bits, pack_edges, split_by_hash
from dtri.kernels.dispatch import array_module, column_to_array, sort_keys

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


def dense_range(largest: int, ids: int) -> bool:
    """Whether ids in ``[0, largest]`` are few enough, for ``ids`` of them to look up, to index
    a table by id."""
    return 0 <= largest < DENSE_TABLE_PER_ID * ids + DENSE_TABLE_MIN


def sorted_unique(values: Any) -> Any:
    """Distinct values, ascending, by sort and adjacent compare (NumPy's hash-based ``unique``
    is several times slower on integer keys; CuPy's is the same sort)."""
    xp = array_module(values)
    ordered = sort_keys(values)
    if ordered.shape[0] < 2:
        return ordered
    keep = xp.empty(ordered.shape[0], dtype=bool)
    keep[0] = True
    xp.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def partition_vertices(frame: Any) -> Any:
    """Distinct vertex ids of one partition, ascending (int64); refuses negative ids."""
    src, dst = id_columns(frame)
    xp = array_module(src)
    smallest, largest = (xp.stack([xp.minimum(src.min(), dst.min()), xp.maximum(
        src.max(), dst.max())]).tolist() if src.shape[0] else (-1, -1))  # one wait, not two
    if smallest >= 0 and dense_range(largest, 2 * src.shape[0]):  # mark ids in a table
        present = xp.zeros(largest + 1, dtype=bool)
        present[src] = True
        present[dst] = True
        return xp.flatnonzero(present).astype(xp.int64, copy=False)
    vertices = sorted_unique(xp.concatenate([src, dst]))
    if vertices.shape[0] and int(vertices[0]) < 0:
        raise InputError(f"negative vertex id {int(vertices[0])}: vertex ids must be >= 0")
    return vertices


def merge_vertices(*vertex_sets: Any) -> Any:
    """Union of ascending vertex id arrays, ascending."""
    return sorted_unique(array_module(vertex_sets[0]).concatenate(vertex_sets))


def vertex_count(vertices: Any) -> int:
    """Number of distinct vertices (the length of the merged vertex array)."""
    return int(vertices.shape[0])


def split_edge_keys(frame: Any, vertices: Any, parts: int) -> dict[int, Any]:
    """One partition's simple edges as packed dense keys ``(low << bits) | high``, cut by a
    hash of the key into ``parts`` even pieces (piece ``j`` goes to receiver ``j``). ``vertices``
    holds every id of ``frame`` (:func:`partition_vertices` has checked them); dense ids keep
    the order of ids, so ``(min, max)`` is taken after the renaming."""
    src, dst = id_columns(frame)
    xp = array_module(vertices)
    n = vertex_count(vertices)
    if xp.__name__ == "cupy" and vertices.shape[0] and dense_range(int(vertices[-1]),
                                                                   2 * src.shape[0]):
        from dtri.kernels.orient import fused_prepare

        if fused_prepare():
            from dtri.kernels.cuda_prepare import dense_edge_keys  # one fused pass

            keys = dense_edge_keys(src, dst, dense_table(vertices), checked_key_bits(n))
            return split_by_hash(keys, parts)
    a, b = dense_ids(vertices, src, dst)
    simple = a != b
    low, high = xp.minimum(a[simple], b[simple]), xp.maximum(a[simple], b[simple])
    return split_by_hash(pack_edges(low, high, checked_key_bits(n)), parts)


def dense_ids(vertices: Any, *ids: Any) -> list[Any]:
    """The dense ids (positions in the ascending ``vertices``) of id arrays whose every id is
    in ``vertices``: by a table indexed by id where :func:`dense_range` allows, else by
    binary search."""
    xp = array_module(vertices)
    count = sum(int(i.shape[0]) for i in ids)
    if not vertices.shape[0] or not dense_range(int(vertices[-1]), count):
        return [xp.searchsorted(vertices, i) for i in ids]
    table = dense_table(vertices)
    return [table[i] for i in ids]


def dense_table(vertices: Any) -> Any:
    """The dense id of every id ``0 .. vertices[-1]`` that is in ``vertices`` (ascending)."""
    xp = array_module(vertices)
    table = xp.zeros(int(vertices[-1]) + 1, dtype=xp.int64)
    table[vertices] = xp.arange(vertices.shape[0], dtype=xp.int64)
    return table


def unique_edge_keys(*pieces: Any) -> Any:
    """The distinct keys of one receiver's pieces, ascending."""
    return sorted_unique(array_module(pieces[0]).concatenate(pieces))

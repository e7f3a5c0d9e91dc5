"""Every triangle, listed: ``(a, b, c)`` by input id, ``a < b < c``, each triangle once.

The listing runs the join of the credits (:mod:`dtri.analytics.credits`): the same groups of
consecutive partitions, and pieces of the partitions (whole adjacency lists) against each
group. A triangle ``u < v < w`` (by rank) is found once, at its closing edge ``(u, v)``,
where ``w`` is in ``N+(u) ∩ N+(v)``: each ``dtri-list`` task (:func:`list_group`) runs the
kernels the graphlets list 4-cliques with (:mod:`dtri.kernels.graphlets`).

Each task's triangles are one block of three rows where the run's results wait: a partition
of the Python API's lazy Dask DataFrame, or, written (:func:`write_listing`), a Parquet file
written by the task after the one that lists it and let go, so the listing is never held
whole, by a worker or by the client. A task's pieces hold at most :func:`most_wedges` wedges
(where the profile can cut them so), and a triangle is one of them, which bounds a
partition's rows.
"""
from __future__ import annotations

import itertools
import uuid
from bisect import bisect_right
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, NamedTuple

from dtri.analytics.count import load_group, member_starts, own_partition
from dtri.analytics.credits import Piece, group_plan
from dtri.analytics.plan import checkpoints
from dtri.errors import ConfigurationError
from dtri.kernels import graphlets as kernels
from dtri.kernels.csr import list_cuts, row_range, sources
from dtri.kernels.dispatch import array_module, frame_from_arrays
from dtri.kernels.intersect import intersect
from dtri.kernels.strategy import cpu_kernel
from dtri.runtime.budget import TASK_SHARES
from dtri.runtime.staging import Staging

if TYPE_CHECKING:
    import dask.dataframe as dd

    from dtri.prepared.graph import GraphData

COLUMNS = ("a", "b", "c")
"""The listing's columns: a triangle's three input ids, ascending."""
LISTED_BYTES = 96
"""Working bytes per triangle listed: its three record positions, three ranks, three input
ids and the frame's three columns (8 bytes each)."""


class ListTask(NamedTuple):
    """One ``dtri-list`` task: consecutive pieces of one worker against group ``group``."""

    group: int
    worker: int
    pieces: tuple[Piece, ...]


def most_wedges(task_budget: int) -> int:
    """The wedges of one task's pieces, and the records of one batch: a share of the task's
    budget (:attr:`~dtri.runtime.budget.TaskShares.triangle_records`) at
    :data:`LISTED_BYTES` each."""
    return max(task_budget // TASK_SHARES.triangle_records // LISTED_BYTES, 1)


def piece_wedges(summary: Any, piece: Piece) -> int:
    """The wedges of a piece's rows, by the partition's wedge profile (read at the profile's
    points at or before its ends)."""
    rows, before = checkpoints(summary)

    def at(row: int) -> int:
        return summary.wedges if row >= summary.edges else before[bisect_right(rows, row) - 1]

    return at(piece.last) - at(piece.first)


def listing_plan(graph: GraphData) -> tuple[tuple[tuple[int, int], ...], list[ListTask], int]:
    """The groups, the tasks and the rows per intersection pass of a graph's listing: the
    credits' plan (:func:`~dtri.analytics.credits.group_plan`) with its pieces cut to at most
    :func:`most_wedges` wedges where the profile allows, and each of its tasks cut into
    tasks of consecutive pieces of at most that many wedges together."""
    most = most_wedges(graph.task_budget)
    plan = group_plan(graph, most_wedges=most)
    tasks = []
    for t in plan.tasks:
        batch: list[Piece] = []
        held = 0
        for piece in t.pieces:
            wedges = piece_wedges(graph.summaries[piece.partition], piece)
            if batch and held + wedges > most:
                tasks.append(ListTask(t.group, t.worker, tuple(batch)))
                batch, held = [], 0
            batch.append(piece)
            held += wedges
        if batch:
            tasks.append(ListTask(t.group, t.worker, tuple(batch)))
    return plan.groups, tasks, plan.chunk_rows


def list_group(staging: Staging, rows: int, kernel: str, records: int,
               bounds: tuple[int, int], group_size: int,
               pieces: tuple[tuple[int, int, int], ...], limit: int | None, ids: Any,
               wanted: Any, *parts: Any) -> Any:
    """One ``dtri-list`` task: the triangles of ``pieces`` (``(input index, first row, last
    row)``) whose middle vertex lies in the group of the first ``group_size`` of ``parts``
    (over the ranks ``bounds``), as a frame of input ids ``a < b < c``; ``ids``: the input id
    of every rank; ``wanted`` (a bool per rank, or ``None``): only the triangles with a
    vertex it marks; ``limit``: at most that many rows (the first found). ``records``: the
    triangles listed per batch; ``rows``: partition rows per intersection pass; ``kernel``:
    the CPU kernel of the intersection."""
    members = list(parts[:group_size])
    group = load_group(staging, bounds, members)
    ids = staging.to_device(ids)
    wanted = None if wanted is None else staging.to_device(wanted)
    starts = member_starts(members)
    found: list[Any] = []
    listed = 0
    for index, first_of_piece, last_of_piece in pieces:
        part = own_partition(staging, group, starts, index, parts[index])
        for first, last in itertools.pairwise(list_cuts(part, first_of_piece, last_of_piece,
                                                        rows)):
            piece = row_range(part, first, last)
            closing = intersect(piece, group, credits=True, chunk_rows=rows, kernel=kernel).uv
            lowest = sources(piece)
            for a, b in kernels.record_batches(closing, records):
                batch = kernels.list_triangles(piece, group, closing, a, b)
                if wanted is not None:
                    touching = (wanted[lowest[batch.ab]] | wanted[piece.dst[batch.ab]]
                                | wanted[piece.dst[batch.ac]])
                    batch = kernels.TriangleRecords(*(r[touching] for r in batch))
                if limit is not None:
                    batch = kernels.TriangleRecords(*(r[: limit - listed] for r in batch))
                found.append(kernels.triangle_ids(piece, lowest, batch, ids))
                listed += int(batch.ab.shape[0])
                if limit is not None and listed >= limit:
                    return _block(staging, group.offsets, found)
    return _block(staging, group.offsets, found)


def _block(staging: Staging, like: Any, found: list[Any]) -> Any:
    """The listed triangles (blocks of three rows: ``a``, ``b``, ``c``) as one block where
    the run's results wait."""
    if len(found) > 1:
        return staging.to_host(array_module(like).concatenate(found, axis=1))
    return staging.to_host(found[0] if found else empty_listing(like))


def block_frame(block: Any) -> Any:
    """A block of listed triangles as a frame of its library; a pandas frame over the block
    itself, uncopied."""
    import numpy as np

    if isinstance(block, np.ndarray):
        import pandas as pd

        return pd.DataFrame(block.T, columns=list(COLUMNS), copy=False)
    return frame_from_arrays(block[0], {name: block[i] for i, name in enumerate(COLUMNS)})


def write_block(block: Any, fs: Any, path: str) -> int:
    """Write a block of listed triangles to ``path`` on ``fs`` as one Parquet file (int64
    columns ``a``, ``b``, ``c``), straight from its arrays (pyarrow's writer on the host,
    cuDF's on the GPU); returns its rows."""
    import numpy as np

    with fs.open(path, "wb") as handle:
        if isinstance(block, np.ndarray):
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table(dict(zip(COLUMNS, block, strict=True))), handle)
        else:
            block_frame(block).to_parquet(handle, index=False)
    return rows_of(block)


def wanted_ranks(ids: Any, listed: Any) -> Any:
    """Which ranks are the vertices of ``listed`` (input ids; ids not in the graph are
    ignored): a bool per rank."""
    xp = array_module(ids)
    return xp.isin(ids, xp.asarray(listed))


def empty_listing(like: Any) -> Any:
    """A listing of no triangles, as a block of the array library of ``like``."""
    xp = array_module(like)
    return xp.zeros((len(COLUMNS), 0), dtype=xp.int64)


def rows_of(block: Any) -> int:
    """A partition's rows."""
    return int(block.shape[1])


def rows_before(before: int, rows: int) -> int:
    """The rows ahead of the next partition: those ahead of this one and its own."""
    return before + rows


def first_rows(block: Any, before: int, limit: int) -> Any:
    """The rows of a partition that fit ``limit`` after the ``before`` rows of the
    partitions ahead of it."""
    return block[:, : max(limit - before, 0)]


def checked_limit(limit: int | None) -> int | None:
    """``limit``: ``None`` (every triangle) or an integer of at least 0."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ConfigurationError(f"limit must be an integer of at least 0, got {limit!r}")
    return limit


def checked_vertices(vertices: Iterable[int] | None) -> Any:
    """The vertices to list the triangles of, as an int64 array of input ids (``None``:
    every triangle)."""
    import numpy as np

    if vertices is None:
        return None
    try:
        listed = np.fromiter((int(v) for v in vertices), dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as error:
        raise ConfigurationError(f"vertices must be integer vertex ids: {error}") from error
    return np.unique(listed)


Lazy = Callable[..., Any]
"""Builds a task of the listing (:func:`listing_blocks`'s ``lazy``)."""


def listing_blocks(graph: GraphData, limit: int | None, vertices: Iterable[int] | None
                   ) -> tuple[list[Any], Lazy]:
    """The listing's partitions, as lazy blocks of three rows (input ids ``a < b < c``) where
    the run's results wait, and the function that builds more tasks of the listing (each
    built, not run, as the staging wraps a task that moves its own data or only looks at
    its inputs)."""
    import dask

    limit, listed = checked_limit(limit), checked_vertices(vertices)
    groups, plan, rows = listing_plan(graph)
    token = uuid.uuid4().hex  # nothing hashed: an in-process run's arguments are arrays
    tasks, bounds = graph.tasks, graph.bounds
    staging = graph.staging

    def lazy(func: Callable[..., Any], *args: Any, key: str, worker: int | None = None) -> Any:
        wrapped = staging.wrap(func, True,
                               moves_own_data=any(isinstance(a, Staging) for a in args))
        with tasks.on_worker(worker) if worker is not None else nullcontext():
            return dask.delayed(wrapped, pure=True)(*args, dask_key_name=f"dtri-list-{token}-"
                                                                         f"{key}")

    wanted = None if listed is None else lazy(wanted_ranks, graph.ids, listed, key="wanted")
    kernel = "hash" if graph.backend.on_gpu else cpu_kernel(graph.vertices)
    records = most_wedges(graph.task_budget)
    parts = []
    for i, t in enumerate(plan):
        first, last = groups[t.group]
        members = list(range(first, last + 1))
        inputs = [*members, *dict.fromkeys(p.partition for p in t.pieces
                                           if p.partition not in members)]
        pieces = tuple((inputs.index(p.partition), p.first, p.last) for p in t.pieces)
        parts.append(lazy(list_group, staging, rows, kernel, records,
                          (bounds[first], bounds[last + 1]), len(members), pieces, limit,
                          graph.ids, wanted, *(graph.parts[p] for p in inputs),
                          key=str(i), worker=t.worker))
    if not parts:
        parts.append(lazy(empty_listing, graph.ids, key="empty"))
    if limit is not None:
        parts = _first(lazy, parts, limit)
    return parts, lazy


def list_triangles(graph: GraphData, limit: int | None = None,
                   vertices: Iterable[int] | None = None) -> dd.DataFrame:
    """:meth:`dtri.PreparedGraph.list_triangles`: one partition per ``dtri-list`` task, and
    ``limit`` the first triangles the tasks find in their order."""
    import dask.dataframe as dd

    from dtri.analytics.edge import frame_meta

    blocks, lazy = listing_blocks(graph, limit, vertices)
    parts = [lazy(block_frame, block, key=f"frame-{i}") for i, block in enumerate(blocks)]
    meta = frame_meta(graph, dict.fromkeys(COLUMNS, "int64"))
    return dd.from_delayed(parts, meta=meta, verify_meta=False)


def rows_written(*rows: int) -> int:
    """The rows of every file written."""
    return sum(rows)


def write_listing(graph: GraphData, fs: Any, folder: str, limit: int | None = None,
                  vertices: Iterable[int] | None = None) -> Any:
    """The listing of :func:`list_triangles` written into ``folder`` on ``fs`` (an fsspec
    file system), one Parquet file per partition (``part.N.parquet``), each by the task
    after the one that lists it, with no Dask DataFrame between: a lazy task of the rows
    written."""
    blocks, lazy = listing_blocks(graph, limit, vertices)
    written = [lazy(write_block, block, fs, f"{folder}/part.{i}.parquet", key=f"write-{i}")
               for i, block in enumerate(blocks)]
    return lazy(rows_written, *written, key="rows")


def _first(lazy: Callable[..., Any], parts: list[Any], limit: int) -> list[Any]:
    """The partitions cut to the first ``limit`` rows in their order: each partition cut by
    the rows of those before it (a running sum of their lengths, so only lengths wait on
    the partitions ahead)."""
    cut, before = [], 0
    for i, part in enumerate(parts):
        cut.append(lazy(first_rows, part, before, limit, key=f"first-{i}"))
        before = lazy(rows_before, before, lazy(rows_of, part, key=f"rows-{i}"),
                      key=f"before-{i}")
    return cut

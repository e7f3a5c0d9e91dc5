"""Sort: each source range's oriented edges ordered by (src, dst).

A receiving partition gets every edge of its source range
(:func:`dtri.kernels.orient.source_bounds`),
so it holds whole adjacency lists, sorted, which is what the wedge stage needs.
:func:`partition_summary` then measures each partition: edges, wedges (prefix sums of
C(d, 2)), its source range, largest target and longest adjacency list, and a coarse profile
of where its wedges lie (:func:`wedge_profile`), all before any wedge is written.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from dtri.kernels.bins import checked_key_bits, unpack_keys
from dtri.kernels.dispatch import array_module, column_to_array, frame_from_arrays

PROFILE_POINTS = 1024
"""Evenly spaced rows whose adjacency lists bound the checkpoints of a wedge profile."""


class PartitionSummary(NamedTuple):
    """What the planner knows of one sorted partition."""

    edges: int
    wedges: int
    first_src: int
    last_src: int
    last_dst: int
    max_out_degree: int = 0
    """Length of the partition's longest adjacency list (0: unknown)."""
    max_out_source: int = -1
    """The source (rank) of that list, the first if several tie (-1: unknown)."""
    checkpoint_rows: tuple[int, ...] = ()
    """Rows where an adjacency list starts, ascending from 0 to ``edges`` (:func:`wedge_profile`;
    empty: unknown, the planner then sees the partition as one interval)."""
    checkpoint_wedges: tuple[int, ...] = ()
    """Wedges of the rows before each checkpoint row (the wedge number it starts at)."""


def sorted_edges(vertices: int, *pieces: Any) -> Any:
    """One source range's oriented keys as a ``src, dst`` frame sorted by (src, dst)."""
    xp = array_module(pieces[0])
    keys = xp.sort(xp.concatenate(pieces))
    src, dst = unpack_keys(keys, checked_key_bits(vertices))
    return frame_from_arrays(keys, {"src": src, "dst": dst})


def wedge_profile(src: Any, points: int = PROFILE_POINTS) -> tuple[int, int, int, list, list]:
    """Wedges, longest list and checkpoints ``(rows, wedges before)`` of a sorted ``src``.

    The checkpoints are list starts: for each of ``points + 1`` evenly spaced rows, the start
    and the end of the list that holds it, and the longest list's start and end. So every
    interval between two checkpoints is either one adjacency list or at most
    ``ceil(edges / points)`` rows, and a list of at least that many rows is an interval of its
    own; a wedge range that the planner places inside intervals needs no other rows.
    Returns ``(wedges, max_out_degree, its row, rows, wedges_before)``.
    """
    xp = array_module(src)
    edges = src.shape[0]
    bounds = xp.concatenate([xp.zeros(1, dtype=xp.int64),
                             xp.flatnonzero(src[1:] != src[:-1]).astype(xp.int64) + 1,
                             xp.full(1, edges, dtype=xp.int64)])  # list starts, then the end
    degree = bounds[1:] - bounds[:-1]
    before = xp.concatenate([xp.zeros(1, dtype=xp.int64),
                             xp.cumsum(degree * (degree - 1) // 2, dtype=xp.int64)])
    longest = int(xp.argmax(degree))
    lists = degree.shape[0]
    targets = xp.arange(points + 1, dtype=xp.int64) * edges // points
    holding = xp.searchsorted(bounds, targets, side="right") - 1  # list that holds each row
    picked = xp.unique(xp.concatenate([
        holding, xp.minimum(holding + 1, lists),
        xp.asarray([0, lists, longest, longest + 1], dtype=holding.dtype)]))
    return (int(before[-1]), int(degree[longest]), int(bounds[longest]),
            bounds[picked].tolist(), before[picked].tolist())


def partition_summary(frame: Any) -> PartitionSummary:
    """Edges, wedges, source range, largest target, longest list and wedge profile of one
    sorted partition."""
    return edges_summary(column_to_array(frame["src"]), column_to_array(frame["dst"]))


def edges_summary(src: Any, dst: Any) -> PartitionSummary:
    """:func:`partition_summary` of a partition's sorted ``src`` and ``dst`` arrays."""
    if src.shape[0] == 0:
        return PartitionSummary(0, 0, -1, -1, -1)
    wedges, max_out_degree, longest_row, rows, before = wedge_profile(src)
    last_dst = int(dst.max())
    return PartitionSummary(int(src.shape[0]), wedges, int(src[0]), int(src[-1]), last_dst,
                            max_out_degree, int(src[longest_row]), tuple(rows), tuple(before))


class PartitionCSR(NamedTuple):
    """A sorted partition as CSR, the form host staging keeps (4 bytes an edge instead of 16):
    the targets of sources ``low .. low + len(offsets) - 2``, grouped by source, ascending."""

    dst: Any  # int32 (ranks are below 2**31: dtri.kernels.bins.MAX_KEY_BITS)
    offsets: Any  # int64, one more than the sources of the range; offsets[0] == 0
    low: int

    @property
    def high(self) -> int:
        """One past the last source of the range."""
        return self.low + int(self.offsets.shape[0]) - 1

    @property
    def edges(self) -> int:
        return int(self.dst.shape[0])


def csr_of(src: Any, dst: Any) -> PartitionCSR:
    """The CSR of a partition's edges sorted by (src, dst), over its sources' range."""
    xp = array_module(src)
    if src.shape[0] == 0:
        return PartitionCSR(xp.zeros(0, dtype=xp.int32), xp.zeros(1, dtype=xp.int64), 0)
    low, high = int(src[0]), int(src[-1]) + 1
    offsets = xp.searchsorted(src, xp.arange(low, high + 1, dtype=src.dtype)).astype(xp.int64)
    return PartitionCSR(dst.astype(xp.int32), offsets, low)


def sorted_csr(vertices: int, *pieces: Any) -> PartitionCSR:
    """:func:`sorted_edges` as CSR (host staging's sort)."""
    xp = array_module(pieces[0])
    keys = xp.sort(xp.concatenate(pieces))
    src, dst = unpack_keys(keys, checked_key_bits(vertices))
    del keys
    return csr_of(src, dst)


def frame_csr(frame: Any) -> PartitionCSR:
    """A sorted ``src, dst`` partition as CSR."""
    return csr_of(column_to_array(frame["src"]), column_to_array(frame["dst"]))


def csr_sources(csr: PartitionCSR) -> Any:
    """The source of every edge of a CSR partition (the ``src`` column it came from)."""
    xp = array_module(csr.offsets)
    rows = xp.arange(csr.edges, dtype=xp.int64)
    return xp.searchsorted(csr.offsets, rows, side="right") - 1 + csr.low


def csr_summary(csr: PartitionCSR) -> PartitionSummary:
    """:func:`partition_summary` of a CSR partition."""
    return edges_summary(csr_sources(csr), csr.dst)

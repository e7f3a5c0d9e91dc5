"""Sorted adjacency as CSR: the form of every sorted partition, edge bin and group of partitions.

A sorted partition holds the oriented edges of one range of source ranks ``[low, high)``, whole
adjacency lists, as :class:`CSR`: the targets grouped by source, ascending within each source
(int32: ranks are below 2**31, :data:`dtri.kernels.bins.MAX_KEY_BITS`), and one offset per
source of the range plus one. Four bytes an edge, and every list's start and end without a
search. An edge bin (a source range cut by the top bits of the rank) and a group of consecutive
partitions are CSRs of their ranges too (:func:`rows_of`, :func:`joined`).

:func:`summary` measures a partition for the planner: edges, wedges (prefix sums of C(d, 2)),
its sources, largest target, longest list and a coarse profile of where its wedges lie, all
before any wedge is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from dtri.kernels.bins import checked_key_bits, pack_edges, unpack_keys
from dtri.kernels.counting import id_counts
from dtri.kernels.dispatch import array_module, is_device_object, sort_keys, sorted_unique, to_host

PROFILE_POINTS = 1024
"""Evenly spaced rows whose adjacency lists bound the checkpoints of a wedge profile."""


class CSR(NamedTuple):
    """Oriented edges of the sources ``low .. high - 1`` (ranks), grouped by source."""

    dst: Any
    """int32 targets, grouped by source, ascending within each source."""
    offsets: Any
    """int64, one more than the sources of the range; ``offsets[0] == 0``."""
    low: int
    schedule: Any = None
    """The rows (positions ``0 .. high - low - 1``) in the order the intersection kernel gives
    them to thread blocks: the graph's vertex order (:mod:`dtri.kernels.order`); ``None``:
    rank order. Only a stored partition has one; a CSR cut from it is in rank order."""

    @property
    def high(self) -> int:
        """One past the last source of the range."""
        return self.low + int(self.offsets.shape[0]) - 1

    @property
    def edges(self) -> int:
        return int(self.dst.shape[0])


def stored(csr: CSR) -> tuple:
    """A CSR as tasks store and send it: a plain tuple. Dask sends a tuple's GPU arrays by their
    CUDA serializers (UCX/NVLink), but pickles a NamedTuple whole, through the host."""
    return tuple(csr)


def as_csr(value: CSR | tuple) -> CSR:
    """A stored CSR (:func:`stored`) as a :class:`CSR` again."""
    return value if isinstance(value, CSR) else CSR(*value)


def empty(xp: Any, low: int = 0) -> CSR:
    """A CSR of no edges and no sources, at ``low``."""
    return CSR(xp.zeros(0, dtype=xp.int32), xp.zeros(1, dtype=xp.int64), low)


def from_sorted(src: Any, dst: Any, low: int, high: int) -> CSR:
    """The CSR over ``[low, high)`` of edges sorted by (src, dst) whose sources lie there."""
    xp = array_module(src)
    offsets = xp.searchsorted(src, xp.arange(low, high + 1, dtype=src.dtype))
    return CSR(dst.astype(xp.int32), offsets.astype(xp.int64, copy=False), low)


def from_keys(keys: Any, vertices: int, low: int, high: int, unique: bool = False) -> CSR:
    """The CSR over ``[low, high)`` of oriented packed keys ``(src << bits) | dst``, any order
    (the sort of a receiving partition); ``unique``: the keys may repeat, and each edge is
    kept once."""
    keys = sorted_unique(keys) if unique else sort_keys(keys)
    src, dst = unpack_keys(keys, checked_key_bits(vertices))
    del keys
    return from_sorted(src, dst, low, high)


def degrees(csr: CSR) -> Any:
    """Out-degree of each source of the range."""
    return csr.offsets[1:] - csr.offsets[:-1]


def edge_degrees(part: CSR | tuple, vertices: int) -> Any:
    """How many edges of a partition each rank ``0 .. vertices - 1`` has, at either end
    (int64): its list's length where it is a source, plus how often it is a target."""
    csr = as_csr(part)
    xp = array_module(csr.offsets)
    counts = id_counts(csr.dst.astype(xp.int64), vertices)
    counts[csr.low: csr.high] += degrees(csr)
    return counts


def sources(csr: CSR, first: int = 0, last: int | None = None) -> Any:
    """The source (rank) of each edge ``first .. last - 1`` (default: all), int64."""
    xp = array_module(csr.offsets)
    last = csr.edges if last is None else last
    if first == 0 and last == csr.edges and not is_device_object(csr.offsets):
        # NumPy repeats by an array of counts; CuPy's repeat takes no array
        return xp.repeat(xp.arange(csr.low, csr.high, dtype=xp.int64), degrees(csr))
    rows = xp.arange(first, last, dtype=xp.int64)
    return xp.searchsorted(csr.offsets, rows, side="right") - 1 + csr.low


def edge_window(csr: CSR, first: int, last: int) -> tuple[Any, Any]:
    """``(src, dst)`` of edges ``first .. last - 1`` as int64 arrays (a wedge batch's rows)."""
    xp = array_module(csr.offsets)
    return sources(csr, first, last), csr.dst[first:last].astype(xp.int64)


def keys_of(csr: CSR, bits: int) -> Any:
    """Packed keys ``(src << bits) | dst`` of every edge, ascending."""
    return pack_edges(sources(csr), csr.dst, bits, copy=False)


def rows_of(csr: CSR, low: int, high: int) -> CSR:
    """The sub-CSR of the sources ``[low, high)`` (clipped to the CSR's range), with arrays of
    its own: a piece that is stored, sent or spilled must not keep its whole partition alive
    (Dask would count only the piece's bytes)."""
    low, high = max(low, csr.low), min(max(high, low), csr.high)
    if high <= low:
        return empty(array_module(csr.offsets), low)
    offsets = csr.offsets[low - csr.low: high - csr.low + 1]
    first, last = int(offsets[0]), int(offsets[-1])
    return CSR(csr.dst[first:last].copy(), offsets - first, low)


def row_range(csr: CSR, first: int, last: int) -> CSR:
    """The CSR of rows ``[first, last)``, which start and end at list boundaries, as views of
    ``csr`` (positions in it are positions in the range plus ``first``)."""
    xp = array_module(csr.offsets)
    rows = xp.asarray([first, last], dtype=xp.int64)  # CuPy searches arrays only
    low = int(xp.searchsorted(csr.offsets, rows[:1], side="right")[0]) - 1
    high = max(int(xp.searchsorted(csr.offsets, rows[1:], side="left")[0]), low)
    return CSR(csr.dst[first:last], csr.offsets[low: high + 1] - first, csr.low + low)


def list_cuts(csr: CSR, first: int, last: int, most: int) -> list[int]:
    """Edge positions ``first = c0 < c1 < ... = last`` at list starts of ``csr`` cutting the
    edges ``[first, last)`` (whole lists) into spans of about ``most`` edges: each cut is
    the last list start at or before its mark, so a span is longer only by a list that
    crosses it."""
    if last - first <= most:
        return [first, last]
    xp = array_module(csr.offsets)
    marks = xp.arange(first + most, last, most, dtype=xp.int64)
    at = xp.searchsorted(csr.offsets, marks, side="right") - 1
    starts = to_host(csr.offsets[at]).tolist()
    return [first, *sorted({c for c in starts if first < c < last}), last]


def joined(low: int, high: int, parts: Sequence[CSR], xp: Any = None) -> CSR:
    """One CSR over ``[low, high)`` from CSRs of disjoint ranges inside it, ascending (gaps
    between them are sources without edges). ``xp``: the array library of the result, when
    ``parts`` may be empty or lie elsewhere (each part is moved there first)."""
    xp = xp or (array_module(parts[0].offsets) if parts else None)
    if xp is None:
        raise ValueError("joined() of no parts needs the array module")
    dst = xp.empty(sum(p.edges for p in parts), dtype=xp.int32)
    degree = xp.zeros(max(high - low, 0), dtype=xp.int64)
    base = 0
    for part in parts:
        if part.high <= part.low:
            continue
        if part.edges:
            dst[base: base + part.edges] = xp.asarray(part.dst)
        offsets = xp.asarray(part.offsets)
        degree[part.low - low: part.high - low] = offsets[1:] - offsets[:-1]
        base += part.edges
    offsets = xp.zeros(degree.shape[0] + 1, dtype=xp.int64)
    xp.cumsum(degree, out=offsets[1:])
    return CSR(dst, offsets, low)


def with_edges(csr: CSR, keep: Any) -> CSR:
    """The CSR of the edges where ``keep`` (a boolean per edge) holds, same range."""
    xp = array_module(csr.offsets)
    kept = xp.zeros(csr.edges + 1, dtype=xp.int64)
    xp.cumsum(keep, out=kept[1:])
    return CSR(csr.dst[keep], kept[csr.offsets], csr.low)


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


def longest_list(summaries: Sequence[PartitionSummary]) -> int:
    """The longest adjacency list over the partitions (0 without edges)."""
    return max((s.max_out_degree for s in summaries if s.edges), default=0)


def wedge_profile(starts: Any, edges: int,
                  points: int = PROFILE_POINTS) -> tuple[int, int, int, list, list]:
    """Wedges, longest list and checkpoints ``(rows, wedges before)`` of sorted edges whose
    adjacency lists start at the ascending rows ``starts`` (the first at 0).

    The checkpoints are list starts: for each of ``points + 1`` evenly spaced rows, the start
    and the end of the list that holds it, and the longest list's start and end. So every
    interval between two checkpoints is either one adjacency list or at most
    ``ceil(edges / points)`` rows, and a list of at least that many rows is an interval of its
    own; a wedge range that the planner places inside intervals needs no other rows.
    Returns ``(wedges, max_out_degree, its list's index, rows, wedges_before)``.
    """
    xp = array_module(starts)
    bounds = xp.concatenate([starts.astype(xp.int64), xp.full(1, edges, dtype=xp.int64)])
    degree = bounds[1:] - bounds[:-1]
    before = xp.concatenate([xp.zeros(1, dtype=xp.int64),
                             xp.cumsum(degree * (degree - 1) // 2, dtype=xp.int64)])
    longest = int(xp.argmax(degree))
    lists = degree.shape[0]
    targets = xp.arange(points + 1, dtype=xp.int64) * edges // points
    holding = xp.searchsorted(bounds, targets, side="right") - 1  # list that holds each row
    picked = sorted_unique(xp.concatenate([
        holding, xp.minimum(holding + 1, lists),
        xp.asarray([0, lists, longest, longest + 1], dtype=holding.dtype)]))
    return (int(before[-1]), int(degree[longest]), longest, bounds[picked].tolist(),
            before[picked].tolist())


HOST_SUMMARY_ROWS = 1 << 16
"""A partition of at most this many sources is measured on the host: one copy of its offsets
(512 KiB at most) costs less than the twenty-odd device calls and waits of
:func:`wedge_profile` on the device, which are a large part of a small graph's prepare."""


def summary(csr: CSR) -> PartitionSummary:
    """Edges, wedges, sources, largest target, longest list and wedge profile of a partition."""
    if csr.edges == 0:
        return PartitionSummary(0, 0, -1, -1, -1)
    largest_target = int(csr.dst.max())
    offsets = csr.offsets
    if offsets.shape[0] <= HOST_SUMMARY_ROWS + 1:
        offsets = to_host(offsets)
    xp = array_module(offsets)
    filled = xp.flatnonzero(offsets[1:] - offsets[:-1])  # sources with a list, ascending
    wedges, max_out_degree, longest, rows, before = wedge_profile(offsets[filled], csr.edges)
    first, last = int(filled[0]), int(filled[-1])
    return PartitionSummary(csr.edges, wedges, csr.low + first, csr.low + last,
                            largest_target, max_out_degree, csr.low + int(filled[longest]),
                            tuple(rows), tuple(before))


def stored_summary(part: tuple) -> PartitionSummary:
    """The planner's summary of one stored partition (:func:`stored`)."""
    return summary(as_csr(part))

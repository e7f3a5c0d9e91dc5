"""The bytes model of the preparation: what the busiest worker receives in each of its stages.

The preparation (:mod:`dtri.prepared.distributed`) moves two kinds of data between workers:

* vertex-wide arrays, summed or merged by trees (:meth:`dtri.runtime.tasks.Tasks.reduce_over`)
  and then read by every worker that holds a sender: the vertex set (marks, one byte per id up
  to the largest, or ascending int64 ids), and arrays of one entry per vertex: degrees, ranks
  and out-degrees as int32 where they fit (``4 n`` bytes; :func:`dtri.kernels.counting.
  narrow_counts`), the fused join's work as float32 (``4 n``);
* the edges, once, in the sort's exchange: each sender's oriented int64 keys, cut by source
  range, piece ``j`` to the owner of sorted partition ``j``.

:func:`moved_prepare` replays the stages' tasks on a model of the workers and returns, per
stage, the most one worker receives, as :func:`dtri.analytics.cannon.moved_1d` does for the
count's. It places each task by the rules the task builder uses: a tree's task where most of
its inputs are (:func:`dtri.runtime.tasks.gathering_worker`), each leaf and split where its
sender's keys are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from dtri.kernels.canonicalize import MARKS_BYTES_PER_ID, dense_range
from dtri.kernels.counting import INT32_MAX
from dtri.runtime.tasks import gathering_worker, joined_slices, partition_owner

BYTES_PER_VERTEX = 8
"""A vertex-wide int64 count or rank."""
BYTES_PER_NARROW_VERTEX = 4
"""A vertex-wide count, rank or out-degree as the trees send it where it fits (int32), or
the fused join's work (float32)."""
BYTES_PER_KEY = 8
"""A packed edge key in the sort's pieces: int64."""
BYTES_PER_INPUT_ROW = 16
"""An input row: ``src`` and ``dst``, int64 each (the one-task path's inputs)."""
PREPARE_STAGES = ("vertices", "canonicalize", "rank", "orient", "sort", "degree", "plan")
"""The stages the model predicts, in the order they run (the one-task path: ``prepare``)."""


def key_bytes(rows: list[int] | None) -> list[int] | None:
    """The bytes of keys of items of ``rows`` keys each (``None``: not known), as the folds'
    cuts take them (:meth:`dtri.runtime.tasks.Tasks.reduce_over`)."""
    return None if rows is None else [r * BYTES_PER_KEY for r in rows]


@dataclass(frozen=True)
class PreparationShape:
    """What the model needs of a preparation, known once it has run (on the client, without
    reading the workers' data)."""

    workers: int
    """Workers of the run; sorted partition ``p`` is owned by worker
    :func:`~dtri.runtime.tasks.partition_owner` ``(p, workers)``."""
    sender_rows: tuple[int, ...]
    """Input rows of each sender (a group of input partitions on one worker); on the one-task
    path, of each input partition."""
    sender_holders: tuple[int, ...]
    """The worker (index) holding each sender; -1 where unknown."""
    fan_in: int
    """Fan-in of the trees over vertex-wide arrays."""
    folds_per_worker: bool
    """Whether a tree's leaves fold per worker (one leaf a worker) or stay one per item
    (:attr:`dtri.runtime.staging.Staging.folds_per_worker`)."""
    work_model: str
    """``intersect``: the work is a tree of its own; ``wedges``: one task on the out-degrees."""
    largest_id: int
    """The largest input vertex id (what a vertex set's marks cost)."""
    one_task: bool = False
    """The whole graph prepared by one task (``prepare``): only its inputs move."""
    sample_stride: int = 0
    """The stride of the keys' sample that the sort's ranges were cut from, in one task
    (:func:`dtri.prepared.distributed.sampled_bounds`); 0: from every key, by trees."""
    orientation: str = "degree"
    """``degree``: the degrees are summed by an all-reduce and every holder ranks its own
    (:func:`dtri.prepared.distributed.ranked_by`); else a tree, and the ranks spread."""
    wire: WireFactors = field(default_factory=lambda: WireFactors())
    """What the run's wire format makes of each payload (:class:`WireFactors`)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


PerSlice = float | tuple[float, ...] | None
"""A payload's bytes per vertex of a slice: one figure for every slice, one per slice, or
``None`` (as ``raw`` sends it)."""


def slice_factor(factor: PerSlice, k: int, default: float) -> float:
    """The bytes per vertex of slice ``k`` that ``factor`` gives (``default`` where none)."""
    if factor is None:
        return default
    if isinstance(factor, tuple):
        return factor[k] if k < len(factor) else sum(factor) / max(len(factor), 1)
    return factor


@dataclass(frozen=True)
class WireFactors:
    """The bytes each kind of payload of the preparation costs on the wire, in the run's wire
    format (:mod:`dtri.kernels.wire`), measured at the plan stage on the graph's own data
    where it lies (:func:`count_factors`, :func:`piece_factors`). ``None`` (the defaults):
    as the ``raw`` format sends it."""

    count: float | None = None
    """Per vertex of a slice of one worker's degree counts, as the all-reduce scatters
    them; ``raw``: int32 where the counts fit, else int64."""
    count_total: float | None = None
    """Per vertex of a slice of the summed degree counts, as the all-reduce gathers them."""
    out: PerSlice = None
    """Per vertex of a slice of one worker's out-degree counts: one figure, or one per
    slice of the reduce-scatter (a slice of high ranks holds larger counts, which pack
    worse: R-MAT 18's last of five slices of work took twice the bytes of the middle one)."""
    out_total: PerSlice = None
    """Per vertex of a slice of the summed out-degrees (as :attr:`out`)."""
    work: PerSlice = None
    """Per vertex of a slice of one worker's join work (whole steps; ``raw``: int64)."""
    work_total: PerSlice = None
    """Per vertex of a slice of the summed join work."""
    sender_set: int | None = None
    """A sender's vertex set (``raw``: :func:`vertex_set_bytes`)."""
    merged_set: int | None = None
    """The merged vertex set."""
    keys: tuple[float, ...] = ()
    """Per sorted partition, per edge of a piece of the sort's exchange bound for it
    (``raw``, or empty: an int64 key)."""
    sample: float = BYTES_PER_KEY
    """Per key of a sender's sample."""
    header: int = 0
    """A packed value's own bytes beyond its payloads (its tags, as Dask sizes them)."""


def thinned(counts: Any, share: float, seed: int = 0) -> Any:
    """Counts as one of several holders of randomly spread edges holds them: each of a
    count's units kept with probability ``share`` (a binomial draw, seeded)."""
    import numpy as np

    from dtri.kernels.dispatch import to_host

    host = to_host(counts).astype(np.int64)
    return np.random.default_rng(seed).binomial(host, min(max(share, 0.0), 1.0))


def count_factors(degree_sums: list[Any], vertex_set: Any, holders: int, senders: int,
                  fmt: str) -> tuple[float, float, int, int, int]:
    """The degree and vertex-set factors of :class:`WireFactors` (a task where the first
    sender is), measured by packing in the wire format ``fmt``: the summed degrees, whole
    and thinned as one of ``holders`` workers holds them (a binomial draw of each vertex's
    edges); the merged vertex set, and the set of the vertices one of ``senders`` senders
    sees (those that keep an edge once thinned). Returns ``count, count_total, sender_set,
    merged_set, header``."""
    import numpy as np
    from dask.sizeof import sizeof

    from dtri.kernels.canonicalize import is_marks, vertex_ids
    from dtri.kernels.counting import narrow_counts
    from dtri.kernels.dispatch import to_host
    from dtri.kernels.wire import pack_counts, pack_vertex_set, packed_bytes, unpack

    total = to_host(joined_slices(*degree_sums)).astype(np.int64)
    n = max(int(total.shape[0]), 1)
    most = int(total.max()) if total.shape[0] else 0

    def per_vertex(counts: Any) -> float:
        return packed_bytes(pack_counts(narrow_counts(counts, most), fmt)) / n

    mine = thinned(total, 1 / max(holders, 1))
    vertices = to_host(unpack(vertex_set))
    ids = to_host(vertex_ids(vertices))
    kept = ids[thinned(total, 1 / max(senders, 1), seed=2) > 0]
    if is_marks(vertices):  # marks up to the largest id, as the sender's set is held
        seen = np.zeros(vertices.shape[0], dtype=bool)
        seen[kept] = True
    else:
        seen = kept
    merged = pack_vertex_set(vertices, fmt)
    header = sizeof(merged) - packed_bytes(merged)
    return (per_vertex(mine), per_vertex(total), packed_bytes(pack_vertex_set(seen, fmt)),
            packed_bytes(merged), int(header))


def piece_factors(part: Any, vertices: int, senders: int, holders: int, stride: int,
                  on_gpu: bool, fmt: str, slices: int = 1,
                  ) -> tuple[float, float, int, int, int, int, int, tuple]:
    """What the wire format ``fmt`` makes of this sorted partition's own payloads (a task
    where the partition is, so nothing moves): the bytes per edge of a piece of the sort's
    exchange bound for it (its keys thinned to every ``senders``-th, as one of that many
    senders holds them); per key of a sender's sample (thinned ``stride`` times more); and
    its sources' out-degrees packed as counts, thinned as one of ``holders`` workers holds
    them and whole, and as the join's work (the out-degrees times
    :func:`~dtri.kernels.orient.join_edge_cost`), with the sources they cover. Returns
    ``key, sample, out, out_total, work, work_total, sources`` (the last five in bytes and
    sources, for :class:`WireFactors` to divide once summed over the partitions), then the
    same five for each of the reduce-scatter's ``slices`` vertex ranges that the partition's
    sources meet, as ``(slice, out, out_total, work, work_total, sources)``."""
    from dtri.kernels.bins import checked_key_bits
    from dtri.kernels.csr import as_csr, degrees, keys_of
    from dtri.kernels.dispatch import to_host
    from dtri.kernels.orient import join_edge_cost
    from dtri.kernels.wire import pack_ascending, pack_counts, pack_sorted_keys, packed_bytes

    csr = as_csr(part)
    bits = checked_key_bits(vertices)
    keys = keys_of(csr, bits)
    piece = keys[::max(senders, 1)]
    sample = keys[::max(senders, 1) * max(stride, 1)]
    out = to_host(degrees(csr)).astype("int64")
    mine = thinned(out, 1 / max(holders, 1), seed=4)
    cost = max(1, int(-(-join_edge_cost(on_gpu, vertices) // 1)))

    def size(counts: Any) -> int:
        return packed_bytes(pack_counts(counts.astype("int32"), fmt))

    per_slice = []
    for k in range(max(slices, 1)):  # the slices' ranges, as the scatter cuts them
        start = max(vertices * k // slices - csr.low, 0)
        stop = min(vertices * (k + 1) // slices - csr.low, int(out.shape[0]))
        if stop > start:
            a, b = mine[start:stop], out[start:stop]
            per_slice.append((k, size(a), size(b), size(a * cost), size(b * cost),
                              stop - start))
    return (packed_bytes(pack_sorted_keys(piece, bits, csr.low, csr.high, fmt))
            / max(int(piece.shape[0]), 1),
            packed_bytes(pack_ascending(sample, fmt)) / max(int(sample.shape[0]), 1),
            size(mine), size(out), size(mine * cost), size(out * cost), int(out.shape[0]),
            tuple(per_slice))


def slice_factors(packed: Any, holders: int, fmt: str) -> tuple[int, int, int]:
    """What the wire format ``fmt`` makes of one slice-sum of the join's work (a task where it
    lies): its bytes whole and thinned as one of ``holders`` workers holds its units (a
    binomial draw of each source's steps), and its sources. The work of an edge reads both
    its ends' out-degrees, so its slices of high ranks pack worse than the out-degrees
    would say (R-MAT 18 on 9 workers: a holder's last of five slices took 74 kB)."""
    from dtri.kernels.dispatch import to_host
    from dtri.kernels.wire import pack_counts, packed_bytes, unpack

    whole = to_host(unpack(packed))
    return (packed_bytes(pack_counts(whole, fmt)),
            packed_bytes(pack_counts(thinned(whole, 1 / max(holders, 1), seed=6), fmt)),
            int(whole.shape[0]))


def per_slice_factors(pieces: Sequence[tuple], slices: int, sources: int,
                      ) -> tuple[tuple[float, ...], ...]:
    """The out-degrees' and the work's factors (:attr:`WireFactors.out`, ``out_total``,
    ``work``, ``work_total``), one per slice of ``slices``, from every sorted partition's
    :func:`piece_factors` (``pieces``): each slice's bytes over its sources, summed over the
    partitions that meet it; a slice that none meets takes the whole graph's figure."""
    bytes_in = [[0] * 4 for _ in range(max(slices, 1))]
    sources_in = [0] * max(slices, 1)
    for piece in pieces:
        for k, *sizes, count in piece[7]:
            for i, size in enumerate(sizes):
                bytes_in[k][i] += size
            sources_in[k] += count
    whole = [sum(piece[i] for piece in pieces) / max(sources, 1) for i in (2, 3, 4, 5)]
    return tuple(tuple(bytes_in[k][i] / sources_in[k] if sources_in[k] else whole[i]
                       for k in range(len(sources_in))) for i in range(4))


class Flow:
    """Workers as the model sees them: what each received, per stage."""

    def __init__(self, workers: int):
        self.workers = workers
        self.received: dict[str, list[int]] = {}

    def receive(self, stage: str, worker: int, nbytes: int) -> None:
        self.received.setdefault(stage, [0] * self.workers)[worker] += nbytes

    def place(self, inputs: Sequence[tuple[int, int]]) -> int:
        """The worker a task of ``inputs`` (worker, bytes) runs on: most input bytes there,
        then the first."""
        local = [0] * self.workers
        for worker, nbytes in inputs:
            local[worker] += nbytes
        return min(range(self.workers), key=lambda w: (-local[w], w))

    def tree(self, stage: str, leaves: Sequence[tuple[int, int]], out: int,
             fan_in: int) -> int:
        """A tree of fan-in ``fan_in`` over ``leaves`` (worker, bytes) whose every task makes
        ``out`` bytes (as :meth:`dtri.runtime.tasks.Tasks.tree` groups them: consecutive
        items, level by level); each task receives its inputs held elsewhere. Returns the
        root's worker."""
        items, level = list(leaves), 0
        while len(items) > 1 or level == 0:
            placed = []
            for i in range(0, max(len(items), 1), fan_in):
                group = items[i: i + fan_in]
                worker = gathering_worker([source for source, _ in group])
                assert worker is not None  # every leaf has its worker
                for source, nbytes in group:
                    if source != worker:
                        self.receive(stage, worker, nbytes)
                placed.append((worker, out))
            items, level = placed, level + 1
        return items[0][0]

    def spread(self, stage: str, holder: int, nbytes: int, readers: set[int]) -> None:
        """An array of ``nbytes`` on ``holder`` read by tasks on ``readers``: one copy to each
        reader that is not its holder."""
        for worker in readers - {holder}:
            self.receive(stage, worker, nbytes)

    def scatter(self, stage: str, holders: Sequence[int], vertices: int,
                per_vertex: tuple[PerSlice, PerSlice], header: int) -> list[int]:
        """A vertex-wide sum by :meth:`dtri.runtime.tasks.Tasks.reduce_scatter` over items
        held by ``holders``: each holding worker sends slice ``k`` of its sum to the ``k``-th
        of them (a vertex of a slice costs ``per_vertex[0]``, with ``header`` a slice).
        Returns the workers that hold the slice-sums, in order (one: the whole sum)."""
        owners = list(dict.fromkeys(holders))
        if len(owners) < 2:
            return owners
        for k, owner in enumerate(owners):
            part = slice_factor(per_vertex[0], k, BYTES_PER_NARROW_VERTEX)
            for other in owners:
                if other != owner:
                    self.receive(stage, owner, int(part * slice_length(vertices, k,
                                                                       len(owners))) + header)
        return owners

    def gather(self, stage: str, owners: Sequence[int], vertices: int,
               per_vertex: tuple[PerSlice, PerSlice], header: int,
               readers: set[int]) -> None:
        """Each reader takes every slice-sum that ``owners`` hold (:meth:`scatter`) but its
        own (a vertex costs ``per_vertex[1]``, with ``header`` a slice)."""
        for reader in readers:
            for k, owner in enumerate(owners):
                whole = slice_factor(per_vertex[1], k, BYTES_PER_NARROW_VERTEX)
                if owner != reader:
                    self.receive(stage, reader, int(whole * slice_length(
                        vertices, k, len(owners))) + header)

    def busiest(self) -> dict[str, int]:
        """Per stage, the most one worker received."""
        return {stage: max(values) for stage, values in self.received.items()}


def slice_length(vertices: int, k: int, slices: int) -> int:
    """The vertices of slice ``k`` of ``slices`` (:func:`dtri.runtime.tasks.vertex_slices`)."""
    return vertices * (k + 1) // slices - vertices * k // slices


def vertex_set_bytes(largest: int, rows: int, vertices: int) -> int:
    """A vertex set of ``rows`` edges' ids (:func:`dtri.kernels.canonicalize.partition_vertices`):
    marks, one byte per id up to ``largest``, where that is at most
    :data:`~dtri.kernels.canonicalize.MARKS_BYTES_PER_ID` bytes per id read; else its
    distinct ids, int64, taken as the fewer of the graph's vertices and the ids read."""
    if dense_range(largest, 2 * rows, MARKS_BYTES_PER_ID):
        return largest + 1
    return BYTES_PER_VERTEX * min(vertices, 2 * rows)


def leaves_of(items: Sequence[tuple[int, int]], folds: bool) -> list[tuple[int, int]]:
    """A tree's leaves from its items (worker, bytes): one per item, or, folded, one per
    worker holding items (in the order the workers first appear), of the largest item's
    bytes (a sum or union is as wide as its widest part)."""
    if not folds:
        return list(items)
    widest: dict[int, int] = {}
    for worker, nbytes in items:
        widest[worker] = max(widest.get(worker, 0), nbytes)
    return list(widest.items())


def moved_prepare(shape: PreparationShape, partition_edges: Sequence[int],
                  vertices: int) -> dict[str, int]:
    """Predicted bytes the busiest worker receives in each stage of the preparation (see the
    module docstring), for a graph of ``vertices`` vertices whose sorted partitions hold
    ``partition_edges`` edges. Every payload is as the run's wire format packs it, at the
    bytes per item measured at the plan stage (``shape.wire``: :class:`WireFactors`). The
    terms, stage by stage (``n`` vertices):

    * ``vertices``: the tree over each sender's vertex set;
    * ``canonicalize``: the merged vertex set, one copy to each worker holding a sender;
    * ``rank``: with the degree orientation, the senders' degree counts summed by a
      reduce-scatter (:meth:`Flow.scatter`); else a tree of them, the ranks made at its root
      and spread as int32;
    * ``orient``: the degree slice-sums to every worker holding senders (:meth:`Flow.
      gather`), whose out-degree tasks rank the vertices themselves (on the first, the ids
      and degrees by rank take the same copy); the out-degrees, reduce-scattered and gathered by
      the first sender's worker, with every sender's sample (packed keys, the sort's over
      the stride) where the ranges are cut from one; without a sample, with the fused join's
      work model, the out-degrees to every worker holding senders and the work (float32) to
      the first;
    * ``sort``: the degree slice-sums again to every worker holding senders (its split
      ranks too, once its out-degree tasks have let them go); each sender's keys, taken as
      its input rows times the graph's distinct edges per input row, cut in proportion to
      the sorted partitions' edges, packed; piece ``j`` goes to the owner of partition ``j``
      from every sender elsewhere;
    * ``degree`` (several senders): the sorted partitions' degree counts, reduce-scattered
      and gathered by the owner of partition 0;
    * ``plan``: the partitions' summaries go to the client, not between workers: 0.

    On the one-task path (``shape.one_task``) only ``prepare`` moves: the input partitions
    (16 B a row) not on the worker that holds the most rows. Nothing moves on one worker.
    """
    workers = shape.workers
    stages = ("prepare",) if shape.one_task else PREPARE_STAGES
    if workers <= 1:
        return dict.fromkeys(stages, 0)
    flow = Flow(workers)
    holders = [h if 0 <= h < workers else 0 for h in shape.sender_holders]
    rows = shape.sender_rows
    if shape.one_task:
        worker = flow.place([(h, BYTES_PER_INPUT_ROW * r) for h, r in zip(holders, rows,
                                                                          strict=True)])
        for h, r in zip(holders, rows, strict=True):
            if h != worker:
                flow.receive("prepare", worker, BYTES_PER_INPUT_ROW * r)
        return {"prepare": 0, **flow.busiest()}
    n, fan_in, folds, wire = vertices, shape.fan_in, shape.folds_per_worker, shape.wire
    if wire.count is None:  # raw: int32 where the counts fit
        fits = vertices <= INT32_MAX + 1 and max(rows, default=0) <= INT32_MAX
        each = BYTES_PER_NARROW_VERTEX if fits else BYTES_PER_VERTEX
        wire = replace(wire, count=each, count_total=each, out=each, out_total=each,
                       work=BYTES_PER_VERTEX, work_total=BYTES_PER_VERTEX)
    readers = set(holders)
    first = holders[0]
    total_rows = max(sum(rows), 1)
    distinct = sum(partition_edges)

    def packed(size: float) -> int:
        return int(size) + wire.header

    merged = (vertex_set_bytes(shape.largest_id, sum(rows), n) if wire.merged_set is None
              else packed(wire.merged_set))
    sets = [(h, vertex_set_bytes(shape.largest_id, r, n) if wire.sender_set is None
             else packed(wire.sender_set)) for h, r in zip(holders, rows, strict=True)]
    where = flow.tree("vertices", leaves_of(sets, folds), merged, fan_in)
    flow.spread("canonicalize", where, merged, readers)

    counts = packed((wire.count_total or BYTES_PER_NARROW_VERTEX) * n)  # a sum sent whole
    degrees = (wire.count, wire.count_total)
    outs = (wire.out, wire.out_total)
    works = (wire.work, wire.work_total)
    if shape.orientation == "degree":  # the degree sums' slices, ranked by every reader
        owners = flow.scatter("rank", holders, n, degrees, wire.header)
        # every holder's out-degree tasks, and on the first the ids and degrees by rank,
        # which take the slice-sums when its out-degree tasks do: one fetch, filed under
        # whichever stage asked first (orient, as measured)
        flow.gather("orient", owners, n, degrees, wire.header, readers)
    else:  # a tree, the ranks made at its root beside the ids, and spread as they are
        ranked = flow.tree("rank", leaves_of([(h, counts) for h in holders], folds), counts,
                           fan_in)
        if ranked != where:
            flow.spread("rank", where, merged, {ranked})
        flow.spread("orient", ranked, BYTES_PER_NARROW_VERTEX * n, readers)
    if shape.sample_stride:  # the out-degrees and every sender's sample to one task
        if shape.work_model != "edges":
            owners = flow.scatter("orient", holders, n, outs, wire.header)
            flow.gather("orient", owners, n, outs, wire.header, {first})
        for h, r in zip(holders, rows, strict=True):
            if h != first:
                flow.receive("orient", first, packed(wire.sample * (r * distinct // total_rows)
                                                     / shape.sample_stride))
    elif shape.work_model == "intersect":  # out-degrees to every holder, work to one
        owners = flow.scatter("orient", holders, n, outs, wire.header)
        flow.gather("orient", owners, n, outs, wire.header, readers)
        owners = flow.scatter("orient", holders, n, works, wire.header)
        flow.gather("orient", owners, n, works, wire.header, {first})
    else:
        owners = flow.scatter("orient", holders, n, outs, wire.header)
        flow.gather("orient", owners, n, outs, wire.header, {first})
    if shape.orientation == "degree":  # the splits rank again: the slices, again
        flow.gather("sort", list(dict.fromkeys(holders)), n, degrees, wire.header, readers)

    for j, edges in enumerate(partition_edges):
        owner = partition_owner(j, workers)
        key = wire.keys[j] if wire.keys else BYTES_PER_KEY
        for h, r in zip(holders, rows, strict=True):
            if h != owner:  # its keys, r·m/R, times this partition's share, edges/m
                flow.receive("sort", owner, packed(key * r * edges / total_rows))

    if len(rows) > 1:
        owned = [partition_owner(j, workers) for j in range(len(partition_edges))]
        flow.gather("degree", flow.scatter("degree", owned, n, degrees, wire.header), n,
                    degrees, wire.header, {owned[0]})
    return {**dict.fromkeys(stages, 0), **flow.busiest()}

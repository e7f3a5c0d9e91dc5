"""Canonicalize → rank → orient → sort across partitions, joined by one exchange of edges.

The docstrings of :mod:`dtri.kernels.canonicalize`, :mod:`dtri.kernels.orient` and
:mod:`dtri.kernels.csr` explain the steps, and ``docs/design.md`` ("The preparation") the
stages; here they are tasks. Each sender, a group of input partitions taken together where
it lives (:func:`dtri.prepared.inputs.input_groups`), keeps its canonical keys there
(:class:`CanonicalKeys`); the ranks, out-degrees and work are vertex-wide trees over those
keys (:meth:`dtri.runtime.tasks.Tasks.reduce_over`), and the edges cross the workers once, in
the sort's exchange, by source range: an edge held by several senders is oriented alike by
each, so its copies meet at one receiver, which keeps it once. Until then it counts once per
sender in the degrees, which only moves some vertices in the order (any total order counts
every triangle once); where senders may share edges, the degrees the analytics read are
counted again from the sorted partitions (:func:`count_degrees`).
"""

from __future__ import annotations

from operator import getitem
from typing import Any, NamedTuple

import dask

from dtri.kernels.bins import checked_key_bits
from dtri.kernels.canonicalize import (
    canonical_keys,
    ids_by_rank,
    merge_vertices,
    partition_vertices,
    vertex_count,
)
from dtri.kernels.counting import add_counts, narrow_counts, wide_counts
from dtri.kernels.csr import as_csr, edge_degrees, from_keys, keys_of, stored
from dtri.kernels.dispatch import array_module, is_device_object, sort_keys, to_host
from dtri.kernels.orient import (
    PEEL_ROUNDS,
    WORK_MODELS,
    adirection_epsilon,
    by_rank,
    degree_counts,
    edge_work,
    orient_keys,
    orientation_reason,
    oriented_intersection_work,
    oriented_out_degree,
    oriented_split,
    peel_round,
    rank_and_order,
    remaining_counts,
    source_bounds,
    wedge_work,
)
from dtri.kernels.wire import pack_ascending, pack_sorted_keys, unpack, unpack_sorted_keys
from dtri.prepared.inputs import Inputs, concat_frames, input_copies
from dtri.prepared.moved import BYTES_PER_INPUT_ROW, key_bytes
from dtri.runtime.tasks import FAN_IN, PackedResult, Tasks, joined_slices, placed_on
from dtri.runtime.timer import StageTimer


class Prepared(NamedTuple):
    """What the preparation leaves on the workers (persisted: futures, or values under a local
    scheduler)."""

    parts: list[Any]
    """Sorted partition ``j`` as a stored CSR over the ranks ``[bounds[j], bounds[j + 1])``."""
    vertices: Any
    """The number of vertices."""
    ids: Any
    """The input id of every rank (vertex-wide)."""
    degree: Any
    """The degree of every rank (vertex-wide); ``None`` where the senders may have shared
    edges: :func:`count_degrees` counts it from the sorted partitions."""
    bounds: Any
    """The rank ranges of the partitions: ``parts + 1`` ascending ranks from 0 to the vertex
    count."""
    orientation: str = "degree"
    """The orientation used (``auto`` resolved)."""
    reason: str = ""
    """One line on why (:func:`dtri.kernels.orient.orientation_reason`)."""
    rounds: int | None = None
    """The adirection peeling's rounds (``None`` without one)."""
    sample_stride: int = 0
    """The stride of the keys' sample that the sort's ranges were cut from (0: every key;
    :func:`sample_stride`)."""
    degree_sum: list[Any] | None = None
    """The senders' degree counts summed, by dense id, as slices (an edge that several
    senders hold counts once for each): what the bytes model measures the wire format's
    counts on (:func:`dtri.prepared.moved.count_factors`); ``None`` where not kept."""
    vertex_set: Any = None
    """The merged vertex set as it crossed (packed), for the same."""
    first_holder: str | None = None
    """The worker holding the first sender."""
    work_sum: list[Any] | None = None
    """The join's work by source rank, as the reduce-scatter's packed slices, where the
    senders summed it (the ``intersect`` work model): what the bytes model measures the
    work's packing on, slice by slice (:func:`dtri.prepared.moved.slice_factors`)."""


class CanonicalKeys(NamedTuple):
    """Canonical edge keys as the rank, orient and sort stages take them (persisted)."""

    parts: list[Any]
    """Distinct packed keys ``(low << bits) | high`` of each sender, ascending."""
    holders: list[str | None]
    """The worker holding each (``None`` where unknown: no cluster)."""
    overlapping: bool
    """Whether two senders may hold the same edge (several input groups): the sort's
    receivers then keep each edge once, and the degrees are counted again after it."""
    rows: list[int] | None = None
    """Each sender's rows, at least its keys (``None``: not known)."""
    samples: list[Any] | None = None
    """Every ``stride``-th key of each sender (:func:`key_sample`), taken as the keys were
    made, from which the sort's ranges are cut (:func:`sample_stride`); ``None``: from every
    key."""
    stride: int = 0
    """The samples' stride (0 without them)."""

    @property
    def sizes(self) -> list[int] | None:
        """Each sender's bytes of keys at most, for the folds' cuts
        (:meth:`dtri.runtime.tasks.Tasks.reduce_over`)."""
        return key_bytes(self.rows)


def sorted_partition(vertices: int, bounds: list[int], unique: bool, j: int,
                     *pieces: Any) -> tuple:
    """Receiver ``j`` of the sort: its source range's oriented keys as a stored CSR, each edge
    once where the pieces may repeat one (``unique``)."""
    bits = checked_key_bits(vertices)
    keys = concatenated([unpack_sorted_keys(piece, bits, bounds[j]) for piece in pieces])
    return stored(from_keys(keys, vertices, bounds[j], bounds[j + 1], unique))


def concatenated(arrays: list[Any]) -> Any:
    """Arrays end to end."""
    return array_module(arrays[0]).concatenate(arrays)


def packed_split(keys: Any, rank: Any | None, bounds: list[int], vertices: int,
                 fmt: str) -> dict[int, Any]:
    """A sender's canonical keys oriented and cut by source range, piece ``j`` for receiver
    ``j``, packed in the wire format ``fmt`` (:func:`~dtri.kernels.wire.pack_sorted_keys`):
    sorted once, so that each piece is a run of whole adjacency lists, a degree per source
    and its targets as gaps. ``raw``: the keys of each piece as they are."""
    rank = resolved_rank(rank, keys)
    if fmt == "raw":
        return oriented_split(keys, rank, bounds, vertices)
    bits = checked_key_bits(vertices)
    oriented = sort_keys(orient_keys(keys, rank, vertices))
    xp = array_module(oriented)
    cuts = xp.searchsorted(oriented, xp.asarray([b << bits for b in bounds], dtype=xp.int64))
    cuts = [int(c) for c in to_host(cuts)]
    return {j: pack_sorted_keys(oriented[cuts[j]: cuts[j + 1]], bits, bounds[j], bounds[j + 1],
                                fmt) for j in range(len(bounds) - 1)}


def sort_balance(join: str, one_at_a_time: bool) -> str:
    """What the sort's source ranges balance (one of :data:`dtri.kernels.orient.WORK_MODELS`)
    for a count by the ``join`` asked for. ``join="wedges"``: edges and wedges, what that
    join writes. Else, where several join tasks run at once, the ``intersect`` model, the
    fused join's own work, so that they end together (edges or wedges alone left four ranges
    of R-MAT 26 1.7-1.9x apart on one H200). Where one task runs at a time
    (``one_at_a_time``), the ranges take turns whatever work they hold, so they balance their
    edges: each partition then holds its share of the bytes that the partition count was
    fitted to."""
    return "wedges" if join == "wedges" else "edges" if one_at_a_time else "intersect"


SAMPLES_PER_PART = 4096
"""The fewest sampled keys per sorted partition for which the sort's ranges are cut from a
sample (:func:`sample_stride`): a range's share is then within a few percent."""

SAMPLED_WORK_MODELS = ("edges", "intersect")
"""The work models whose ranges are cut from a sample of the keys (:func:`sample_stride`)."""


def sample_stride(work_model: str, rows: int, parts: int) -> int:
    """The stride of the keys' sample from which the sort's ranges are cut, or 0 for every
    key. The keys are sampled as they are made (every ``dtri.sort-sample-stride``-th of each
    sender), which saves the orient stage a pass over every sender's keys (under a host
    limit, a read back from disk).

    * ``edges`` (one task at a time): the ranges balance the out-degrees of the sampled keys
      alone. The ranges take turns, so a share a percent off costs nothing.
    * ``intersect`` (join tasks at once): the out-degrees are still counted from every key,
      since the work of an edge reads those of both its ends; the work that the ranges share
      is summed over the sampled keys only, which drops the second pass over every key.

    The sort's receivers still take every edge, so no count changes; only the ranges' shares
    move. Not for other work models, nor where the input's ``rows`` give fewer than
    :data:`SAMPLES_PER_PART` samples to each of ``parts`` ranges."""
    stride = int(dask.config.get("dtri.sort-sample-stride"))
    if work_model not in SAMPLED_WORK_MODELS or stride <= 1 \
            or rows // stride < SAMPLES_PER_PART * parts:
        return 0
    return stride


def key_sample(keys: Any, stride: int, fmt: str = "raw") -> Any:
    """Every ``stride``-th of a sender's keys, a copy (not a view that would hold them all),
    packed in the wire format ``fmt`` (ascending: as gaps)."""
    return pack_ascending(keys[::stride].copy(), fmt)


def sender_keys(frame: Any, vertices: Any) -> Any:
    """:func:`~dtri.kernels.canonicalize.canonical_keys` of a sender, by the merged vertex
    set as it crossed (packed)."""
    return canonical_keys(frame, unpack(vertices))


def set_size(vertices: Any) -> int:
    """The vertices of a vertex set as it crossed (packed)."""
    return vertex_count(unpack(vertices))


def ids_of_ranks(vertices: Any, order: Any | None) -> Any:
    """:func:`~dtri.kernels.canonicalize.ids_by_rank` of a vertex set as it crossed."""
    return ids_by_rank(unpack(vertices), order)


def sampled_bounds(rank: Any | None, out_degree: Any | None, vertices: int, parts: int,
                   *samples: Any) -> list[int]:
    """The sort's source bounds cut from the senders' ``samples`` of their canonical keys,
    oriented by ``rank`` (:func:`sample_stride`): by the join's work of the sampled edges
    (:func:`~dtri.kernels.orient.oriented_intersection_work`), whose ``out_degree`` is every
    key's, or where that is ``None`` by the sampled edges alone. One task, which receives a
    stride's share of the keys rather than a vertex-wide array for each sender."""
    keys = concatenated([unpack(sample) for sample in samples])
    rank, out_degree = resolved_rank(rank, keys), resolved_counts(out_degree, keys)
    work = oriented_out_degree(keys, rank, vertices) if out_degree is None else \
        oriented_intersection_work(keys, rank, out_degree, vertices)
    return source_bounds(work, parts)


def prepare_partitions(inputs: Inputs, groups: list[list[int]], parts: int, orientation: str,
                       tasks: Tasks, timer: StageTimer, work_model: str = "wedges",
                       fan_in: int = FAN_IN, epsilon: float | None = None) -> Prepared:
    """Canonicalize, rank, orient and sort the edges of ``inputs`` into ``parts`` sorted
    partitions, each holding one source range's whole adjacency lists, sent from the input
    ``groups`` (:func:`dtri.prepared.inputs.input_groups`). ``work_model`` (one of
    :data:`dtri.kernels.orient.WORK_MODELS`) is what the sort's source ranges balance;
    ``fan_in`` is that of the trees over vertex-wide arrays
    (:func:`dtri.prepared.inputs.vertex_fan_in`). ``orientation`` is one of ``degree``,
    ``id`` and ``adirection``, whose peeling takes ``epsilon`` (default
    :func:`~dtri.kernels.orient.adirection_epsilon`); ``auto`` is decided by the caller from
    the sorted partitions' summaries (:func:`dtri.prepared.graph.prepare_graph`), which may
    direct them again (:func:`directed_again`).

    Every stage is only submitted: the caller lets go of ``inputs`` before it waits, so that
    each input partition is freed once the canonicalize stage has read it."""
    if work_model not in WORK_MODELS:
        raise ValueError(f"work_model must be one of {WORK_MODELS}, got {work_model!r}")
    holders = [inputs.holders[group[0]] for group in groups]
    rows = [sum(inputs.rows[p] for p in group) for group in groups]

    def sent(seed: str) -> list[Any]:
        """The senders, from the input's own copy for the pass ``seed`` where it is read
        again for each pass (:func:`dtri.prepared.inputs.input_copies`)."""
        partitions = input_copies(inputs.partitions, inputs.recomputed, seed)
        senders = []
        for g, (group, holder) in enumerate(zip(groups, holders, strict=True)):
            if inputs.recomputed and len(group) == 1:  # the read task itself: no second key
                senders.append(partitions[group[0]])  # holding the same partition
                continue
            senders.append(tasks.task("canonicalize", concat_frames,
                                      *(partitions[p] for p in group), key=("inputs", g),
                                      on_host=True, at=holder))
        return senders

    senders = sent("vertices")
    fmt = tasks.wire_format  # the sets cross packed: marks as bits, ids as gaps
    vertices = tasks.reduce_over("vertices", PackedResult(partition_vertices, "vertex-set", fmt),
                                 PackedResult(merge_vertices, "vertex-set", fmt), senders, (),
                                 holders, "ids", fan_in,
                                 [r * BYTES_PER_INPUT_ROW for r in rows])
    # handed over before the keys are built on it: a delayed object carries the graph of
    # everything it depends on, and every sender's task would copy the vertex tree's (for
    # the exchange this fed, 29 s of the client's time for 269 senders of RMAT 26). Only the
    # tree: the timer holds what it was handed until the plan stage, and the senders are the
    # input
    (vertices,) = timer.submit("canonicalize", vertices)
    n = tasks.task("vertices", set_size, vertices, key=("count",), on_host=True)
    if inputs.recomputed:  # read again: no sender is held from the vertex sets to the keys
        senders = sent("keys")
    stride = sample_stride(work_model, sum(rows), parts)
    keys, samples = [], []
    for g, (sender, holder) in enumerate(zip(senders, holders, strict=True)):
        keys.append(tasks.task("canonicalize", sender_keys, sender, vertices, key=("keys", g),
                               at=holder))
        if stride:  # while the keys are at hand, packed: they cross to one task
            samples.append(tasks.task("canonicalize", key_sample, keys[-1], stride, fmt,
                                      key=("sample", g), on_host=True, at=holder))
    *done, n = timer.submit("canonicalize", *keys, *samples, n)
    keys, samples = done[:len(keys)], done[len(keys):]
    del senders
    return sorted_by(orientation, CanonicalKeys(keys, holders, len(keys) > 1, rows,
                                                samples or None, stride),
                     vertices, n, parts, tasks, timer, work_model, fan_in, epsilon)


def directed_again(prepared: Prepared, orientation: str, tasks: Tasks, timer: StageTimer,
                   work_model: str = "wedges", fan_in: int = FAN_IN,
                   epsilon: float | None = None, rows: list[int] | None = None) -> Prepared:
    """The edges of ``prepared`` (sorted partitions of any orientation) ranked, oriented and
    sorted again by ``orientation``, from the partitions themselves rather than the input,
    which is not held for this: each partition's edges, as pairs of ranks, are the canonical
    keys of the ranked graph (low rank first), whose vertex ``r`` is input id ``ids[r]``; no
    two partitions share an edge. Timed as the ``redirect`` stage, then the stages of
    :func:`sorted_by`. ``rows``: each partition's edges, where known."""
    n = prepared.vertices
    keys = [tasks.task("redirect", rank_keys, part, n, key=(p,))
            for p, part in enumerate(prepared.parts)]
    keys = list(timer.submit("redirect", *keys))
    owners = [tasks.owner(p) for p in range(len(keys))]
    return sorted_by(orientation, CanonicalKeys(keys, owners, False, rows), prepared.ids, n,
                     len(keys), tasks, timer, work_model, fan_in, epsilon)


def rank_keys(part: tuple, vertices: int) -> Any:
    """A sorted partition's edges as packed keys of their ranks (low rank first)."""
    return keys_of(as_csr(part), checked_key_bits(vertices))


def sorted_by(orientation: str, keys: CanonicalKeys, vertices: Any, n: Any, parts: int,
              tasks: Tasks, timer: StageTimer, work_model: str, fan_in: int,
              epsilon: float | None) -> Prepared:
    """The rank, orient and sort stages over the canonical ``keys`` of a graph of ``n``
    vertices, vertex ``i`` being input id ``vertices[i]``, into ``parts`` sorted partitions.
    Where the keys overlap, the degrees that ranked the vertices counted an edge once for
    every sender that held it, so the degree of every rank is left to :func:`count_degrees`
    (``None``)."""
    rank, ids, degree, rounds, degree_sums = ranked_by(orientation, keys, vertices, n, tasks,
                                                       timer, epsilon, fan_in,
                                                       exact=not keys.overlapping)
    fmt, first = tasks.wire_format, keys.holders[0]
    sample = keys.samples  # taken only for the sampled work models (:func:`sample_stride`)
    # every key's out-degrees, but where the sample's edges alone cut the ranges: the
    # join's work of an edge reads those of both its ends; each task that reads them joins
    # the slices itself
    out_degree: Any = None
    work_sum: list[Any] | None = None
    if sample is None or work_model != "edges":
        out_degree = tasks.reduce_scatter("orient", sender_out_degrees, add_counts,
                                          keys.parts, (rank, n), keys.holders, "out", fmt,
                                          fan_in, keys.sizes)
    if sample is not None:  # the ranges from the senders' samples, in one task
        bounds = tasks.task("orient", sampled_bounds, rank, out_degree, n, parts, *sample,
                            key=("bounds",), at=first)
    else:  # from every key: a sum of each sender's work, or the out-degrees' own
        with placed_on(first):
            if work_model == "intersect":
                work = tasks.reduce_scatter("orient", sender_work, add_counts, keys.parts,
                                            (rank, out_degree, n), keys.holders, "work", fmt,
                                            fan_in, keys.sizes)
                bounds = tasks.task("orient", source_bounds_of, work, parts, key=("bounds",))
                work_sum = work if len(work) > 1 else None
            else:
                work = tasks.task("orient", work_of, work_model, out_degree, key=("work",))
                bounds = tasks.task("orient", source_bounds, work, parts, key=("bounds",))
    (bounds, *kept) = timer.submit("orient", bounds, *(work_sum or ()))
    work_sum = kept or None  # the slices as they were summed, kept for the bytes model
    # each where its keys are (not where the vertex-wide ranks are)
    splits = [tasks.task("sort", packed_split, k, rank, bounds, n, fmt, key=("split", p),
                         at=holder)
              for p, (k, holder) in enumerate(zip(keys.parts, keys.holders, strict=True))]
    overlapping, stride = keys.overlapping, keys.stride
    del keys
    sorted_parts = list(timer.submit("sort", *tasks.exchange(
        "sort", splits, sorted_partition, parts, n, bounds, overlapping, indexed=True)))
    return Prepared(sorted_parts, n, ids, degree, bounds, orientation,
                    orientation_reason(orientation, rounds=rounds), rounds, stride, degree_sums,
                    vertices, first, work_sum)


def count_degrees(parts: list[Any], vertices: Any, tasks: Tasks, timer: StageTimer,
                  fan_in: int = FAN_IN) -> Any:
    """The ``degree`` stage: the degree of every rank (int64, persisted), counted from the
    sorted partitions ``parts`` of a graph of ``vertices`` vertices, which hold each edge
    once, by a sum over the partitions' counts, each leaf on its partition's owner
    (:meth:`~dtri.runtime.tasks.Tasks.reduce_scatter`), joined on the owner of partition
    0."""
    owners = [tasks.owner(p) for p in range(len(parts))]
    sums = tasks.reduce_scatter("degree", partition_degrees, add_counts, parts, (vertices,),
                                owners, "degree", tasks.wire_format, fan_in)
    with tasks.placed(0):
        (degree,) = timer.submit("degree", tasks.task("degree", wide_joined, *sums,
                                                      key=("wide",)))
    return degree


def wide_joined(*sums: Any) -> Any:
    """A sum of counts as int64, from its slices."""
    return wide_counts(joined_slices(*sums))


def ranked_by(orientation: str, keys: CanonicalKeys, vertices: Any, n: Any, tasks: Tasks,
              timer: StageTimer, epsilon: float | None, fan_in: int, exact: bool = True,
              ) -> tuple[Any, Any, Any, int | None, Any]:
    """The ``rank`` stage (and for ``adirection`` the ``direct`` stage before it). Returns
    the rank of every vertex as the tasks that orient edges take it (:func:`resolved_rank`),
    by rank the input id of every vertex and, where the senders share no edge (``exact``),
    its degree (persisted; else ``None``: the degrees summed here count an edge once for
    each sender that holds it), the peeling's rounds (``None`` without one), and the summed
    degree counts by dense id, as slices (what the bytes model measures the wire format on).

    With the degree orientation the senders' degree counts are summed by
    :meth:`~dtri.runtime.tasks.Tasks.reduce_scatter`, and each task that orients edges ranks
    the vertices itself from the packed slices, by (degree, id): every such task ranks
    alike, and no rank array crosses (degrees pack to about a byte, ranks do not)."""
    first = keys.holders[0]
    fmt = tasks.wire_format
    if orientation == "degree":
        sums = tasks.reduce_scatter("rank", sender_degrees, add_counts, keys.parts, (n,),
                                    keys.holders, "degree", fmt, fan_in, keys.sizes)
        rank: Any = list(sums)
        if not tasks.workers:  # in process: nothing crosses, and nothing is stolen
            rank = tasks.task("rank", resolved_rank, rank, key=("rank",))
        rounds = None
        ids = tasks.task("rank", ids_of_sums, vertices, *sums, key=("ids",), at=first)
        degree = tasks.task("rank", degrees_of_sums, *sums, key=("degree",), at=first)
    else:
        summed = tasks.reduce_over("rank", PackedResult(sender_degrees, "counts", fmt),
                                   PackedResult(add_counts, "counts", fmt), keys.parts, (n,),
                                   keys.holders, "degree", fan_in, keys.sizes)
        sums = [summed]
        total = tasks.task("rank", unpack, summed, key=("degree-sum",), on_host=True)
        peeling = rounds = None
        if orientation == "adirection":
            (total,) = timer.submit("rank", total)
            peeling, rounds = peel_partitions(keys, total, n, tasks, timer,
                                              adirection_epsilon() if epsilon is None
                                              else epsilon, fan_in)
        ranked = tasks.task("rank", rank_and_order, total, orientation, peeling, key=(0,))
        rank = tasks.task("rank", getitem, ranked, 0, key=("rank",), on_host=True)
        order = tasks.task("rank", getitem, ranked, 1, key=("order",), on_host=True)
        ids = tasks.task("rank", ids_of_ranks, vertices, order, key=("ids",))
        degree = tasks.task("rank", degrees_by_rank, total, order, key=("degree",))
    persisted = [rank] if not isinstance(rank, list) else []
    made = timer.submit("rank", *persisted, ids, *(() if not exact else (degree,)), *sums)
    if persisted:
        rank, made = made[0], made[1:]
    ids, made = made[0], made[1:]
    degree, made = ((made[0], made[1:]) if exact else (None, made))
    sums = list(made)
    if isinstance(rank, list):
        rank = sums
    return rank, ids, degree, rounds, sums


def resolved_rank(rank: Any, like: Any = None) -> Any:
    """The rank of every vertex (int64 by dense id, or ``None`` for the id orientation) from
    what a task received (:func:`ranked_by`): the ranks themselves, or the degree sums'
    slices (a list, the degree orientation), from which it ranks the vertices itself; in
    the array library of ``like`` where given (a slice packed on the host unpacks there)."""
    if isinstance(rank, list):
        rank = rank_and_order(joined_slices(*rank), "degree")[0]
    return same_library(rank, like)


def resolved_counts(counts: Any, like: Any = None) -> Any:
    """A vertex-wide sum from what a task received: the sum, or its slices (a list); in the
    array library of ``like`` where given."""
    return same_library(joined_slices(*counts) if isinstance(counts, list) else counts, like)


def same_library(values: Any, like: Any) -> Any:
    """``values`` as an array of ``like``'s library (the device's where ``like`` is there),
    or as they are (``None``, or ``like`` not given)."""
    if values is None or like is None or is_device_object(values) == is_device_object(like):
        return values
    return array_module(like).asarray(to_host(values) if not is_device_object(like)
                                      else values)


def ids_of_sums(vertices: Any, *sums: Any) -> Any:
    """The input id of every rank by the degree orientation, from the vertex set as it
    crossed and the degree sums' slices."""
    _, order = rank_and_order(joined_slices(*sums), "degree")
    return ids_by_rank(unpack(vertices), order)


def degrees_of_sums(*sums: Any) -> Any:
    """The degree of every rank by the degree orientation (int64), from the degree sums'
    slices."""
    degree = joined_slices(*sums)
    _, order = rank_and_order(degree, "degree")
    return degrees_by_rank(degree, order)


# The vertex-wide trees send int32 counts where they fit (:func:`dtri.kernels.counting.
# narrow_counts`): a count within one sender's distinct edges, or one sorted partition's, is
# at most its edges, since no edge is a self-loop. The sums stay int32 while they fit
# (:func:`~dtri.kernels.counting.add_counts`), and the degrees the analytics read are int64.
# The fused join's work travels as whole steps (int64, narrowed by the wire format).

def sender_degrees(keys: Any, vertices: int) -> Any:
    """:func:`~dtri.kernels.orient.degree_counts` of a sender's keys, int32 where they fit."""
    return narrow_counts(degree_counts(keys, vertices), int(keys.shape[0]))


def sender_out_degrees(keys: Any, rank: Any | None, vertices: int) -> Any:
    """:func:`~dtri.kernels.orient.oriented_out_degree` of a sender's keys, int32 where they
    fit (``rank`` as :func:`resolved_rank` takes it)."""
    return narrow_counts(oriented_out_degree(keys, resolved_rank(rank, keys), vertices),
                         int(keys.shape[0]))


def sender_work(keys: Any, rank: Any | None, out_degree: Any, vertices: int) -> Any:
    """:func:`~dtri.kernels.orient.oriented_intersection_work` of a sender's keys, rounded
    up to whole steps: the work only balances the sort's ranges, which a step does not
    move. As counts, they pack as counts do (:func:`dtri.kernels.wire.pack_counts`), where
    float32 packed to 3-4 bytes a vertex."""
    work = oriented_intersection_work(keys, resolved_rank(rank, keys),
                                      resolved_counts(out_degree, keys), vertices)
    xp = array_module(work)
    return xp.ceil(work).astype(xp.int64)


def source_bounds_of(work: Any, parts: int) -> list[int]:
    """:func:`~dtri.kernels.orient.source_bounds` of the work as a task received it (the
    sum, or its slices)."""
    return source_bounds(resolved_counts(work), parts)


def work_of(model: str, out_degree: Any) -> Any:
    """Each source's work by its out-degrees (``wedges`` or ``edges``), from the
    out-degrees as a task received them (the sum, or its slices)."""
    out_degree = resolved_counts(out_degree)
    return wedge_work(out_degree) if model == "wedges" else edge_work(out_degree)


def partition_degrees(part: Any, vertices: int) -> Any:
    """:func:`~dtri.kernels.csr.edge_degrees` of a sorted partition, int32 where they fit."""
    return narrow_counts(edge_degrees(part, vertices), as_csr(part).edges)


def degrees_by_rank(degree: Any, order: Any | None) -> Any:
    """The degree of every rank (int64), from the summed degrees by dense id."""
    return wide_counts(by_rank(degree, order))


def peel_partitions(keys: CanonicalKeys, degree: Any, vertices: Any, tasks: Tasks,
                    timer: StageTimer, epsilon: float, fan_in: int = FAN_IN) -> tuple[Any, int]:
    """The ``adirection`` peeling (:func:`dtri.kernels.orient.peel_round`) of a graph whose
    canonical ``keys`` are persisted per sender, timed as the ``direct`` stage: each round
    a tree of the senders' remaining degrees under the alive vertices, one task that peels,
    and one small int read back (the vertices left). Returns the persisted final
    :class:`~dtri.kernels.orient.Peeling` and the rounds run.

    Where senders share edges, this peels the multigraph of one edge per sender holding it.
    A vertex's remaining degree then counts every copy, so the bound the ranks keep (its
    out-degree at most its remaining degree when peeled) still holds; the copies only move
    some vertices to other rounds, and the edges need no second exchange.
    """
    state: Any = None
    remaining = degree  # round 0: every vertex alive, every edge counts
    for r in range(PEEL_ROUNDS):
        peeled = tasks.task("direct", peel_round, state, remaining, r, epsilon,
                            r == PEEL_ROUNDS - 1, key=("peel", r))
        (state,) = timer.submit("direct", peeled)
        (alive,) = timer.compute("direct", tasks.task("direct", getitem, state, 2,
                                                      key=("alive", r), on_host=True))
        if not alive:
            return state, r + 1
        level = tasks.task("direct", getitem, state, 0, key=("level", r), on_host=True)
        remaining = tasks.reduce_over("direct", remaining_counts, add_counts, keys.parts,
                                      (level, vertices), keys.holders, f"remaining-{r}",
                                      fan_in, keys.sizes)
    raise AssertionError("the last round peels every vertex left")

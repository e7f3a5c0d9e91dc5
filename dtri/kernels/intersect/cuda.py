"""The fused intersection as CUDA kernels (CuPy), for :func:`dtri.kernels.intersect.intersect`.

Each pass over the partition's edges runs three kernels:

* ``edge_rows`` and ``classify_edges``: one thread per edge gives each edge its row (source)
  and its class (:func:`dtri.kernels.strategy.edge_class`, the same rule as the CPU kernel):
  nothing to do, *search* class ``0..5``, or *hashed*; each block adds its searched edges'
  reads to one sum (the bytes model of :mod:`dtri.kernels.traffic`);
* ``search_edges``, one launch per search class: a group of ``1, 2, 4, .., 32`` lanes per edge,
  sized by the shorter list, so long lists spread over a warp and short ones do not idle 31
  lanes. Each lane walks its share of the shorter list, ascending, and binary-searches each
  member in the longer one from where its last search ended;
* ``bucket_by_target`` and ``hash_pieces``, one launch per hash-table size: the hashed edges,
  in buckets by target, are cut into *pieces* of about
  :attr:`~dtri.kernels.strategy.HashTuning.piece_probes` probes, so a hub's in-edges spread
  over many blocks and small targets share one. One thread block per piece puts each of its
  targets' lists ``N+(v)`` into an open-addressing table in shared memory (sparser for a
  count: :func:`table_spread`), then each warp takes one edge ``(u, v)`` at a time and its
  lanes stream ``u``'s members after ``v``, coalesced, each looked up in the table: ``Σ a``
  probes in all instead of ``Σ min · log max`` search steps. The pieces run in the graph's
  vertex order (:mod:`dtri.kernels.order`).

The kernels are templates over what they record:

* ``COUNT`` (0): the total only, a warp-wide shuffle reduction and one 64-bit atomic per warp;
* ``CREDIT`` (1): also the credits ``uv``, ``uw`` and ``vw`` (32-bit atomics on the edges' own
  counters);
* ``STATEFUL`` (2): credits among the edges whose state is not gone;
* ``PEEL`` (3): credits, to alive edges only, of the triangles with a leaving edge.
"""

from __future__ import annotations

import functools
from typing import Any

import cupy

from dtri.kernels.counting import id_counts
from dtri.kernels.csr import CSR
from dtri.kernels.cuda_source import cuda_module
from dtri.kernels.strategy import (
    HASHED,
    SEARCH_CLASSES,
    HashTuning,
    hash_max_members,
    hash_tuning,
    leaving_sources,
)
from dtri.kernels.traffic import join_bytes

COUNT, CREDIT, STATEFUL, PEEL = 0, 1, 2, 3
CUDA_SOURCE = ("dtri.kernels.intersect", "intersect.cu")
"""The kernels' CUDA source, beside this module (:mod:`dtri.kernels.cuda_source` loads it)."""
GROUP_SIZES = (1, 2, 4, 8, 16, 32)
THREADS_PER_BLOCK = 256
PIECE_THREADS = 256
MODES = (COUNT, CREDIT, STATEFUL, PEEL)
PLAIN_KERNELS = ("edge_rows", "classify_edges", "bucket_by_target", "piece_work",
                 "piece_starts")
"""The kernels that are no templates: every mode's module has them."""


@functools.cache
def mode_kernels(mode: int) -> tuple[str, ...]:
    """The kernels of the module of ``mode``: the plain ones and the mode's instantiations."""
    return (*PLAIN_KERNELS, *(f"{template}<{mode}>" for template in
                              ("search_edges", "hash_pieces", "hash_warps")))
WARP_TABLES_BYTES = 48 * 1024
"""A block's warp tables fit in the shared memory a block gets without opting in."""
MIN_TABLE_BITS = 7
"""The smallest hash table: 128 slots (a source needs :attr:`HashTuning.min_members`)."""


def kernel(name: str, mode: int) -> Any:
    """A compiled kernel of ``mode``'s module on the current device. Each mode's module is
    compiled once per device, and only when a run needs it: a count compiles its own
    instantiations (0.66 s the first time ever on an H100), not the credits' and the
    peeling's as well (1.66 s for all four modes)."""
    return cuda_module(*CUDA_SOURCE,
                       name_expressions=mode_kernels(mode)).get_function(name)


def max_table_bits(mode: int) -> int:
    """The largest table the device's shared memory holds for ``mode`` (keys only for the
    count; keys and positions with credits), at most 2**15 slots."""
    device = cupy.cuda.Device()
    limit = device.attributes["MaxSharedMemoryPerBlockOptin"] - 8 * 1024  # the scan's arrays
    per_slot = 4 if mode == COUNT else 8
    bits = 15
    while bits > MIN_TABLE_BITS and (per_slot << bits) > limit:
        bits -= 1
    return bits


def table_spread(mode: int, tuning: HashTuning) -> int:
    """The spread of ``mode``'s tables (:attr:`HashTuning.spread`): the count's; with credits
    a table holds keys and positions, 8 bytes a slot, and stays the least at most half full
    (spread, R-MAT 26's credits took 1.41 s against 1.33 s on one H200)."""
    return tuning.spread if mode == COUNT else 1


def spread_table_bits(mode: int, tuning: HashTuning) -> int:
    """The largest table (in bits of its slots) that a list's spread may fill
    (:attr:`HashTuning.spread_bytes`): 4 bytes a slot for the count, 8 with credits."""
    per_slot = 4 if mode == COUNT else 8
    return max(MIN_TABLE_BITS, (tuning.spread_bytes // per_slot).bit_length() - 1)


def blocks_for(threads: int) -> int:
    return (threads + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK


def intersect_cuda(part: CSR, group: CSR, uv: Any, uw: Any, vw: Any, part_state: Any,
                   group_state: Any, peel: bool, chunk_rows: int | None) -> tuple[int, int]:
    """Triangles of :func:`dtri.kernels.intersect.intersect` on CuPy arrays, crediting ``uv``,
    ``uw`` and ``vw`` in place where they are given; ``chunk_rows`` partition edges per
    pass. Also the bytes read by the model of :mod:`dtri.kernels.traffic`, from the sums the
    kernels make: the live edges (the classes' counts), the hashed work (the pieces' prefix
    sum) and the searched edges' reads (``classify_edges``'s)."""
    stateful = part_state is not None
    if stateful and uv is None:  # a count among the remaining edges: credits unused
        uv = cupy.zeros(part.edges, dtype=cupy.uint32)
        uw = cupy.zeros(part.edges, dtype=cupy.uint32)
    mode = PEEL if peel else STATEFUL if stateful else CREDIT if uv is not None else COUNT
    tuning = hash_tuning()
    hash_max = min(hash_max_members(mode != COUNT), 1 << (max_table_bits(mode) - 1))
    hash_max = hash_max if tuning.enabled else 0
    dummy8 = cupy.zeros(1, dtype=cupy.uint8)
    dummy32 = cupy.zeros(1, dtype=cupy.uint32)
    part_leaving = leaving_sources(part, part_state) if peel else dummy8
    group_leaving = leaving_sources(group, group_state) if peel else dummy8
    a_state = part_state if stateful else dummy8
    b_state = group_state if stateful else dummy8
    credits = (uv if uv is not None else dummy32, uw if uw is not None else dummy32,
               vw if vw is not None else dummy32, cupy.int32(vw is not None), a_state, b_state)
    total = cupy.zeros(1, dtype=cupy.uint64)
    members = cupy.zeros(2, dtype=cupy.uint64)  # hashed work; searched edges' reads
    live = 0
    rows = part.offsets.shape[0] - 1
    step = max(1, chunk_rows or part.edges)
    for first in range(0, part.edges, step):
        last = min(part.edges, first + step)
        n = last - first
        row_of = cupy.empty(n, dtype=cupy.int32)
        kernel("edge_rows", mode)((blocks_for(rows),), (THREADS_PER_BLOCK,), (
            part.offsets, cupy.int64(rows), cupy.int64(first), cupy.int64(last), row_of))
        cls = cupy.empty(n, dtype=cupy.uint8)
        kernel("classify_edges", mode)((blocks_for(n),), (THREADS_PER_BLOCK,), (
            cupy.int64(first), cupy.int64(n), row_of, part.dst, part.offsets, group.offsets,
            cupy.int64(group.low), cupy.int64(group.high), a_state, part_leaving,
            group_leaving, cupy.int32(stateful), cupy.int32(peel),
            cupy.int64(tuning.min_members), cupy.int64(hash_max),
            cupy.float64(tuning.probe_cost), cls, members[1:]))
        # the edges by class, in one stable sort of the class bytes (positions ascend
        # within a class)
        by_class = cupy.argsort(cls, kind="stable")
        bounds = cupy.concatenate([cupy.zeros(1, dtype=cupy.int64), cupy.cumsum(
            cupy.bincount(cls, minlength=256)[: HASHED + 1])]).tolist()
        live += bounds[HASHED + 1]
        del cls
        by_class += first
        search = kernel(f"search_edges<{mode}>", mode)
        for level, lanes in zip(SEARCH_CLASSES, GROUP_SIZES, strict=True):
            slots = by_class[bounds[level]: bounds[level + 1]]
            if slots.shape[0] == 0:
                continue
            search((blocks_for(slots.shape[0] * lanes),), (THREADS_PER_BLOCK,), (
                slots, cupy.int64(slots.shape[0]), cupy.int64(first), row_of, part.dst,
                part.offsets, group.dst, group.offsets, cupy.int64(group.low),
                cupy.int32(lanes), total, *credits))
        hashed = by_class[bounds[HASHED]: bounds[HASHED + 1]]
        if hashed.shape[0]:
            run_pieces(mode, hashed, first, row_of, part, group, tuning, total, credits,
                       members[:1])
    hashed_work, searched = (int(x) for x in members.get())
    return int(total.get()[0]), join_bytes(live, hashed_work, searched)


def schedule_positions(schedule: Any, csr: CSR) -> Any:
    """Position of each row of ``csr`` in its schedule (rows absent from it go last)."""
    rows = csr.offsets.shape[0] - 1
    position = cupy.full(rows, rows, dtype=cupy.int64)
    position[cupy.asarray(schedule)] = cupy.arange(schedule.shape[0], dtype=cupy.int64)
    return position


def run_pieces(mode: int, hashed: Any, first: int, row_of: Any, part: CSR, group: CSR,
               tuning: HashTuning, total: Any, credits: tuple, work: Any) -> None:
    """Put the hashed edges in buckets by target, cut them into pieces of about
    :attr:`HashTuning.piece_probes` (a new piece where the prefix sum of the work, the probes
    plus each target's table, crosses a multiple of it, and where the table size changes)
    and run them, one launch per table size, the pieces ordered by the group's vertex order
    (:attr:`CSR.schedule`; rank order without one). ``work`` (one uint64) gains the work's
    sum."""
    n = hashed.shape[0]
    targets = part.dst[hashed].astype(cupy.int64) - group.low
    rows = group.offsets.shape[0] - 1
    bucket = cupy.zeros(rows + 1, dtype=cupy.int64)
    cupy.cumsum(id_counts(targets, rows), out=bucket[1:])
    del targets
    cursor = bucket[:-1].astype(cupy.uint64)
    ordered = cupy.empty(n, dtype=cupy.int64)
    kernel("bucket_by_target", mode)((blocks_for(n),), (THREADS_PER_BLOCK,), (
        hashed, cupy.int64(n), part.dst, cupy.int64(group.low), cursor, ordered))
    del cursor, hashed
    stops = cupy.empty(n, dtype=cupy.int64)
    prefix = cupy.empty(n, dtype=cupy.int64)
    bits = cupy.empty(n, dtype=cupy.uint8)
    head = cupy.empty(n, dtype=cupy.uint8)
    kernel("piece_work", mode)((blocks_for(n),), (THREADS_PER_BLOCK,), (
        ordered, cupy.int64(n), cupy.int64(first), row_of, part.dst, part.offsets,
        group.offsets, cupy.int64(group.low), cupy.int32(table_spread(mode, tuning)),
        cupy.int32(spread_table_bits(mode, tuning)), cupy.int32(max_table_bits(mode)), stops,
        prefix, bits, head))
    cupy.cumsum(prefix, out=prefix)
    work += prefix[-1:].view(cupy.uint64)
    starts = cupy.empty(n, dtype=cupy.uint8)
    kernel("piece_starts", mode)((blocks_for(n),), (THREADS_PER_BLOCK,), (
        prefix, cupy.int64(n), bits, head, cupy.int64(tuning.piece_probes),
        cupy.int32(tuning.warp_table_bits), starts))
    del prefix, head
    pieces = cupy.concatenate([cupy.flatnonzero(starts),
                               cupy.asarray([n], dtype=cupy.int64)])
    del starts
    heads = pieces[:-1]
    piece_bits = bits[heads].astype(cupy.int64)
    del bits
    order = cupy.arange(heads.shape[0], dtype=cupy.int64)
    if group.schedule is not None:  # the vertex order: pieces by their first target's place
        target = part.dst[ordered[heads]].astype(cupy.int64) - group.low
        place = schedule_positions(group.schedule, group)[target]
        order = cupy.argsort(place * heads.shape[0] + order)
    launch_bits = piece_bits[order]
    per_slot = 4 if mode == COUNT else 8
    warp_bits = tuning.warp_table_bits
    for size in sorted(int(b) for b in cupy.unique(launch_bits).tolist()):
        launch = order[launch_bits == size].astype(cupy.int32)
        arrays = (ordered, stops, bucket, part.dst, group.dst, group.offsets,
                  cupy.int64(group.low), total, *credits)
        warps = PIECE_THREADS // 32
        if size <= warp_bits and warps * per_slot << size <= WARP_TABLES_BYTES:  # per warp
            run = kernel(f"hash_warps<{mode}>", mode)
            shared = warps * per_slot << size
            blocks = (launch.shape[0] + warps - 1) // warps
            args = (pieces, launch, cupy.int64(launch.shape[0]), cupy.int32(size), *arrays)
        else:  # a table per block
            run = kernel(f"hash_pieces<{mode}>", mode)
            shared = per_slot << size
            blocks = launch.shape[0]
            args = (pieces, launch, cupy.int32(size), *arrays)
        if shared > 48 * 1024:
            run.max_dynamic_shared_size_bytes = shared
        run((blocks,), (PIECE_THREADS,), args, shared_mem=shared)

"""The fused intersection as CUDA kernels (CuPy), for :func:`dtri.kernels.intersect.intersect`.

Each pass over the partition's edges runs three kernels:

* ``edge_rows`` and ``classify_edges``: one thread per edge gives each edge its row (source)
  and its class (:func:`dtri.kernels.strategy.edge_class`, the same rule as the CPU kernel):
  nothing to do, *search* class ``0..5``, or *hashed*;
* ``search_edges``, one launch per search class: a group of ``1, 2, 4, .., 32`` lanes per edge,
  sized by the shorter list, so long lists spread over a warp and short ones do not idle 31
  lanes. Each lane walks its share of the shorter list, ascending, and binary-searches each
  member in the longer one from where its last search ended;
* ``bucket_by_target`` and ``hash_pieces``, one launch per hash-table size: the hashed edges,
  put in buckets by target, are cut into *pieces* of about
  :attr:`~dtri.kernels.strategy.HashTuning.piece_probes` probes by prefix sums of their
  work, so a hub's in-edges spread over many blocks, small targets share one, and no block
  holds much more than another. One thread block per piece puts each of its targets' lists
  ``N+(v)`` into an open-addressing table in shared memory (built once per target and
  piece, whatever the number of its in-edges), then each warp takes one edge ``(u, v)`` at
  a time and its lanes stream ``u``'s members after ``v``, coalesced, each looked up in the
  table: one or two shared-memory reads instead of a binary search in global memory, and
  ``Σ a`` probes in all (the wedges) instead of ``Σ min · log max`` steps. The pieces run in
  the order of the graph's vertex order (:mod:`dtri.kernels.order`).

The kernels are templates over what they record:

* ``COUNT`` (0): the total only, a warp-wide shuffle reduction and one 64-bit atomic per warp;
* ``CREDIT`` (1): also the credits ``uv``, ``uw`` and ``vw`` (32-bit atomics on the edges' own
  counters);
* ``STATEFUL`` (2): credits among the edges whose state is not gone;
* ``PEEL`` (3): credits, to alive edges only, of the triangles with a leaving edge.
"""

from __future__ import annotations

from typing import Any

import cupy

from dtri.kernels.compiled import compiling
from dtri.kernels.csr import CSR
from dtri.kernels.orient import id_counts
from dtri.kernels.strategy import (
    HASHED,
    SEARCH_CLASSES,
    HashTuning,
    hash_max_members,
    hash_tuning,
    leaving_sources,
)

COUNT, CREDIT, STATEFUL, PEEL = 0, 1, 2, 3

KERNEL_SOURCE = r"""
#define HASHED 6

// Credit one common member ``w`` (``ia`` its position in u's list, ``ib`` in v's) of edge ``e``
// (state ``se``); returns 1 when it is a triangle to count. ``mine``: credits due to ``uv[e]``.
template <int MODE>
__device__ __forceinline__ int credit(long long ia, long long ib, unsigned char se,
    unsigned int& mine, unsigned int* __restrict__ uw, unsigned int* __restrict__ vw,
    int with_vw, const unsigned char* __restrict__ a_state,
    const unsigned char* __restrict__ b_state)
{
    if (MODE == 0) return 1;
    if (MODE == 1) {
        ++mine;
        atomicAdd(uw + ia, 1u);
        if (with_vw) atomicAdd(vw + ib, 1u);
        return 1;
    }
    const unsigned char sa = a_state[ia], sb = b_state[ib];
    if (sa == 0 || sb == 0) return 0;
    if (MODE == 2) {
        ++mine;
        atomicAdd(uw + ia, 1u);
        if (with_vw) atomicAdd(vw + ib, 1u);
        return 1;
    }
    if (se != 2 && sa != 2 && sb != 2) return 0;
    if (se == 1) ++mine;
    if (sa == 1) atomicAdd(uw + ia, 1u);
    if (with_vw && sb == 1) atomicAdd(vw + ib, 1u);
    return 1;
}

__device__ __forceinline__ void add_total(unsigned long long found,
                                          unsigned long long* __restrict__ total)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        found += __shfl_down_sync(0xffffffffu, found, offset);
    if ((threadIdx.x & 31) == 0 && found) atomicAdd(total, found);
}

// The row (source position in the CSR) of each edge first .. last - 1: one thread per row.
extern "C" __global__ void edge_rows(const long long* __restrict__ offsets, const long long rows,
                                     const long long first, const long long last,
                                     int* __restrict__ row_of)
{
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const long long start = max(offsets[r], first), stop = min(offsets[r + 1], last);
    for (long long e = start; e < stop; ++e) row_of[e - first] = (int)r;
}

__device__ __forceinline__ int bit_length(long long x)
{
    return 64 - __clzll(x);
}

// The class of each edge first .. last - 1 (dtri.kernels.strategy.edge_class): 255 nothing
// to do, 0..5 the lanes of its search group (1 << class), HASHED.
extern "C" __global__ void classify_edges(
    const long long first, const long long n, const int* __restrict__ row_of,
    const int* __restrict__ a_values, const long long* __restrict__ a_offsets,
    const long long* __restrict__ b_offsets, const long long glow, const long long ghigh,
    const unsigned char* __restrict__ a_state, const unsigned char* __restrict__ a_leaving,
    const unsigned char* __restrict__ b_leaving, const int stateful, const int peel,
    const long long hash_min, const long long hash_max, const double probe_cost,
    unsigned char* __restrict__ cls)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const long long e = first + t;
    const int row = row_of[t];
    const long long v = a_values[e];
    unsigned char c = 255;
    if (v >= glow && v < ghigh) {
        bool take = true;
        if (stateful) {
            const unsigned char se = a_state[e];
            take = se != 0 && !(peel && se != 2 && a_leaving[row] == 0
                                && b_leaving[v - glow] == 0);
        }
        const long long stop = a_offsets[row + 1];
        const long long a = stop - e - 1;
        const long long b = b_offsets[v - glow + 1] - b_offsets[v - glow];
        if (take && a > 0 && b > 0) {
            const long long shorter = min(a, b), longer = max(a, b);
            const double steps = (double)shorter * (double)bit_length(longer);
            if (b >= hash_min && b <= hash_max && (double)a * probe_cost <= steps) {
                c = HASHED;
            } else {
                const int level = shorter == 1 ? 0 : bit_length(shorter - 1);
                c = (unsigned char)min(level, 5);
            }
        }
    }
    cls[t] = c;
}

// One search class: ``group`` lanes per edge ``slots[i]`` (positions in the partition).
template <int MODE>
__global__ void search_edges(
    const long long* __restrict__ slots, const long long n_slots, const long long first,
    const int* __restrict__ row_of, const int* __restrict__ a_values,
    const long long* __restrict__ a_offsets, const int* __restrict__ b_values,
    const long long* __restrict__ b_offsets, const long long glow, const int group,
    unsigned long long* __restrict__ total, unsigned int* __restrict__ uv,
    unsigned int* __restrict__ uw, unsigned int* __restrict__ vw, const int with_vw,
    const unsigned char* __restrict__ a_state, const unsigned char* __restrict__ b_state)
{
    const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long slot = thread / group;
    const int lane = (int)(thread % group);
    unsigned long long found = 0;
    if (slot < n_slots) {
        const long long e = slots[slot];
        const long long v = a_values[e];
        long long s = e + 1, s_end = a_offsets[row_of[e - first] + 1];
        long long l = b_offsets[v - glow], l_end = b_offsets[v - glow + 1];
        const int* shorter = a_values;
        const int* longer = b_values;
        bool swapped = false;
        if (s_end - s > l_end - l) {  // smaller list first: walk it, search the other
            long long t = s; s = l; l = t;
            t = s_end; s_end = l_end; l_end = t;
            shorter = b_values; longer = a_values;
            swapped = true;
        }
        const unsigned char se = MODE >= 2 ? a_state[e] : 1;
        unsigned int mine = 0;
        long long low = l;
        for (long long i = s + lane; i < s_end; i += group) {
            const int wanted = shorter[i];
            long long high = l_end;
            while (low < high) {  // members ascend per lane, so low only moves forward
                const long long mid = (low + high) >> 1;
                if (longer[mid] < wanted) low = mid + 1; else high = mid;
            }
            if (low < l_end && longer[low] == wanted)
                found += credit<MODE>(swapped ? low : i, swapped ? i : low, se, mine, uw, vw,
                                      with_vw, a_state, b_state);
        }
        if (MODE != 0 && mine) atomicAdd(uv + e, mine);
    }
    add_total(found, total);
}

#define PIECE_THREADS 256
#define MIN_TABLE_BITS 7
#define UNROLL 4

__device__ __forceinline__ unsigned int slot_of(int w, int bits)
{
    return ((unsigned int)w * 2654435769u) >> (32 - bits);
}

__device__ __forceinline__ int table_bits(long long members)
{
    const int bits = 64 - __clzll(2 * members - 1);  // ceil(log2(2 * members))
    return max(bits, MIN_TABLE_BITS);
}

__device__ __forceinline__ void clear_table(int* keys, int size, int first, int step)
{
    for (int i = first; i < size; i += step) keys[i] = -1;
}

// Target v's list b_values[b0 .. b1) into the table, ``step`` threads from ``first`` (keys,
// then with credits each key's position in the list).
template <int MODE>
__device__ __forceinline__ void fill_table(int* keys, int* where,
                                           const int* __restrict__ b_values, long long b0,
                                           long long b1, int bits, int first, int step)
{
    const unsigned int mask = (1u << bits) - 1;
    for (long long j = b0 + first; j < b1; j += step) {
        const int w = b_values[j];
        unsigned int s = slot_of(w, bits);
        while (atomicCAS(keys + s, -1, w) != -1) s = (s + 1) & mask;
        if (MODE != 0) where[s] = (int)(j - b0);
    }
}

// The slot holding ``w`` (linear probing from its hash), -1 where it is not in the table.
__device__ __forceinline__ int find(const int* keys, int w, int bits)
{
    const unsigned int mask = (1u << bits) - 1;
    unsigned int s = slot_of(w, bits);
    int key;
    while ((key = keys[s]) != -1 && key != w) s = (s + 1) & mask;
    return key == w ? (int)s : -1;
}

// The hashed edges h (positions in the partition), put in buckets by target: ``cursor`` starts
// as each target's first slot in ``out`` and ends as its last plus one.
extern "C" __global__ void bucket_by_target(const long long* __restrict__ h, const long long n,
                                            const int* __restrict__ a_values,
                                            const long long glow,
                                            unsigned long long* __restrict__ cursor,
                                            long long* __restrict__ out)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const long long e = h[k];
    out[atomicAdd(cursor + (a_values[e] - glow), 1ull)] = e;
}

// For each hashed edge k in its bucket order (``h``): where its source's list ends, its work
// (the later members it streams, plus its target's list for the first edge of a target),
// its target's table size, and whether it starts a new target.
extern "C" __global__ void piece_work(const long long* __restrict__ h, const long long n,
                                      const long long first, const int* __restrict__ row_of,
                                      const int* __restrict__ a_values,
                                      const long long* __restrict__ a_offsets,
                                      const long long* __restrict__ b_offsets,
                                      const long long glow, long long* __restrict__ stops,
                                      long long* __restrict__ work,
                                      unsigned char* __restrict__ bits,
                                      unsigned char* __restrict__ head)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const long long e = h[k];
    const long long v = a_values[e];
    const long long stop = a_offsets[row_of[e - first] + 1];
    const bool starts = k == 0 || a_values[h[k - 1]] != v;
    const long long length = b_offsets[v - glow + 1] - b_offsets[v - glow];
    stops[k] = stop;
    work[k] = stop - e - 1 + (starts ? length : 0);
    bits[k] = (unsigned char)table_bits(length);
    head[k] = starts;
}

// Whether hashed edge k starts a piece: the first, a target whose table size differs from
// the last one's, or where the work before it crosses a multiple of the piece's size
// (a warp's piece, for small tables, is an eighth of a block's).
extern "C" __global__ void piece_starts(const long long* __restrict__ prefix, const long long n,
                                        const unsigned char* __restrict__ bits,
                                        const unsigned char* __restrict__ head,
                                        const long long block_probes, const int warp_bits,
                                        unsigned char* __restrict__ starts)
{
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    if (k == 0) { starts[k] = 1; return; }
    const long long size = bits[k] <= warp_bits ? max(1LL, block_probes / 8) : block_probes;
    const long long before = prefix[k - 1];  // inclusive sums: the work before k
    const long long earlier = k >= 2 ? prefix[k - 2] : 0;  // and before k - 1
    starts[k] = (head[k] && bits[k] != bits[k - 1]) || before / size != earlier / size;
}

// One block per piece ``launch[blockIdx.x]``: hashed edges h[pieces[p] .. pieces[p + 1]), in
// buckets by target (``bucket[v]`` is where target v's start). For each target of the piece,
// its list N+(v) goes into an open-addressing table in shared memory (keys, then with
// credits their positions), and each warp takes one edge (u, v) at a time, its lanes
// streaming u's members after v and looking each up in the table.
template <int MODE>
__global__ void __launch_bounds__(PIECE_THREADS) hash_pieces(
    const long long* __restrict__ pieces, const int* __restrict__ launch,
    const long long* __restrict__ h, const long long* __restrict__ stops,
    const long long* __restrict__ bucket, const int* __restrict__ a_values,
    const int* __restrict__ b_values, const long long* __restrict__ b_offsets,
    const long long glow, unsigned long long* __restrict__ total,
    unsigned int* __restrict__ uv, unsigned int* __restrict__ uw, unsigned int* __restrict__ vw,
    const int with_vw, const unsigned char* __restrict__ a_state,
    const unsigned char* __restrict__ b_state)
{
    extern __shared__ int table[];
    const int piece = launch[blockIdx.x];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = PIECE_THREADS / 32;
    long long k = pieces[piece];
    const long long k1 = pieces[piece + 1];
    unsigned long long found = 0;
    while (k < k1) {
        const long long v = a_values[h[k]] - glow;
        const long long stop = min(bucket[v + 1], k1);
        const long long b0 = b_offsets[v], b1 = b_offsets[v + 1];
        const int bits = table_bits(b1 - b0);
        const int size = 1 << bits;
        int* keys = table;
        int* where = table + size;  // with credits: each key's position in v's list
        __syncthreads();  // the last target's edges are done with the table
        clear_table(keys, size, threadIdx.x, PIECE_THREADS);
        __syncthreads();
        fill_table<MODE>(keys, where, b_values, b0, b1, bits, threadIdx.x, PIECE_THREADS);
        __syncthreads();
        for (long long kk = k + warp; kk < stop; kk += warps) {
            const long long e = h[kk];
            const long long s1 = stops[kk];
            const unsigned char se = MODE >= 2 ? a_state[e] : 1;
            unsigned int mine = 0;
            for (long long i = e + 1 + lane; i < s1; i += 32 * UNROLL) {
                int w[UNROLL];  // the loads first, then the probes: UNROLL loads in flight
#pragma unroll
                for (int r = 0; r < UNROLL; ++r) w[r] = i + 32 * r < s1 ? a_values[i + 32 * r] : -1;
#pragma unroll
                for (int r = 0; r < UNROLL; ++r) {
                    if (w[r] < 0) continue;
                    const int s = find(keys, w[r], bits);
                    if (s >= 0)
                        found += credit<MODE>(i + 32 * r, b0 + where[s], se, mine, uw, vw,
                                              with_vw, a_state, b_state);
                }
            }
            if (MODE != 0) {
                mine = __reduce_add_sync(0xffffffffu, mine);
                if (lane == 0 && mine) atomicAdd(uv + e, mine);
            }
        }
        k = stop;
    }
    add_total(found, total);
}

// The same for small tables, one warp per piece and a table per warp: no block-wide wait
// between targets. The warp takes the edges of a target 32 at a time and flattens their
// probes (a scan of their lengths across the lanes), so short lists do not idle lanes.
template <int MODE>
__global__ void __launch_bounds__(PIECE_THREADS) hash_warps(
    const long long* __restrict__ pieces, const int* __restrict__ launch,
    const long long n_launch, const int launch_bits,
    const long long* __restrict__ h, const long long* __restrict__ stops,
    const long long* __restrict__ bucket, const int* __restrict__ a_values,
    const int* __restrict__ b_values, const long long* __restrict__ b_offsets,
    const long long glow, unsigned long long* __restrict__ total,
    unsigned int* __restrict__ uv, unsigned int* __restrict__ uw, unsigned int* __restrict__ vw,
    const int with_vw, const unsigned char* __restrict__ a_state,
    const unsigned char* __restrict__ b_state)
{
    extern __shared__ int table[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long g = (long long)blockIdx.x * (PIECE_THREADS / 32) + warp;
    unsigned long long found = 0;
    if (g < n_launch) {
        const int per_warp = (MODE == 0 ? 1 : 2) << launch_bits;
        int* keys = table + warp * per_warp;
        const int piece = launch[g];
        long long k = pieces[piece];
        const long long k1 = pieces[piece + 1];
        while (k < k1) {
            const long long v = a_values[h[k]] - glow;
            const long long stop = min(bucket[v + 1], k1);
            const long long b0 = b_offsets[v], b1 = b_offsets[v + 1];
            const int bits = table_bits(b1 - b0);
            const int size = 1 << bits;
            int* where = keys + size;
            __syncwarp();
            clear_table(keys, size, lane, 32);
            __syncwarp();
            fill_table<MODE>(keys, where, b_values, b0, b1, bits, lane, 32);
            __syncwarp();
            for (long long base = k; base < stop; base += 32) {
                long long e = -1, length = 0;
                if (base + lane < stop) {
                    e = h[base + lane];
                    length = stops[base + lane] - e - 1;
                }
                long long before = length;  // inclusive scan across the lanes
                for (int step = 1; step < 32; step <<= 1) {
                    const long long add = __shfl_up_sync(0xffffffffu, before, step);
                    if (lane >= step) before += add;
                }
                const long long flat = __shfl_sync(0xffffffffu, before, 31);
                before -= length;  // exclusive
                for (long long round = 0; round < flat; round += 32) {
                    const long long q = round + lane;
                    int lo = 0, hi = 32;  // the last lane whose first probe is at or before q
                    while (hi - lo > 1) {
                        const int mid = (lo + hi) >> 1;
                        const long long at = __shfl_sync(0xffffffffu, before, mid);
                        if (at <= q) lo = mid; else hi = mid;
                    }
                    const long long edge = __shfl_sync(0xffffffffu, e, lo);
                    const long long start = __shfl_sync(0xffffffffu, before, lo);
                    if (q < flat) {
                        const long long i = edge + 1 + (q - start);
                        const int s = find(keys, a_values[i], bits);
                        if (s >= 0) {
                            if (MODE == 0) {
                                ++found;
                            } else {
                                unsigned int mine = 0;
                                const unsigned char se = MODE >= 2 ? a_state[edge] : 1;
                                found += credit<MODE>(i, b0 + where[s], se, mine, uw, vw,
                                                      with_vw, a_state, b_state);
                                if (mine) atomicAdd(uv + edge, mine);
                            }
                        }
                    }
                }
            }
            k = stop;
        }
    }
    add_total(found, total);
}
"""

_modules: dict[tuple[int, int], Any] = {}
GROUP_SIZES = (1, 2, 4, 8, 16, 32)
THREADS_PER_BLOCK = 256
PIECE_THREADS = 256
MODES = (COUNT, CREDIT, STATEFUL, PEEL)
PLAIN_KERNELS = ("edge_rows", "classify_edges", "bucket_by_target", "piece_work",
                 "piece_starts")
"""The kernels that are no templates: every mode's module has them."""


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
    key = (cupy.cuda.runtime.getDevice(), mode)
    if key not in _modules:
        with compiling():  # compiled, or loaded from CuPy's disk cache
            module = cupy.RawModule(code=KERNEL_SOURCE, options=("-std=c++17",),
                                    name_expressions=list(mode_kernels(mode)))
            module.compile()
        _modules[key] = module
    return _modules[key].get_function(name)


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


def blocks_for(threads: int) -> int:
    return (threads + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK


def intersect_cuda(part: CSR, group: CSR, uv: Any, uw: Any, vw: Any, part_state: Any,
                   group_state: Any, peel: bool, chunk_rows: int | None) -> int:
    """Triangles of :func:`dtri.kernels.intersect.intersect` on CuPy arrays, crediting ``uv``,
    ``uw`` and ``vw`` in place where they are given; ``chunk_rows`` partition edges per
    pass."""
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
            cupy.float64(tuning.probe_cost), cls))
        # the edges by class, in one stable sort of the class bytes (positions ascend
        # within a class)
        by_class = cupy.argsort(cls, kind="stable")
        bounds = cupy.concatenate([cupy.zeros(1, dtype=cupy.int64), cupy.cumsum(
            cupy.bincount(cls, minlength=256)[: HASHED + 1])]).tolist()
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
            run_pieces(mode, hashed, first, row_of, part, group, tuning, total, credits)
    return int(total.get()[0])


def schedule_positions(schedule: Any, csr: CSR) -> Any:
    """Position of each row of ``csr`` in its schedule (rows absent from it go last)."""
    rows = csr.offsets.shape[0] - 1
    position = cupy.full(rows, rows, dtype=cupy.int64)
    position[cupy.asarray(schedule)] = cupy.arange(schedule.shape[0], dtype=cupy.int64)
    return position


def run_pieces(mode: int, hashed: Any, first: int, row_of: Any, part: CSR, group: CSR,
               tuning: HashTuning, total: Any, credits: tuple) -> None:
    """Put the hashed edges in buckets by target, cut them into pieces of about
    :attr:`HashTuning.piece_probes` (a new piece where the prefix sum of the work, the probes
    plus each target's table, crosses a multiple of it, and where the table size changes)
    and run them, one launch per table size, the pieces ordered by the group's vertex order
    (:attr:`CSR.schedule`; rank order without one)."""
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
        group.offsets, cupy.int64(group.low), stops, prefix, bits, head))
    cupy.cumsum(prefix, out=prefix)
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
            args = (pieces, launch, *arrays)
        if shared > 48 * 1024:
            run.max_dynamic_shared_size_bytes = shared
        run((blocks,), (PIECE_THREADS,), args, shared_mem=shared)

"""Fused join: count triangles per oriented edge by sorted-list intersection, no wedge written.

For an oriented edge ``(u, v)`` at position ``i`` of ``u``'s sorted out-list, the triangles
it closes are ``|N+(u)[i+1:] ∩ N+(v)|``: each triangle ``u < v < w`` (by rank) is found once,
at its two lowest vertices. The shorter of the two lists is walked and each of its members
is binary-searched in the longer one (smaller-degree-first). Work is ``Σ min(len) · log(max)``
instead of one written key per wedge, and memory is the edges alone.

``N+(u)`` comes from the task's own sorted partition (whole adjacency lists); ``N+(v)`` from
one radix bin of the edge set held as CSR (:class:`BinCSR`), so a task needs one partition and
one bin. On CuPy arrays the count runs in one CUDA kernel per degree class: a group of
``1..32`` lanes per edge, sized by the shorter list's length, so long lists spread over a warp
and short ones do not idle 31 lanes; a warp-wide shuffle reduction and one 64-bit atomic per
warp keep the sum exact. On NumPy (and as the portable reference) the same algorithm runs as
vectorised binary searches over chunks of (edge, member) pairs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from dtri.bins import unpack_keys
from dtri.dispatch import array_module
from dtri.wedges import list_ends

PAIRS_PER_CHUNK = 1 << 24
"""(edge, member) pairs the vectorised path expands at once (bounds its memory)."""


class BinCSR(NamedTuple):
    """One radix bin of the oriented edges as CSR over its source range ``[low, high)``."""

    dst: Any  # int32 targets, grouped by source, ascending within each source
    offsets: Any  # int64, length high - low + 1
    low: int
    high: int


def bin_csr(keys: Any, bits: int, low: int, high: int) -> BinCSR:
    """CSR of an ascending packed-key bin whose sources lie in ``[low, high)``."""
    xp = array_module(keys)
    src, dst = unpack_keys(keys, bits)
    dst = dst.astype(xp.int32)
    bounds = xp.arange(low, high + 1, dtype=xp.int64)
    return BinCSR(dst, xp.searchsorted(src, bounds).astype(xp.int64), low, high)


def edge_lists(src: Any, dst: Any, csr: BinCSR,
               ends: Any = None) -> tuple[Any, Any, Any, Any, Any]:
    """For each partition edge whose target lies in the bin: the two lists to intersect.

    Returns ``(a_start, a_stop, b_start, b_stop, edge)``: ``a`` indexes the partition's
    ``dst`` (the later out-neighbours of the source), ``b`` the bin's ``dst`` (``N+(v)``);
    edges where either list is empty are left out. ``ends``: :func:`list_ends` of ``src``.
    """
    xp = array_module(src)
    a_stop = list_ends(src) if ends is None else ends
    edge = xp.flatnonzero((dst >= csr.low) & (dst < csr.high))
    local = dst[edge] - csr.low
    b_start, b_stop = csr.offsets[local], csr.offsets[local + 1]
    a_start = edge + 1
    a_stop = a_stop[edge]
    keep = (a_stop > a_start) & (b_stop > b_start)
    return a_start[keep], a_stop[keep], b_start[keep], b_stop[keep], edge[keep]


def count_intersections(src: Any, dst: Any, csr: BinCSR, ends: Any = None) -> int:
    """Triangles closed by the partition's edges ``(src, dst)`` whose target is in the bin
    (``ends``: :func:`list_ends` of ``src``, when the caller has it already)."""
    xp = array_module(src)
    a_start, a_stop, b_start, b_stop, _ = edge_lists(src, dst, csr, ends)
    if a_start.shape[0] == 0:
        return 0
    part_dst = dst.astype(xp.int32)
    if xp.__name__ == "cupy":
        return _count_cuda(part_dst, csr.dst, a_start, a_stop, b_start, b_stop)
    return _count_vectorised(part_dst, csr.dst, a_start, a_stop, b_start, b_stop)


def _count_vectorised(a_values: Any, b_values: Any, a_start: Any, a_stop: Any, b_start: Any,
                      b_stop: Any) -> int:
    """Array-API version: expand (edge, member of the shorter list) pairs, binary-search each
    member in the longer list with a fixed number of vectorised halving steps."""
    xp = array_module(a_start)
    values = xp.concatenate([a_values, b_values])  # one array so either list can be "short"
    shift = a_values.shape[0]
    a_len, b_len = a_stop - a_start, b_stop - b_start
    a_short = a_len <= b_len
    s_start = xp.where(a_short, a_start, b_start + shift)
    s_len = xp.where(a_short, a_len, b_len)
    l_start = xp.where(a_short, b_start + shift, a_start)
    l_len = xp.where(a_short, b_len, a_len)
    steps = int(l_len.max()).bit_length()
    pairs_before = xp.cumsum(s_len) - s_len
    found, first = 0, 0
    while first < s_len.shape[0]:  # chunks of whole edges, about PAIRS_PER_CHUNK pairs each
        last = int(xp.searchsorted(pairs_before, pairs_before[first] + PAIRS_PER_CHUNK, "right"))
        last = max(last, first + 1)
        lengths = s_len[first:last]
        owner = xp.repeat(xp.arange(first, last), lengths)
        rank = xp.arange(owner.shape[0]) - (pairs_before[owner] - pairs_before[first])
        wanted = values[s_start[owner] + rank]
        stop = l_start[owner] + l_len[owner]
        low, high = l_start[owner], stop
        for _ in range(steps):  # lower_bound, all pairs in lock-step
            active = low < high
            mid = (low + high) >> 1
            go_right = active & (values[xp.minimum(mid, values.shape[0] - 1)] < wanted)
            low = xp.where(go_right, mid + 1, low)
            high = xp.where(active & ~go_right, mid, high)
        hit = (low < stop) & (values[xp.minimum(low, values.shape[0] - 1)] == wanted)
        found += int(xp.count_nonzero(hit))
        first = last
    return found


_KERNEL_SOURCE = r"""
extern "C" __global__
void intersect_edges(const long long* __restrict__ edges, const long long n_edges,
                     const int* __restrict__ a_values, const long long* __restrict__ a_start,
                     const long long* __restrict__ a_stop,
                     const int* __restrict__ b_values, const long long* __restrict__ b_start,
                     const long long* __restrict__ b_stop,
                     const int group, unsigned long long* __restrict__ total)
{
    const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long slot = thread / group;
    const int lane = (int)(thread % group);
    unsigned long long found = 0;
    if (slot < n_edges) {
        const long long e = edges[slot];
        long long s = a_start[e], s_end = a_stop[e], l = b_start[e], l_end = b_stop[e];
        const int* shorter = a_values;
        const int* longer = b_values;
        if (s_end - s > l_end - l) {  // smaller list first: walk it, search the other
            long long t = s; s = l; l = t;
            t = s_end; s_end = l_end; l_end = t;
            shorter = b_values; longer = a_values;
        }
        long long low = l;
        for (long long i = s + lane; i < s_end; i += group) {
            const int wanted = shorter[i];
            long long high = l_end;
            while (low < high) {  // members ascend per lane, so low only moves forward
                const long long mid = (low + high) >> 1;
                if (longer[mid] < wanted) low = mid + 1; else high = mid;
            }
            if (low < l_end && longer[low] == wanted) ++found;
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1)
        found += __shfl_down_sync(0xffffffffu, found, offset);
    if ((threadIdx.x & 31) == 0 && found) atomicAdd(total, found);
}
"""

_kernel_cache: dict[int, Any] = {}
GROUP_SIZES = (1, 2, 4, 8, 16, 32)
THREADS_PER_BLOCK = 256


def _kernel() -> Any:
    import cupy

    device = cupy.cuda.runtime.getDevice()
    if device not in _kernel_cache:
        _kernel_cache[device] = cupy.RawKernel(_KERNEL_SOURCE, "intersect_edges")
    return _kernel_cache[device]


def _count_cuda(a_values: Any, b_values: Any, a_start: Any, a_stop: Any, b_start: Any,
                b_stop: Any) -> int:
    """One launch per degree class; class = lanes per edge = pow2 ≥ shorter length, ≤ 32."""
    import cupy

    shorter = cupy.minimum(a_stop - a_start, b_stop - b_start)
    group_class = cupy.minimum(
        cupy.ceil(cupy.log2(shorter.astype(cupy.float64))).astype(cupy.int64), 5)
    total = cupy.zeros(1, dtype=cupy.uint64)
    kernel = _kernel()
    for level, group in enumerate(GROUP_SIZES):
        edges = cupy.flatnonzero(group_class == level)
        if edges.shape[0] == 0:
            continue
        threads = edges.shape[0] * group
        blocks = (threads + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
        kernel((blocks,), (THREADS_PER_BLOCK,),
               (edges, cupy.int64(edges.shape[0]), a_values, a_start, a_stop, b_values,
                b_start, b_stop, cupy.int32(group), total))
    return int(total.get()[0])

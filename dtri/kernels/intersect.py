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

from dtri.kernels.bins import unpack_keys
from dtri.kernels.csr import PartitionCSR
from dtri.kernels.dispatch import array_module
from dtri.kernels.wedges import list_ends
from dtri.runtime.staging import runs_on_host

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


def count_against(part: PartitionCSR, group: PartitionCSR, chunk_rows: int) -> int:
    """Triangles closed by the edges of ``part`` whose target lies in ``group``'s source
    range, by the same intersection as :func:`count_intersections`: ``N+(u)`` after ``v``
    from ``part``, ``N+(v)`` from ``group`` (host staging's join: both are CSR). Rows go
    ``chunk_rows`` at a time, so the working arrays stay within a budget."""
    xp = array_module(part.dst)
    rows = part.edges
    found = 0
    for first in range(0, rows, max(1, chunk_rows)):
        last = min(rows, first + max(1, chunk_rows))
        target = part.dst[first:last]
        edge = xp.flatnonzero((target >= group.low) & (target < group.high)) + first
        if edge.shape[0] == 0:
            continue
        source = xp.searchsorted(part.offsets, edge, side="right") - 1
        a_start, a_stop = edge + 1, part.offsets[source + 1]
        local = part.dst[edge].astype(xp.int64) - group.low
        b_start, b_stop = group.offsets[local], group.offsets[local + 1]
        keep = (a_stop > a_start) & (b_stop > b_start)
        if not bool(keep.any()):
            continue
        counter = _count_cuda if xp.__name__ == "cupy" else _count_vectorised
        found += counter(part.dst, group.dst, a_start[keep], a_stop[keep], b_start[keep],
                         b_stop[keep])
    return found


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


def load_group(parts: list[PartitionCSR], device: bool) -> tuple[PartitionCSR, list[int]]:
    """Consecutive partitions' CSRs merged into one CSR over their source range, built on the
    device partition by partition (``device``: move each there first; else NumPy); also
    where each partition's targets start in the merged ``dst``."""
    xp = _device_module(device)
    filled = [p for p in parts if p.edges]
    low = filled[0].low if filled else 0
    high = filled[-1].high if filled else 0
    dst = xp.empty(sum(p.edges for p in parts), dtype=xp.int32)
    degree = xp.zeros(high - low, dtype=xp.int64)
    starts, base = [], 0
    for p in parts:
        starts.append(base)
        if not p.edges:
            continue
        dst[base: base + p.edges] = _moved(p.dst, device)
        offsets = _moved(p.offsets, device)
        degree[p.low - low: p.high - low] = offsets[1:] - offsets[:-1]
        base += p.edges
    offsets = xp.zeros(high - low + 1, dtype=xp.int64)
    xp.cumsum(degree, out=offsets[1:])
    return PartitionCSR(dst, offsets, low), starts


@runs_on_host
def count_group(device: bool, chunk_rows: int, group_size: int, own: tuple[int, ...],
                *parts: PartitionCSR) -> int:
    """One task of host staging's join: triangles closed by the edges of the ``own``
    partitions whose targets lie in the group of the first ``group_size`` of ``parts``
    (consecutive partitions); ``own`` indexes ``parts`` (an own partition inside the group is
    read from the group's copy). The group goes to the device once, as one CSR; each other
    own partition follows it alone, so the task holds the group and one partition."""
    group, starts = load_group(list(parts[:group_size]), device)
    found = 0
    for i in own:
        part = parts[i]
        if not part.edges:
            continue
        if i < group_size:  # already on the device, inside the group
            start = starts[i]
            part = PartitionCSR(group.dst[start: start + part.edges],
                                _moved(part.offsets, device), part.low)
        else:
            part = PartitionCSR(_moved(part.dst, device), _moved(part.offsets, device),
                                part.low)
        found += count_against(part, group, chunk_rows)
    return found


def _device_module(device: bool) -> Any:
    if device:
        import cupy

        return cupy
    import numpy

    return numpy


def _moved(array: Any, device: bool) -> Any:
    """A host array on the device (``device``), or as it is."""
    if not device:
        return array
    from dtri.runtime.gpu import device_array

    return device_array(array)

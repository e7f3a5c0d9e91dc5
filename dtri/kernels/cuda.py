"""The fused intersection as CUDA kernels (CuPy), for :func:`dtri.kernels.intersect.intersect`.

One launch per degree class: a group of ``1..32`` lanes per edge, sized by the shorter list's
length, so long lists spread over a warp and short ones do not idle 31 lanes. Each lane walks
its share of the shorter list, ascending, and binary-searches each member in the longer one
from where its last search ended. The kernel is a template over what it records:

* ``COUNT`` (0): the total only, a warp-wide shuffle reduction and one 64-bit atomic per warp;
  nothing else is read or written, so the count is not slowed by the other modes;
* ``CREDIT`` (1): also the credits ``uv`` (one atomic per lane and edge), ``uw`` and ``vw``
  (one 32-bit atomic per triangle, to the edge's own counter);
* ``STATEFUL`` (2): credits among the edges whose state is not gone;
* ``PEEL`` (3): credits, to alive edges only, of the triangles with a leaving edge.
"""

from __future__ import annotations

from typing import Any

import cupy

from dtri.kernels.csr import CSR

COUNT, CREDIT, STATEFUL, PEEL = 0, 1, 2, 3

KERNEL_SOURCE = r"""
template <int MODE>
__global__ void intersect_edges(
    const long long* __restrict__ edges, const long long n_edges,
    const int* __restrict__ a_values, const long long* __restrict__ a_start,
    const long long* __restrict__ a_stop,
    const int* __restrict__ b_values, const long long* __restrict__ b_start,
    const long long* __restrict__ b_stop,
    const int group, unsigned long long* __restrict__ total,
    const long long* __restrict__ e_pos, unsigned int* __restrict__ uv,
    unsigned int* __restrict__ uw, unsigned int* __restrict__ vw, const int with_vw,
    const unsigned char* __restrict__ a_state, const unsigned char* __restrict__ b_state)
{
    const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long slot = thread / group;
    const int lane = (int)(thread % group);
    unsigned long long found = 0;
    if (slot < n_edges) {
        const long long k = edges[slot];
        long long s = a_start[k], s_end = a_stop[k], l = b_start[k], l_end = b_stop[k];
        const int* shorter = a_values;
        const int* longer = b_values;
        bool swapped = false;
        if (s_end - s > l_end - l) {  // smaller list first: walk it, search the other
            long long t = s; s = l; l = t;
            t = s_end; s_end = l_end; l_end = t;
            shorter = b_values; longer = a_values;
            swapped = true;
        }
        long long e = 0;
        unsigned char se = 1;
        if (MODE != 0) e = e_pos[k];
        if (MODE >= 2) se = a_state[e];
        unsigned int mine = 0;
        long long low = l;
        for (long long i = s + lane; i < s_end; i += group) {
            const int wanted = shorter[i];
            long long high = l_end;
            while (low < high) {  // members ascend per lane, so low only moves forward
                const long long mid = (low + high) >> 1;
                if (longer[mid] < wanted) low = mid + 1; else high = mid;
            }
            if (low < l_end && longer[low] == wanted) {
                if (MODE == 0) {
                    ++found;
                } else {
                    const long long ia = swapped ? low : i;
                    const long long ib = swapped ? i : low;
                    if (MODE == 1) {
                        ++found; ++mine;
                        atomicAdd(uw + ia, 1u);
                        if (with_vw) atomicAdd(vw + ib, 1u);
                    } else {
                        const unsigned char sa = a_state[ia], sb = b_state[ib];
                        if (sa != 0 && sb != 0) {
                            if (MODE == 2) {
                                ++found; ++mine;
                                atomicAdd(uw + ia, 1u);
                                if (with_vw) atomicAdd(vw + ib, 1u);
                            } else if (se == 2 || sa == 2 || sb == 2) {
                                ++found;
                                if (se == 1) ++mine;
                                if (sa == 1) atomicAdd(uw + ia, 1u);
                                if (with_vw && sb == 1) atomicAdd(vw + ib, 1u);
                            }
                        }
                    }
                }
            }
        }
        if (MODE != 0 && mine) atomicAdd(uv + e, mine);
    }
    for (int offset = 16; offset > 0; offset >>= 1)
        found += __shfl_down_sync(0xffffffffu, found, offset);
    if ((threadIdx.x & 31) == 0 && found) atomicAdd(total, found);
}
"""

_modules: dict[int, Any] = {}
GROUP_SIZES = (1, 2, 4, 8, 16, 32)
THREADS_PER_BLOCK = 256
_NAMES = tuple(f"intersect_edges<{mode}>" for mode in (COUNT, CREDIT, STATEFUL, PEEL))


def kernel(mode: int) -> Any:
    """The compiled kernel of ``mode`` on the current device (compiled once per device)."""
    device = cupy.cuda.runtime.getDevice()
    if device not in _modules:
        _modules[device] = cupy.RawModule(code=KERNEL_SOURCE, options=("-std=c++17",),
                                          name_expressions=list(_NAMES))
    return _modules[device].get_function(_NAMES[mode])


def intersect_cuda(part: CSR, group: CSR, uv: Any, uw: Any, vw: Any, part_state: Any,
                   group_state: Any, peel: bool, chunk_rows: int | None) -> int:
    """Triangles of :func:`dtri.kernels.intersect.intersect` on CuPy arrays, crediting ``uv``,
    ``uw`` and ``vw`` in place where they are given; ``chunk_rows`` partition rows per pass."""
    from dtri.kernels.intersect import leaving_sources

    stateful = part_state is not None
    if stateful and uv is None:  # a count among the remaining edges: credits unused
        uv = cupy.zeros(part.edges, dtype=cupy.uint32)
        uw = cupy.zeros(part.edges, dtype=cupy.uint32)
    mode = PEEL if peel else STATEFUL if stateful else CREDIT if uv is not None else COUNT
    part_leaving = leaving_sources(part, part_state) if peel else None
    group_leaving = leaving_sources(group, group_state) if peel else None
    dummy8 = cupy.zeros(1, dtype=cupy.uint8)
    dummy32 = cupy.zeros(1, dtype=cupy.uint32)
    total = cupy.zeros(1, dtype=cupy.uint64)
    rows = part.edges
    step = max(1, chunk_rows or rows)
    for first in range(0, rows, step):
        last = min(rows, first + step)
        target = part.dst[first:last]
        edge = cupy.flatnonzero((target >= group.low) & (target < group.high)) + first
        if stateful:
            edge = edge[part_state[edge] != 0]
        if edge.shape[0] == 0:
            continue
        row = cupy.searchsorted(part.offsets, edge, side="right") - 1
        a_start, a_stop = edge + 1, part.offsets[row + 1]
        local = part.dst[edge].astype(cupy.int64) - group.low
        b_start, b_stop = group.offsets[local], group.offsets[local + 1]
        keep = (a_stop > a_start) & (b_stop > b_start)
        if peel:
            keep &= ((part_state[edge] == 2) | (part_leaving[row] != 0)
                     | (group_leaving[local] != 0))
        if not bool(keep.any()):
            continue
        edge, a_start, a_stop = edge[keep], a_start[keep], a_stop[keep]
        b_start, b_stop = b_start[keep], b_stop[keep]
        shorter = cupy.minimum(a_stop - a_start, b_stop - b_start)
        group_class = cupy.minimum(
            cupy.ceil(cupy.log2(shorter.astype(cupy.float64))).astype(cupy.int64), 5)
        launch = kernel(mode)
        for level, lanes in enumerate(GROUP_SIZES):
            slots = cupy.flatnonzero(group_class == level)
            if slots.shape[0] == 0:
                continue
            threads = slots.shape[0] * lanes
            blocks = (threads + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
            launch((blocks,), (THREADS_PER_BLOCK,), (
                slots, cupy.int64(slots.shape[0]), part.dst, a_start, a_stop, group.dst,
                b_start, b_stop, cupy.int32(lanes), total, edge,
                uv if uv is not None else dummy32, uw if uw is not None else dummy32,
                vw if vw is not None else dummy32, cupy.int32(vw is not None),
                part_state if stateful else dummy8, group_state if stateful else dummy8))
    return int(total.get()[0])

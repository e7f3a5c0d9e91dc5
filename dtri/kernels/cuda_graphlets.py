"""The graphlet kernels as CUDA kernels (CuPy), for :mod:`dtri.kernels.graphlets`.

* ``list_triangles``: a group of ``1..32`` lanes per edge, sized by its shorter list (as the
  intersection's kernels): each lane walks its share of the shorter list and binary-searches
  the longer, and writes each triangle at the edge's next free record (a 64-bit atomic on its
  cursor: records of one edge may come in any order);
* ``clique_counts``: a group of lanes per triangle, sized by the shortest of ``N+(a)`` and
  ``N+(b)`` above ``c`` and ``N+(c)``, walking it and searching the other two;
* ``cycle_records``: a thread per oriented wedge, which finds its edge by a binary search of
  the batch's record starts.
"""

from __future__ import annotations

from typing import Any

import cupy

from dtri.kernels.compiled import compiling

KERNEL_SOURCE = r"""
__device__ __forceinline__ long long lower_bound(const int* values, long long low,
                                                 long long high, int wanted) {
    while (low < high) {
        const long long mid = (low + high) >> 1;
        if (values[mid] < wanted) low = mid + 1; else high = mid;
    }
    return low;
}

// Members of walked[w0:w1] (this lane's share) also in first[f0:f1] and second[s0:s1], each
// credited to per_edge at its position in the partition's list: the walked one, or first's.
__device__ __forceinline__ unsigned long long walk3(
    const int* walked, long long w0, long long w1, const int* first, long long f0,
    long long f1, const int* second, long long s0, long long s1, bool partition_is_first,
    int lane, int group, unsigned long long* per_edge) {
    unsigned long long found = 0;
    for (long long i = w0 + lane; i < w1; i += group) {
        const int w = walked[i];
        f0 = lower_bound(first, f0, f1, w);
        s0 = lower_bound(second, s0, s1, w);
        if (f0 >= f1 || s0 >= s1) break;
        if (first[f0] == w && second[s0] == w) {
            ++found;
            atomicAdd(per_edge + (partition_is_first ? f0 : i), 1ull);
        }
    }
    return found;
}

extern "C" __global__ void list_triangles(
    const long long* __restrict__ slots, const long long n_slots, const int group,
    const int* __restrict__ pdst, const long long* __restrict__ a_stop,
    const int* __restrict__ gdst, const long long* __restrict__ goff, const int glow,
    const long long first, unsigned long long* __restrict__ cursor,
    long long* __restrict__ ab, long long* __restrict__ ac, long long* __restrict__ bc)
{
    const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long slot = thread / group;
    const int lane = (int)(thread % group);
    if (slot >= n_slots) return;
    const long long k = slots[slot];          // edge - first
    const long long e = first + k;
    const int v = pdst[e];
    long long a0 = e + 1, a1 = a_stop[k];
    long long b0 = goff[v - glow], b1 = goff[v - glow + 1];
    const bool swapped = (a1 - a0) > (b1 - b0);
    const int* shorter = swapped ? gdst : pdst;
    const int* longer = swapped ? pdst : gdst;
    long long s0 = swapped ? b0 : a0, s1 = swapped ? b1 : a1;
    long long low = swapped ? a0 : b0;
    const long long l1 = swapped ? a1 : b1;
    for (long long i = s0 + lane; i < s1; i += group) {
        low = lower_bound(longer, low, l1, shorter[i]);
        if (low >= l1) break;
        if (longer[low] == shorter[i]) {
            const long long at = (long long)atomicAdd(cursor + k, 1ull);
            ab[at] = e;
            ac[at] = swapped ? low : i;
            bc[at] = swapped ? i : low;
        }
    }
}

extern "C" __global__ void clique_counts(
    const long long* __restrict__ slots, const long long n_slots, const int group,
    const long long* __restrict__ ab, const long long* __restrict__ ac,
    const long long* __restrict__ bc, const long long* __restrict__ a_stop,
    const int* __restrict__ pdst, const int* __restrict__ gdst,
    const long long* __restrict__ goff, const int glow, const int* __restrict__ tdst,
    const long long* __restrict__ toff, const int tlow,
    unsigned long long* __restrict__ per_record, unsigned long long* __restrict__ per_edge)
{
    const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long slot = thread / group;
    const int lane = (int)(thread % group);
    if (slot >= n_slots) return;
    const long long r = slots[slot];
    const long long e = ab[r], ia = ac[r], ib = bc[r];
    const int b = pdst[e], c = pdst[ia];
    const long long x0 = ia + 1, x1 = a_stop[r];                    // N+(a) above c
    const long long y0 = ib + 1, y1 = goff[b - glow + 1];           // N+(b) above c
    const long long z0 = toff[c - tlow], z1 = toff[c - tlow + 1];   // N+(c)
    const long long lx = x1 - x0, ly = y1 - y0, lz = z1 - z0;
    unsigned long long found;
    if (lx <= ly && lx <= lz)  // walk the shortest, search the other two
        found = walk3(pdst, x0, x1, gdst, y0, y1, tdst, z0, z1, false, lane, group, per_edge);
    else if (ly <= lz)
        found = walk3(gdst, y0, y1, pdst, x0, x1, tdst, z0, z1, true, lane, group, per_edge);
    else
        found = walk3(tdst, z0, z1, pdst, x0, x1, gdst, y0, y1, true, lane, group, per_edge);
    if (found) atomicAdd(per_record + r, found);
}

extern "C" __global__ void cycle_records(
    const long long total, const long long* __restrict__ starts, const long long n_edges,
    const long long* __restrict__ rows, const int* __restrict__ pdst,
    const long long* __restrict__ poff, const int plow, const int* __restrict__ idst,
    const long long* __restrict__ ioff, const long long first, const int bits,
    const int three, long long* __restrict__ out)
{
    const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= total) return;
    long long low = 0, high = n_edges;       // the last edge whose records start at or before r
    while (high - low > 1) {
        const long long mid = (low + high) >> 1;
        if (starts[mid] <= r) low = mid; else high = mid;
    }
    const long long k = low, j = r - starts[k], e = first + k, row = rows[k];
    const long long indegree = ioff[row + 1] - ioff[row];
    const long long x = j < indegree ? (long long)idst[ioff[row] + j]
                                     : (long long)pdst[poff[row] + j - indegree];
    const long long v = pdst[e], u = row + plow;
    if (three) {
        out[r] = (((v << bits) | x) << bits) | u;
    } else {
        out[2 * r] = (v << bits) | x;
        out[2 * r + 1] = u;
    }
}
"""

_modules: dict[int, Any] = {}
GROUP_SIZES = (1, 2, 4, 8, 16, 32)
THREADS_PER_BLOCK = 256


def kernel(name: str) -> Any:
    """A compiled kernel on the current device (the module compiled once per device)."""
    device = cupy.cuda.runtime.getDevice()
    if device not in _modules:
        with compiling():  # compiled, or loaded from CuPy's disk cache
            module = cupy.RawModule(code=KERNEL_SOURCE, options=("-std=c++17",))
            module.compile()
        _modules[device] = module
    return _modules[device].get_function(name)


def by_class(lengths: Any) -> list[tuple[Any, int]]:
    """Slots grouped by the lanes their walk gets: ``(slots, lanes)`` per non-empty class."""
    group_class = cupy.minimum(cupy.ceil(cupy.log2(
        cupy.maximum(lengths, 1).astype(cupy.float64))).astype(cupy.int64), 5)
    classes = []
    for level, lanes in enumerate(GROUP_SIZES):
        slots = cupy.flatnonzero((group_class == level) & (lengths > 0))
        if slots.shape[0]:
            classes.append((slots, lanes))
    return classes


def launch(name: str, slots: Any, lanes: int, *args: Any) -> None:
    threads = int(slots.shape[0]) * lanes
    blocks = (threads + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    kernel(name)((blocks,), (THREADS_PER_BLOCK,),
                 (slots, cupy.int64(slots.shape[0]), cupy.int32(lanes), *args))


def list_triangles_cuda(pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int, ghigh: int,
                        first: int, last: int, starts: Any, ab: Any, ac: Any, bc: Any) -> None:
    """:func:`dtri.kernels.cpu.list_triangles_cpu` on the GPU."""
    edge = cupy.arange(first, last, dtype=cupy.int64)
    a_stop = poff[cupy.searchsorted(poff, edge, side="right")]
    counts = starts[1:] - starts[:-1]
    target = pdst[first:last].astype(cupy.int64)
    inside = (target >= glow) & (target < ghigh) & (counts > 0)
    local = cupy.where(inside, target - glow, 0)
    shorter = cupy.minimum(a_stop - edge - 1, goff[local + 1] - goff[local])
    cursor = starts[:-1].astype(cupy.uint64)
    for slots, lanes in by_class(cupy.where(inside, shorter, 0)):
        launch("list_triangles", slots, lanes, pdst, a_stop, gdst, goff, cupy.int32(glow),
               cupy.int64(first), cursor, ab, ac, bc)


def clique_counts_cuda(pdst: Any, poff: Any, gdst: Any, goff: Any, glow: int, tdst: Any,
                       toff: Any, tlow: int, thigh: int, ab: Any, ac: Any, bc: Any,
                       per_record: Any, per_edge: Any) -> None:
    """:func:`dtri.kernels.cpu.clique_counts_cpu` on the GPU (``per_record``, ``per_edge``:
    int64 zeros, added to by 64-bit atomics)."""
    a_stop = poff[cupy.searchsorted(poff, ab, side="right")]
    c = pdst[ac].astype(cupy.int64)
    b = pdst[ab].astype(cupy.int64)
    inside = (c >= tlow) & (c < thigh)
    top = cupy.where(inside, c - tlow, 0)
    middle = b - glow
    shortest = cupy.minimum(cupy.minimum(a_stop - ac - 1, goff[middle + 1] - bc - 1),
                            toff[top + 1] - toff[top])
    for slots, lanes in by_class(cupy.where(inside, shortest, 0)):
        launch("clique_counts", slots, lanes, ab, ac, bc, a_stop, pdst, gdst, goff,
               cupy.int32(glow), tdst, toff, cupy.int32(tlow), per_record.view(cupy.uint64),
               per_edge.view(cupy.uint64))


def cycle_records_cuda(pdst: Any, poff: Any, plow: int, idst: Any, ioff: Any, first: int,
                       last: int, starts: Any, bits: int, out: Any) -> None:
    """:func:`dtri.kernels.cpu.cycle_records_cpu` on the GPU."""
    total = int(out.shape[0])
    edge = cupy.arange(first, last, dtype=cupy.int64)
    rows = cupy.searchsorted(poff, edge, side="right") - 1
    blocks = (total + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    kernel("cycle_records")((blocks,), (THREADS_PER_BLOCK,), (
        cupy.int64(total), starts, cupy.int64(last - first), rows, pdst, poff,
        cupy.int32(plow), idst, ioff, cupy.int64(first), cupy.int32(bits),
        cupy.int32(out.ndim == 1), out))

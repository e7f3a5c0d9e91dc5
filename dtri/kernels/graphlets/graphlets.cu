
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


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

// Adds the block's ``value``s into ``sum``: one atomic a block. Every thread of the block
// (a multiple of 32 threads) calls it.
__device__ __forceinline__ void add_block(unsigned long long value,
                                          unsigned long long* __restrict__ sum)
{
    __shared__ unsigned long long warps[32];
    for (int offset = 16; offset > 0; offset >>= 1)
        value += __shfl_down_sync(0xffffffffu, value, offset);
    if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = value;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long block = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) block += warps[w];
        if (block) atomicAdd(sum, block);
    }
}

// The class of edge ``e`` (row ``row``) into ``cls`` (dtri.kernels.strategy.edge_class): 255
// nothing to do, 0..5 the lanes of its search group (1 << class), HASHED. Returns a searched
// edge's reads by the model of dtri.kernels.traffic, shorter × (1 + bit-length of longer)
// members; 0 for the others.
__device__ __forceinline__ unsigned long long classify_edge(
    const long long e, const int row, const int* __restrict__ a_values,
    const long long* __restrict__ a_offsets, const long long* __restrict__ b_offsets,
    const long long glow, const long long ghigh, const unsigned char* __restrict__ a_state,
    const unsigned char* __restrict__ a_leaving, const unsigned char* __restrict__ b_leaving,
    const int stateful, const int peel, const long long hash_min, const long long hash_max,
    const double probe_cost, unsigned char* __restrict__ cls)
{
    const long long v = a_values[e];
    unsigned char c = 255;
    unsigned long long reads = 0;
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
                reads = (unsigned long long)shorter * (1 + bit_length(longer));
            }
        }
    }
    *cls = c;
    return reads;
}

// The class of each edge first .. last - 1 (classify_edge); ``searched`` gains the searched
// edges' reads.
extern "C" __global__ void classify_edges(
    const long long first, const long long n, const int* __restrict__ row_of,
    const int* __restrict__ a_values, const long long* __restrict__ a_offsets,
    const long long* __restrict__ b_offsets, const long long glow, const long long ghigh,
    const unsigned char* __restrict__ a_state, const unsigned char* __restrict__ a_leaving,
    const unsigned char* __restrict__ b_leaving, const int stateful, const int peel,
    const long long hash_min, const long long hash_max, const double probe_cost,
    unsigned char* __restrict__ cls, unsigned long long* __restrict__ searched)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long reads = 0;
    if (t < n) {
        reads = classify_edge(first + t, row_of[t], a_values, a_offsets, b_offsets, glow,
                              ghigh, a_state, a_leaving, b_leaving, stateful, peel, hash_min,
                              hash_max, probe_cost, cls + t);
    }
    add_block(reads, searched);
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

// ceil(log2(x)) for x >= 1.
__device__ __forceinline__ int log2_up(long long x)
{
    return 64 - __clzll(x - 1);
}

// The table of a list of ``members``: ``members << spread`` slots rounded up to a power of
// two while that is at most 2**spread_bits slots, else the least power of two at most half
// full; from 2**MIN_TABLE_BITS to 2**max_bits (where the list is at most half of it).
__device__ __forceinline__ int table_bits(long long members, int spread, int spread_bits,
                                          int max_bits)
{
    const int bits = max(min(log2_up(members << spread), spread_bits), log2_up(2 * members));
    return min(max(bits, MIN_TABLE_BITS), max_bits);
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
                                      const long long glow, const int spread,
                                      const int spread_bits, const int max_bits,
                                      long long* __restrict__ stops,
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
    bits[k] = (unsigned char)table_bits(length, spread, spread_bits, max_bits);
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
    const long long* __restrict__ pieces, const int* __restrict__ launch, const int bits,
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
        const int size = 1 << bits;  // every target of a launch has a table of its size
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
            const int bits = launch_bits, size = 1 << bits;  // the launch's table size
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

// The truss peeling round (dtri/kernels/peel): a warp per leaving edge. Its lanes walk the
// shorter of its ends' neighbour lists and binary-search the longer; for each triangle no gone
// edge has broken, and which no lower leaving edge takes, each alive edge loses one from its
// support. An edge whose support falls to threshold - 1 is written to `out`.
#define STATE_GONE 0
#define STATE_ALIVE 1
#define STATE_LEAVING 2

template <typename E>
__global__ void peel_round(const long long* offsets, const int* neighbours, const E* edge,
                           const int* src, const int* dst, const unsigned char* state,
                           int* support, const E* leaving, long long count, int threshold,
                           E* out, unsigned long long* found) {
    const int lane = threadIdx.x & 31;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long f = (((long long)blockIdx.x * blockDim.x) + threadIdx.x) >> 5; f < count;
         f += warps) {
        const E e = leaving[f];
        long long a0 = offsets[src[e]], a1 = offsets[src[e] + 1];
        long long b0 = offsets[dst[e]], b1 = offsets[dst[e] + 1];
        if (a1 - a0 > b1 - b0) {
            long long t0 = a0, t1 = a1;
            a0 = b0; a1 = b1; b0 = t0; b1 = t1;
        }
        for (long long i = a0 + lane; i < a1; i += 32) {
            const int w = neighbours[i];
            long long low = b0, high = b1;
            while (low < high) {
                const long long middle = (low + high) >> 1;
                if (neighbours[middle] < w) low = middle + 1; else high = middle;
            }
            if (low >= b1 || neighbours[low] != w) continue;
            const E j = edge[i], k = edge[low];
            const unsigned char sj = state[j], sk = state[k];
            if (sj == STATE_GONE || sk == STATE_GONE) continue;
            if ((sj == STATE_LEAVING && j < e) || (sk == STATE_LEAVING && k < e)) continue;
            if (sj == STATE_ALIVE && atomicSub(&support[j], 1) == threshold) {
                out[atomicAdd(found, 1ULL)] = j;
            }
            if (sk == STATE_ALIVE && atomicSub(&support[k], 1) == threshold) {
                out[atomicAdd(found, 1ULL)] = k;
            }
        }
    }
}

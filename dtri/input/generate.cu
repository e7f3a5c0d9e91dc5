// Fused generators for the GPU backend: one thread per edge, every level in registers.
// The arithmetic is generate.py's, bit for bit (uint64 wraps modulo 2**64 in both):
// splitmix64's finaliser, the edge hash key + e * gamma, the quadrant per level, the scramble.

typedef unsigned long long u64;

__device__ __forceinline__ u64 splitmix64(u64 x) {
    u64 z = x + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 edge_hash(u64 e, u64 key) {
    return splitmix64(e * 0x9E3779B97F4A7C15ULL + key);
}

// constants: [0, 3) the scramble's multipliers, [3, 6) its addends.
__device__ __forceinline__ u64 scramble(u64 x, int scale, const u64* constants) {
    const u64 mask = (scale >= 64) ? ~0ULL : ((1ULL << scale) - 1);
    const u64 shift = scale / 2 > 1 ? scale / 2 : 1;
    x &= mask;
    for (int r = 0; r < 3; ++r) {
        x = (x * constants[r]) & mask;
        x = (x + constants[3 + r]) & mask;
        x ^= x >> shift;
    }
    return x;
}

// R-MAT edges start .. start + n - 1; keys[l]: the hash key of levels 2l and 2l + 1;
// thresholds: a, a + b, a + b + c as 32-bit fractions.
extern "C" __global__ void rmat_edges(long long* src, long long* dst, long long n, u64 start,
                                      int scale, const u64* keys, u64 t_a, u64 t_ab,
                                      u64 t_abc, const u64* constants) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        const u64 e = start + (u64)i;
        u64 s = 0, d = 0, hashed = 0, uniform;
        for (int level = 0; level < scale; ++level) {
            if ((level & 1) == 0) {
                hashed = edge_hash(e, keys[level >> 1]);
                uniform = hashed & 0xFFFFFFFFULL;
            } else {
                uniform = hashed >> 32;
            }
            const bool row = uniform >= t_ab;
            const bool column = ((uniform >= t_a) && !row) || (uniform >= t_abc);
            s = (s << 1) | (u64)row;
            d = (d << 1) | (u64)column;
        }
        src[i] = (long long)scramble(s, scale, constants);
        dst[i] = (long long)scramble(d, scale, constants);
    }
}

// G(n, m) pairs start .. start + count - 1: each endpoint a hash modulo n.
extern "C" __global__ void gnm_edges(long long* src, long long* dst, long long count,
                                     u64 start, u64 n, u64 key_src, u64 key_dst) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (; i < count; i += stride) {
        const u64 e = start + (u64)i;
        src[i] = (long long)(edge_hash(e, key_src) % n);
        dst[i] = (long long)(edge_hash(e, key_dst) % n);
    }
}

// Global average pooling, NCHW fp16 -> (N, C) fp32: a general, portable solution.
//
// * Planes of up to 1024 values (classifier heads of 7 x 7 to 10 x 10, SE squeezes of
//   14 x 14 to 32 x 32): a block of 256 threads owns a run of consecutive planes, which
//   is one contiguous span of at most 8192 halves (16 KB). It first copies the span into
//   shared memory with 16-byte loads (all of a thread's loads, at most 5, are issued
//   before any is used; the span starts at any 2-byte offset, so the copy covers the
//   16-byte vectors that overlap it and ignores the extra values), then G threads
//   (G = 1, 2, ..., 32, the smallest with hw <= 32 * G) add up each plane from shared
//   memory and combine through shuffles. Every global load is a full, coalesced 16-byte
//   one and each block has its whole span (8 to 16 KB) in flight, whatever hw is (one
//   warp per plane, used before, left most lanes idle on planes of 49 or 100 values and
//   had too few bytes in flight: 0.2x the baseline on 7 x 7). With hw <= 16 a thread adds
//   up several planes so that a span still holds 4096 to 8192 values. Each group
//   starts its walk through the plane at a rotated position
//   (rotation multiplier picked on the host per hw from a few candidates by counting
//   shared-memory bank conflicts of one warp); the order does not change the result
//   beyond fp32 rounding.
// * Larger planes: a block of 256 threads per (plane, chunk). When there are too few
//   planes to fill the GPU (SE squeezes of 56 x 56 to 224 x 224 maps, a batch of one),
//   each plane is split into chunks (grid y) so that ~8 blocks per SM run; each block
//   adds its chunk, reduces through shuffles and one shared partial per warp, and adds
//   its share of the mean into y with one atomicAdd (y is zeroed first on the same
//   stream). With one chunk per plane the mean is stored directly. 16-byte loads
//   (8 halves): a plane starts at any 2-byte offset (h * w is odd for 7 x 7 maps), so each
//   plane is split into a scalar head up to the next 16-byte boundary, a uint4 body and a
//   scalar tail. Four independent loads are in flight per thread in the body loop.
// fp32 accumulation throughout.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define AP_THREADS 256
#define AP_MAX_WARPS 32            // 1024 threads / 32 lanes
#define AP_TILE_PATH_MAX 1024      // planes up to this size: the shared-memory span kernel
#define AP_TILE_HALVES 8192        // values in one block's span, at most
#define AP_TILE_VECS (AP_TILE_HALVES / 8 + 2)                        // 16-byte vectors overlapping it, at most
#define AP_TILE_VPT ((AP_TILE_VECS + AP_THREADS - 1) / AP_THREADS)  // of them per thread
#define AP_ROT_CANDIDATES 9        // rotation multipliers tried: 1, 3, ..., 17
#define AP_MIN_CHUNK 4096          // a chunk of a split plane has at least this many values
#define AP_BLOCKS_PER_SM 8
#define AP_MAX_GRID 2147483647LL

struct ApSpan {
    int64_t head;  // scalars before the first 16-byte boundary
    int64_t nvec;  // uint4 vectors (8 halves) after the head
};

static __device__ __forceinline__ ApSpan ap_split(const __half* p, int64_t n) {
    ApSpan s;
    const int64_t past = (int64_t)((reinterpret_cast<uintptr_t>(p) / sizeof(__half)) % 8);
    int64_t head = past == 0 ? 0 : 8 - past;
    if (head > n) head = n;
    s.head = head;
    s.nvec = (n - head) / 8;
    return s;
}

static __device__ __forceinline__ float ap_word(unsigned int u) {
    return __half2float(__ushort_as_half((unsigned short)(u & 0xffffu))) +
           __half2float(__ushort_as_half((unsigned short)(u >> 16)));
}

static __device__ __forceinline__ float ap_hsum8(uint4 v) {
    return (ap_word(v.x) + ap_word(v.y)) + (ap_word(v.z) + ap_word(v.w));
}

// Sum of vectors [vb, ve) by nt cooperating threads (this one is t).
static __device__ __forceinline__ float ap_sum_vectors(const uint4* __restrict__ pv, int64_t vb, int64_t ve, int t,
                                                       int nt) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    int64_t i = vb + t;
    for (; i + 3 * (int64_t)nt < ve; i += 4 * (int64_t)nt) {
        const uint4 v0 = pv[i];
        const uint4 v1 = pv[i + nt];
        const uint4 v2 = pv[i + 2 * (int64_t)nt];
        const uint4 v3 = pv[i + 3 * (int64_t)nt];
        a0 += ap_hsum8(v0);
        a1 += ap_hsum8(v1);
        a2 += ap_hsum8(v2);
        a3 += ap_hsum8(v3);
    }
    for (; i < ve; i += nt) a0 += ap_hsum8(pv[i]);
    return (a0 + a1) + (a2 + a3);
}

static __device__ __forceinline__ float ap_sum_edges(const __half* __restrict__ p, int64_t n, ApSpan sp, int t,
                                                     int nt) {
    float s = 0.0f;
    for (int64_t j = t; j < sp.head; j += nt) s += __half2float(p[j]);
    for (int64_t j = sp.head + 8 * sp.nvec + t; j < n; j += nt) s += __half2float(p[j]);
    return s;
}

static __device__ __forceinline__ float ap_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// Thread 0 gets the block's sum. All threads call it; blockDim.x a multiple of warpSize.
static __device__ __forceinline__ float ap_block_sum(float v, float* partials) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    v = ap_warp_sum(v);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? partials[lane] : 0.0f;
        v = ap_warp_sum(v);
    }
    __syncthreads();  // partials are reused by the next plane
    return v;
}

// Block b owns planes [b * P, b * P + np), P = (AP_THREADS / G) * R: one contiguous span of
// np * hw <= AP_TILE_HALVES values. G threads (a power of two <= 32) add up a plane, each
// group R planes in turn. rot_mul rotates where each plane's walk starts (bank spreading).
__global__ void __launch_bounds__(AP_THREADS)
avgpool_tile_kernel(const __half* __restrict__ x, float* __restrict__ y, int64_t planes, int hw, int G, int R,
                    int rot_mul, float inv_hw) {
    __shared__ uint4 tile[AP_TILE_VECS];
    const int t = threadIdx.x;
    const int groups = AP_THREADS / G;
    const int P = groups * R;
    const int64_t p0 = (int64_t)blockIdx.x * P;
    const int64_t left = planes - p0;
    const int np = left < (int64_t)P ? (int)left : P;
    const int64_t total = planes * (int64_t)hw;
    // Values are counted from the 16-byte boundary at or below x: x[e] is value e + mis.
    const int mis = (int)((reinterpret_cast<uintptr_t>(x) / sizeof(__half)) % 8);
    const int64_t s = p0 * hw + mis;  // the span's first value
    const int64_t k0 = s / 8;         // the first 16-byte vector overlapping the span
    const int nv = (int)((s + (int64_t)np * hw - 1) / 8 - k0 + 1);
    // x's first 16-byte aligned value is x[(8 - mis) % 8]: vector k (k >= kshift) is xv[k - kshift].
    const uint4* xv = reinterpret_cast<const uint4*>(x + ((8 - mis) & 7));
    const int64_t kshift = mis > 0 ? 1 : 0;
    const unsigned short* xs = reinterpret_cast<const unsigned short*>(x);
    uint4 r[AP_TILE_VPT];
#pragma unroll
    for (int i = 0; i < AP_TILE_VPT; ++i) {  // all loads issued before any store
        const int v = t + i * AP_THREADS;
        if (v < nv) {
            const int64_t k = k0 + v;
            const int64_t first = 8 * k - mis;  // index in x of the vector's first value
            if (first >= 0 && first + 8 <= total) {
                r[i] = xv[k - kshift];
            } else {  // the vector crosses an end of x: only the values inside x are read
                unsigned int wd[4];
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const int64_t e0 = first + 2 * q;
                    const int64_t e1 = e0 + 1;
                    const unsigned int lo = (e0 >= 0 && e0 < total) ? (unsigned int)xs[e0] : 0u;
                    const unsigned int hi = (e1 >= 0 && e1 < total) ? (unsigned int)xs[e1] : 0u;
                    wd[q] = lo | (hi << 16);
                }
                r[i] = make_uint4(wd[0], wd[1], wd[2], wd[3]);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < AP_TILE_VPT; ++i) {
        const int v = t + i * AP_THREADS;
        if (v < nv) tile[v] = r[i];
    }
    __syncthreads();
    const __half* th = reinterpret_cast<const __half*>(tile) + (int)(s - 8 * k0);  // the span's first value
    const int g = t / G;
    const int j = t - g * G;
    // R is uniform: every lane reaches the shuffles.
    for (int rr = 0; rr < R; ++rr) {
        const int pl = g + rr * groups;  // plane within the block
        float acc = 0.0f;
        if (pl < np) {
            const __half* pp = th + pl * hw;
            int idx = j + (rot_mul * pl) % hw;  // < 2 * hw: j < G <= hw
            if (idx >= hw) idx -= hw;
            for (int m = j; m < hw; m += G) {  // values (m + rotation) mod hw, m = j, j + G, ...
                acc += __half2float(pp[idx]);
                idx += G;
                if (idx >= hw) idx -= hw;
            }
        }
        for (int o = G / 2; o > 0; o /= 2) acc += __shfl_xor(acc, o);
        if (j == 0 && pl < np) y[p0 + pl] = acc * inv_hw;
    }
}

// grid.y = chunks; chunks > 1 needs y zeroed beforehand.
__global__ void avgpool_chunk_kernel(const __half* __restrict__ x, float* __restrict__ y, int64_t planes, int64_t hw,
                                     float inv_hw, int chunks) {
    __shared__ float partials[AP_MAX_WARPS];
    const int t = threadIdx.x;
    const int nt = blockDim.x;
    const int64_t chunk = blockIdx.y;
    for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
        const __half* p = x + plane * hw;
        const ApSpan sp = ap_split(p, hw);
        const int64_t per = (sp.nvec + chunks - 1) / chunks;
        const int64_t vb = chunk * per < sp.nvec ? chunk * per : sp.nvec;
        const int64_t ve = vb + per < sp.nvec ? vb + per : sp.nvec;
        float s = ap_sum_vectors(reinterpret_cast<const uint4*>(p + sp.head), vb, ve, t, nt);
        if (chunk == 0) s += ap_sum_edges(p, hw, sp, t, nt);
        s = ap_block_sum(s, partials);
        if (t == 0) {
            if (chunks == 1)
                y[plane] = s * inv_hw;
            else
                atomicAdd(y + plane, s * inv_hw);
        }
    }
}

static int ap_sm_count() {
    static int cached = 0;
    if (cached == 0) {
        int dev = 0;
        int n = 0;
        if (hipGetDevice(&dev) != hipSuccess ||
            hipDeviceGetAttribute(&n, hipDeviceAttributeMultiprocessorCount, dev) != hipSuccess || n <= 0)
            n = 128;
        cached = n;
    }
    return cached;
}

// Shared-memory bank conflicts (32 banks of 4 bytes) of the first warp of a tile block
// over one plane walk, for the span starting at an even and at an odd value.
static int ap_bank_cost(int hw, int G, int mul) {
    int cost = 0;
    for (int off = 0; off < 2; ++off) {
        for (int m = 0; m < hw; m += G) {
            int words[32][32];
            int count[32] = {0};
            int worst = 0;
            for (int l = 0; l < 32; ++l) {
                const int g = l / G;
                const int j = l % G;
                if (m + j >= hw) continue;
                const int idx = (m + j + (mul * g) % hw) % hw;
                const int word = (off + g * hw + idx) >> 1;
                const int bank = word & 31;
                bool seen = false;
                for (int q = 0; q < count[bank]; ++q) seen = seen || words[bank][q] == word;
                if (!seen) {
                    words[bank][count[bank]++] = word;
                    if (count[bank] > worst) worst = count[bank];
                }
            }
            cost += worst;
        }
    }
    return cost;
}

static int ap_rotation(int hw, int G) {
    static int cached[AP_TILE_PATH_MAX + 1] = {0};
    if (cached[hw] == 0) {
        int best = 1;
        int best_cost = ap_bank_cost(hw, G, 1);
        for (int c = 1; c < AP_ROT_CANDIDATES; ++c) {
            const int mul = 2 * c + 1;
            const int cost = ap_bank_cost(hw, G, mul);
            if (cost < best_cost) {
                best_cost = cost;
                best = mul;
            }
        }
        cached[hw] = best;
    }
    return cached[hw];
}

extern "C" int avgpool_global(const __half* x, float* y, int64_t n, int64_t c, int64_t h, int64_t w,
                              hipStream_t stream) {
    const int64_t planes = n * c;
    const int64_t hw = h * w;
    if (planes <= 0 || hw <= 0) return (int)hipSuccess;
    const float inv_hw = 1.0f / (float)hw;
    if (hw <= AP_TILE_PATH_MAX) {
        int G = 1;  // threads per plane: hw <= 32 * G, so (AP_THREADS / G) * hw <= AP_TILE_HALVES
        while (hw > 32 * G) G *= 2;
        const int R = (G == 1 && hw < 32) ? (int)(32 / hw) : 1;  // planes per group: R * hw <= 32
        const int64_t P = (int64_t)(AP_THREADS / G) * R;
        const int64_t blocks = (planes + P - 1) / P;
        if (blocks > AP_MAX_GRID) return (int)hipErrorInvalidValue;
        hipLaunchKernelGGL(avgpool_tile_kernel, dim3((unsigned int)blocks), dim3(AP_THREADS), 0, stream, x, y, planes,
                           (int)hw, G, R, ap_rotation((int)hw, G), inv_hw);
        return (int)hipGetLastError();
    }
    const int64_t target_blocks = (int64_t)ap_sm_count() * AP_BLOCKS_PER_SM;
    int64_t chunks = (target_blocks + planes - 1) / planes;
    int64_t max_chunks = hw / AP_MIN_CHUNK;
    if (max_chunks < 1) max_chunks = 1;
    if (chunks > max_chunks) chunks = max_chunks;
    if (chunks > 65535) chunks = 65535;
    if (chunks > 1) {
        const hipError_t err = hipMemsetAsync(y, 0, (size_t)planes * sizeof(float), stream);
        if (err != hipSuccess) return (int)err;
    }
    const int64_t blocks = planes < AP_MAX_GRID ? planes : AP_MAX_GRID;
    hipLaunchKernelGGL(avgpool_chunk_kernel, dim3((unsigned int)blocks, (unsigned int)chunks), dim3(AP_THREADS), 0,
                       stream, x, y, planes, hw, inv_hw, (int)chunks);
    return (int)hipGetLastError();
}

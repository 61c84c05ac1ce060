// Softmax of scaled attention scores with a causal mask, fp16: a general, portable
// solution.
//
// * Only the visible keys are read: query i of a row sees keys 0 .. kv_len - q_len + i,
//   so the masked part of the row (up to a quarter of the scores in chunked prefill) is
//   never loaded; its outputs are written as zeros.
// * A row is read from memory once: each thread keeps its first MAXV vectors in registers
//   as fp32 (the whole row for kv_len <= 4096 with 16-byte vectors), first as
//   scale * log2(e) * x, then as exp2 of that minus the row max, which the final pass
//   scales by 1 / sum. Anything beyond the cache is re-read (an L1/L2 hit).
// * kv_len <= 1024: one warp per row (warpSize lanes, shuffle reductions, no barrier);
//   longer rows: one block per row with just enough threads (128..1024, multiples of 64)
//   for the cache, reductions through shuffles and one shared slot per warp.
// * Vector width by shape and alignment: 8 halves (16 bytes) when kv_len % 8 == 0 and x, y
//   are 16-byte aligned, 2 halves when kv_len is even, else scalar; the mask boundary may
//   fall inside a vector (its masked elements count as -inf).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define SM_MAX_WARPS 32  // 1024 threads / 32 lanes
#define SM_WARP_PATH_MAX_COLS 1024
#define SM_WARP_BLOCK_THREADS 256
#define SM_MAX_GRID 2147483647LL
#define SM_LOG2E 1.4426950408889634f

// ---- vectors of V halves, addressed by vector index --------------------------------------
static __device__ __forceinline__ void sm_unpack(unsigned int bits, float& lo, float& hi) {
    lo = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    hi = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}
static __device__ __forceinline__ unsigned int sm_pack(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

template <int V>
__device__ __forceinline__ void sm_load(const __half* __restrict__ p, int64_t i, float* f);
template <int V>
__device__ __forceinline__ void sm_store(__half* __restrict__ p, int64_t i, const float* f);

template <>
__device__ __forceinline__ void sm_load<8>(const __half* __restrict__ p, int64_t i, float* f) {
    const uint4 u = reinterpret_cast<const uint4*>(p)[i];
    sm_unpack(u.x, f[0], f[1]);
    sm_unpack(u.y, f[2], f[3]);
    sm_unpack(u.z, f[4], f[5]);
    sm_unpack(u.w, f[6], f[7]);
}
template <>
__device__ __forceinline__ void sm_store<8>(__half* __restrict__ p, int64_t i, const float* f) {
    uint4 u;
    u.x = sm_pack(f[0], f[1]);
    u.y = sm_pack(f[2], f[3]);
    u.z = sm_pack(f[4], f[5]);
    u.w = sm_pack(f[6], f[7]);
    reinterpret_cast<uint4*>(p)[i] = u;
}
template <>
__device__ __forceinline__ void sm_load<2>(const __half* __restrict__ p, int64_t i, float* f) {
    sm_unpack(reinterpret_cast<const unsigned int*>(p)[i], f[0], f[1]);
}
template <>
__device__ __forceinline__ void sm_store<2>(__half* __restrict__ p, int64_t i, const float* f) {
    reinterpret_cast<unsigned int*>(p)[i] = sm_pack(f[0], f[1]);
}
template <>
__device__ __forceinline__ void sm_load<1>(const __half* __restrict__ p, int64_t i, float* f) {
    f[0] = __half2float(p[i]);
}
template <>
__device__ __forceinline__ void sm_store<1>(__half* __restrict__ p, int64_t i, const float* f) {
    p[i] = __float2half_rn(f[0]);
}

// Vector i scaled into the log2 domain, -inf past the last visible key.
template <int V>
__device__ __forceinline__ void sm_load_scaled(const __half* __restrict__ xr, int64_t i, int64_t valid, float sl2,
                                               float* f) {
    sm_load<V>(xr, i, f);
#pragma unroll
    for (int q = 0; q < V; ++q) f[q] = (i * V + q < valid) ? f[q] * sl2 : -INFINITY;
}

// ---- reductions ----------------------------------------------------------------------------
static __device__ __forceinline__ float sm_warp_max(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor(v, offset));
    return v;
}
static __device__ __forceinline__ float sm_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}
// Every thread gets the block's result; blockDim.x a multiple of warpSize, all threads call.
static __device__ __forceinline__ float sm_block_max(float v, float* slots) {
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize, nwarps = blockDim.x / warpSize;
    v = sm_warp_max(v);
    if (lane == 0) slots[warp] = v;
    __syncthreads();
    float r = -INFINITY;
    for (int w = 0; w < nwarps; ++w) r = fmaxf(r, slots[w]);
    __syncthreads();  // the slots are reused
    return r;
}
static __device__ __forceinline__ float sm_block_sum(float v, float* slots) {
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize, nwarps = blockDim.x / warpSize;
    v = sm_warp_sum(v);
    if (lane == 0) slots[warp] = v;
    __syncthreads();
    float r = 0.0f;
    for (int w = 0; w < nwarps; ++w) r += slots[w];
    __syncthreads();
    return r;
}

// ---- kernel: a group (a warp, or the block) per row -----------------------------------------
// Requires kv_len % V == 0 and the matching alignment of x and y.
template <int V, int MAXV, bool WARP_PER_ROW>
__global__ void __launch_bounds__(WARP_PER_ROW ? SM_WARP_BLOCK_THREADS : 1024)
softmax_scale_mask_kernel(const __half* __restrict__ x, __half* __restrict__ y, int64_t rows, int64_t q_len,
                          int64_t kv_len, float sl2) {
    __shared__ float slots[SM_MAX_WARPS];
    int t, nt;
    int64_t first, stride;
    if (WARP_PER_ROW) {
        const int warps_per_block = blockDim.x / warpSize;
        t = threadIdx.x % warpSize;
        nt = warpSize;
        first = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
        stride = (int64_t)gridDim.x * warps_per_block;
    } else {
        t = threadIdx.x;
        nt = blockDim.x;
        first = blockIdx.x;
        stride = gridDim.x;
    }
    const int64_t nvec = kv_len / V;
    // The loop bound depends on the group only: whole warps / blocks reach the reductions.
    for (int64_t row = first; row < rows; row += stride) {
        const int64_t i = row % q_len;
        const int64_t valid = kv_len - q_len + i + 1;  // visible keys (>= 1)
        const int64_t vvalid = (valid + V - 1) / V;    // vectors holding a visible key
        const __half* xr = x + row * kv_len;
        __half* yr = y + row * kv_len;

        float c[MAXV][V];
        float m = -INFINITY;
#pragma unroll
        for (int k = 0; k < MAXV; ++k) {
            const int64_t vi = t + (int64_t)k * nt;
            if (vi < vvalid) {
                sm_load_scaled<V>(xr, vi, valid, sl2, c[k]);
#pragma unroll
                for (int q = 0; q < V; ++q) m = fmaxf(m, c[k][q]);
            }
        }
        for (int64_t vi = t + (int64_t)MAXV * nt; vi < vvalid; vi += nt) {
            float f[V];
            sm_load_scaled<V>(xr, vi, valid, sl2, f);
#pragma unroll
            for (int q = 0; q < V; ++q) m = fmaxf(m, f[q]);
        }
        m = WARP_PER_ROW ? sm_warp_max(m) : sm_block_max(m, slots);  // finite: key 0 is visible

        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < MAXV; ++k) {
            const int64_t vi = t + (int64_t)k * nt;
            if (vi < vvalid) {
#pragma unroll
                for (int q = 0; q < V; ++q) {
                    c[k][q] = exp2f(c[k][q] - m);  // 0 for masked elements
                    s += c[k][q];
                }
            }
        }
        for (int64_t vi = t + (int64_t)MAXV * nt; vi < vvalid; vi += nt) {
            float f[V];
            sm_load_scaled<V>(xr, vi, valid, sl2, f);
#pragma unroll
            for (int q = 0; q < V; ++q) s += exp2f(f[q] - m);
        }
        s = WARP_PER_ROW ? sm_warp_sum(s) : sm_block_sum(s, slots);
        const float inv = 1.0f / s;

        const float zeros[V] = {};
#pragma unroll
        for (int k = 0; k < MAXV; ++k) {
            const int64_t vi = t + (int64_t)k * nt;
            if (vi < vvalid) {
#pragma unroll
                for (int q = 0; q < V; ++q) c[k][q] *= inv;
                sm_store<V>(yr, vi, c[k]);
            } else if (vi < nvec) {
                sm_store<V>(yr, vi, zeros);
            }
        }
        for (int64_t vi = t + (int64_t)MAXV * nt; vi < nvec; vi += nt) {
            if (vi < vvalid) {
                float f[V];
                sm_load_scaled<V>(xr, vi, valid, sl2, f);
#pragma unroll
                for (int q = 0; q < V; ++q) f[q] = exp2f(f[q] - m) * inv;
                sm_store<V>(yr, vi, f);
            } else {
                sm_store<V>(yr, vi, zeros);
            }
        }
    }
}

template <int V>
static void sm_launch(const __half* x, __half* y, int64_t rows, int64_t q_len, int64_t kv_len, float sl2,
                      hipStream_t stream) {
    // Vectors cached per thread: 32 values with 16-byte vectors, 16 otherwise.
    constexpr int MAXV = V == 8 ? 4 : V == 2 ? 8 : 16;
    const int64_t nvec = kv_len / V;
    if (kv_len <= SM_WARP_PATH_MAX_COLS) {
        // Grid sized for 32-lane warps; with 64-lane warps the grid-stride loop covers the rest.
        const int64_t rows_per_block = SM_WARP_BLOCK_THREADS / 32;
        int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        if (blocks > SM_MAX_GRID) blocks = SM_MAX_GRID;
        hipLaunchKernelGGL((softmax_scale_mask_kernel<V, MAXV, true>), dim3((unsigned int)blocks),
                           dim3(SM_WARP_BLOCK_THREADS), 0, stream, x, y, rows, q_len, kv_len, sl2);
    } else {
        int64_t threads = (nvec + MAXV - 1) / MAXV;
        threads = (threads + 63) / 64 * 64;  // whole warps for 32 and 64 lanes
        if (threads < 128) threads = 128;
        if (threads > 1024) threads = 1024;
        const int64_t blocks = rows < SM_MAX_GRID ? rows : SM_MAX_GRID;
        hipLaunchKernelGGL((softmax_scale_mask_kernel<V, MAXV, false>), dim3((unsigned int)blocks),
                           dim3((unsigned int)threads), 0, stream, x, y, rows, q_len, kv_len, sl2);
    }
}

extern "C" int softmax_scale_mask(const __half* x, __half* y, int64_t batch_heads, int64_t q_len, int64_t kv_len,
                                  float scale, hipStream_t stream) {
    const int64_t rows = batch_heads * q_len;
    if (rows <= 0 || kv_len <= 0 || q_len > kv_len) return (int)hipSuccess;
    const float sl2 = scale * SM_LOG2E;
    const uintptr_t mis = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
    if (kv_len % 8 == 0 && mis % 16 == 0)
        sm_launch<8>(x, y, rows, q_len, kv_len, sl2, stream);
    else if (kv_len % 2 == 0 && mis % 4 == 0)
        sm_launch<2>(x, y, rows, q_len, kv_len, sl2, stream);
    else
        sm_launch<1>(x, y, rows, q_len, kv_len, sl2, stream);
    return (int)hipGetLastError();
}

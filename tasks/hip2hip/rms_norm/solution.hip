// RMSNorm over the last dimension, fp16 in/out, fp32 accumulation: a general, portable
// solution.
//
// * Vector width by shape and alignment: 8 halves (16-byte uint4) when cols % 8 == 0 and
//   x, weight, y are 16-byte aligned; 2 halves (4 bytes) when cols is even; else scalar.
// * cols <= 1024: one warp per row (shuffle reduction, no barrier); otherwise one block per
//   row with just enough threads (128..1024) that each caches all its vectors.
// * The row is read from global memory once where it fits: the first MAXV vectors of each
//   thread stay in registers between the sum of squares and the write (all of the row for
//   cols <= 32768 with 16-byte vectors and 1024 threads); anything beyond is re-read (from
//   L1/L2), so every cols is handled.
// * fp32 sum of squares, inv_rms = rsqrt(mean + eps), y = x * inv_rms * weight rounded once.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define RMS_MAX_WARPS 32  // 1024 threads / 32 lanes
#define RMS_WARP_PATH_MAX_COLS 1024
#define RMS_WARP_BLOCK_THREADS 256
#define RMS_MAX_GRID 2147483647LL

// ---- vectors of V halves, addressed by vector index -----------------------------------
static __device__ __forceinline__ void rms_unpack(unsigned int bits, float& lo, float& hi) {
    lo = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    hi = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}
static __device__ __forceinline__ unsigned int rms_pack(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

template <int V>
__device__ __forceinline__ void rms_load(const __half* __restrict__ p, int64_t i, float* f);
template <int V>
__device__ __forceinline__ void rms_store(__half* __restrict__ p, int64_t i, const float* f);

template <>
__device__ __forceinline__ void rms_load<8>(const __half* __restrict__ p, int64_t i, float* f) {
    const uint4 u = reinterpret_cast<const uint4*>(p)[i];
    rms_unpack(u.x, f[0], f[1]);
    rms_unpack(u.y, f[2], f[3]);
    rms_unpack(u.z, f[4], f[5]);
    rms_unpack(u.w, f[6], f[7]);
}
template <>
__device__ __forceinline__ void rms_store<8>(__half* __restrict__ p, int64_t i, const float* f) {
    uint4 u;
    u.x = rms_pack(f[0], f[1]);
    u.y = rms_pack(f[2], f[3]);
    u.z = rms_pack(f[4], f[5]);
    u.w = rms_pack(f[6], f[7]);
    reinterpret_cast<uint4*>(p)[i] = u;
}
template <>
__device__ __forceinline__ void rms_load<2>(const __half* __restrict__ p, int64_t i, float* f) {
    rms_unpack(reinterpret_cast<const unsigned int*>(p)[i], f[0], f[1]);
}
template <>
__device__ __forceinline__ void rms_store<2>(__half* __restrict__ p, int64_t i, const float* f) {
    reinterpret_cast<unsigned int*>(p)[i] = rms_pack(f[0], f[1]);
}
template <>
__device__ __forceinline__ void rms_load<1>(const __half* __restrict__ p, int64_t i, float* f) {
    f[0] = __half2float(p[i]);
}
template <>
__device__ __forceinline__ void rms_store<1>(__half* __restrict__ p, int64_t i, const float* f) {
    p[i] = __float2half_rn(f[0]);
}

// ---- reductions ------------------------------------------------------------------------
static __device__ __forceinline__ float rms_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// Every thread gets the block's sum; blockDim.x a multiple of warpSize, all threads call it.
static __device__ __forceinline__ float rms_block_sum(float v, float* partials) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    v = rms_warp_sum(v);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < nwarps; ++w) total += partials[w];
    __syncthreads();  // partials are reused by the next row
    return total;
}

// ---- kernel: a group (a warp, or the block) per row ---------------------------------------
// Requires cols % V == 0 and the matching alignment of x, weight and y.
template <int V, int MAXV, bool WARP_PER_ROW>
__global__ void __launch_bounds__(WARP_PER_ROW ? RMS_WARP_BLOCK_THREADS : 1024)
rms_norm_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                __half* __restrict__ y, int64_t rows, int64_t cols, float eps) {
    __shared__ float partials[RMS_MAX_WARPS];
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
    const int64_t nvec = cols / V;
    const float inv_cols = 1.0f / (float)cols;
    // The loop bound depends on the group only: whole warps / blocks reach the reductions.
    for (int64_t row = first; row < rows; row += stride) {
        const __half* xr = x + row * cols;
        __half* yr = y + row * cols;
        float cache[MAXV][V];
        float sum_sq = 0.0f;
#pragma unroll
        for (int k = 0; k < MAXV; ++k) {
            const int64_t i = t + (int64_t)k * nt;
            if (i < nvec) {
                rms_load<V>(xr, i, cache[k]);
#pragma unroll
                for (int q = 0; q < V; ++q) sum_sq += cache[k][q] * cache[k][q];
            }
        }
        for (int64_t i = t + (int64_t)MAXV * nt; i < nvec; i += nt) {
            float f[V];
            rms_load<V>(xr, i, f);
#pragma unroll
            for (int q = 0; q < V; ++q) sum_sq += f[q] * f[q];
        }
        sum_sq = WARP_PER_ROW ? rms_warp_sum(sum_sq) : rms_block_sum(sum_sq, partials);
        const float inv_rms = rsqrtf(sum_sq * inv_cols + eps);
#pragma unroll
        for (int k = 0; k < MAXV; ++k) {
            const int64_t i = t + (int64_t)k * nt;
            if (i < nvec) {
                float w[V];
                rms_load<V>(weight, i, w);
#pragma unroll
                for (int q = 0; q < V; ++q) w[q] = cache[k][q] * inv_rms * w[q];
                rms_store<V>(yr, i, w);
            }
        }
        for (int64_t i = t + (int64_t)MAXV * nt; i < nvec; i += nt) {
            float f[V], w[V];
            rms_load<V>(xr, i, f);
            rms_load<V>(weight, i, w);
#pragma unroll
            for (int q = 0; q < V; ++q) f[q] = f[q] * inv_rms * w[q];
            rms_store<V>(yr, i, f);
        }
    }
}

template <int V>
static void rms_launch(const __half* x, const __half* weight, __half* y, int64_t rows, int64_t cols, float eps,
                       hipStream_t stream) {
    // Vectors cached per thread: 32 values for 16-byte vectors, 16 / 8 for the 4-byte and
    // scalar paths, whose per-element addressing costs more registers (<= 64 per thread,
    // so that 1024-thread blocks launch).
    constexpr int MAXV = V == 8 ? 4 : 8;
    const int64_t nvec = cols / V;
    if (cols <= RMS_WARP_PATH_MAX_COLS) {
        // Grid sized for 32-lane warps; with 64-lane warps the grid-stride loop covers the rest.
        const int64_t rows_per_block = RMS_WARP_BLOCK_THREADS / 32;
        int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        if (blocks > RMS_MAX_GRID) blocks = RMS_MAX_GRID;
        hipLaunchKernelGGL((rms_norm_kernel<V, MAXV, true>), dim3((unsigned int)blocks), dim3(RMS_WARP_BLOCK_THREADS),
                           0, stream, x, weight, y, rows, cols, eps);
    } else {
        // Enough threads that each caches at most MAXV vectors, in multiples of 64 (whole
        // warps for 32 and 64 lanes), 128 to 1024.
        int64_t threads = (nvec + MAXV - 1) / MAXV;
        threads = (threads + 63) / 64 * 64;
        if (threads < 128) threads = 128;
        if (threads > 1024) threads = 1024;
        const int64_t blocks = rows < RMS_MAX_GRID ? rows : RMS_MAX_GRID;
        hipLaunchKernelGGL((rms_norm_kernel<V, MAXV, false>), dim3((unsigned int)blocks), dim3((unsigned int)threads),
                           0, stream, x, weight, y, rows, cols, eps);
    }
}

extern "C" int rms_norm(const __half* x, const __half* weight, __half* y, int64_t rows, int64_t cols, float eps,
                        hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const uintptr_t any_misalign =
        reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(weight) | reinterpret_cast<uintptr_t>(y);
    if (cols % 8 == 0 && any_misalign % 16 == 0)
        rms_launch<8>(x, weight, y, rows, cols, eps, stream);
    else if (cols % 2 == 0 && any_misalign % 4 == 0)
        rms_launch<2>(x, weight, y, rows, cols, eps, stream);
    else
        rms_launch<1>(x, weight, y, rows, cols, eps, stream);
    return (int)hipGetLastError();
}

// Row softmax, fp32: a SPECIALISED kernel, tuned on the seen shapes and wrong elsewhere.
//
// Deliberately flawed (the harness must catch it). The fast path keeps a row in
// registers as float4 chunks of 4 * 256 = 1024 columns (cols = 1024 .. 4096 in the seen
// configs), so x is read from memory once. It assumes cols is a multiple of 1024: the
// remaining cols % 1024 columns are written in a tail loop with the max and the sum of
// the cached chunks only, so their exponentials are missing from the denominator and
// every value of such a row is wrong (e.g. cols = 1500 or 2500). There is no
// out-of-bounds access and no misaligned vector access: rows that do not fit the fast
// path (cols % 4 != 0, cols < 1024, cols >= 5120) go to a plain, correct
// block-per-row kernel.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define SPEC_THREADS 256
#define SPEC_MAX_CHUNKS 4
#define SPEC_MAX_WARPS 32
#define SPEC_MAX_GRID 2147483647LL

static __device__ __forceinline__ void merge(float& m, float& s, float om, float os) {
    const float nm = fmaxf(m, om);
    if (nm == -INFINITY) return;
    s = s * expf(m - nm) + os * expf(om - nm);
    m = nm;
}

static __device__ __forceinline__ void block_merge(float& m, float& s, float* red_m, float* red_s) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        const float om = __shfl_xor(m, offset);
        const float os = __shfl_xor(s, offset);
        merge(m, s, om, os);
    }
    if (lane == 0) {
        red_m[warp] = m;
        red_s[warp] = s;
    }
    __syncthreads();
    m = lane < nwarps ? red_m[lane] : -INFINITY;
    s = lane < nwarps ? red_s[lane] : 0.0f;
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        const float om = __shfl_xor(m, offset);
        const float os = __shfl_xor(s, offset);
        merge(m, s, om, os);
    }
    __syncthreads();
}

// Fast path: blockDim.x == SPEC_THREADS, 1 <= chunks <= SPEC_MAX_CHUNKS, cols % 4 == 0,
// x and y 16-byte aligned.
__global__ void softmax_registers_kernel(const float* __restrict__ x, float* __restrict__ y,
                                         int64_t rows, int64_t cols, int chunks) {
    __shared__ float red_m[SPEC_MAX_WARPS];
    __shared__ float red_s[SPEC_MAX_WARPS];
    const int t = threadIdx.x;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float4* xv = reinterpret_cast<const float4*>(x + row * cols);
        float4* yv = reinterpret_cast<float4*>(y + row * cols);
        float4 v[SPEC_MAX_CHUNKS];
        float m = -INFINITY;
#pragma unroll
        for (int c = 0; c < SPEC_MAX_CHUNKS; ++c) {
            if (c < chunks) {
                v[c] = xv[c * SPEC_THREADS + t];
                m = fmaxf(m, fmaxf(fmaxf(v[c].x, v[c].y), fmaxf(v[c].z, v[c].w)));
            }
        }
        float s = 0.0f;
#pragma unroll
        for (int c = 0; c < SPEC_MAX_CHUNKS; ++c) {
            if (c < chunks) s += expf(v[c].x - m) + expf(v[c].y - m) + expf(v[c].z - m) + expf(v[c].w - m);
        }
        block_merge(m, s, red_m, red_s);
        const float inv_s = 1.0f / s;
#pragma unroll
        for (int c = 0; c < SPEC_MAX_CHUNKS; ++c) {
            if (c < chunks) {
                float4 o;
                o.x = expf(v[c].x - m) * inv_s;
                o.y = expf(v[c].y - m) * inv_s;
                o.z = expf(v[c].z - m) * inv_s;
                o.w = expf(v[c].w - m) * inv_s;
                yv[c * SPEC_THREADS + t] = o;
            }
        }
        // Tail past the cached chunks (empty on the seen shapes). BUG, kept on purpose:
        // it reuses the statistics of the cached chunks instead of folding the tail into
        // the max and the sum.
        const float* xr = x + row * cols;
        float* yr = y + row * cols;
        for (int64_t i = (int64_t)chunks * 4 * SPEC_THREADS + t; i < cols; i += SPEC_THREADS) {
            yr[i] = expf(xr[i] - m) * inv_s;
        }
    }
}

// Fallback: correct for every shape, one block per row, scalar coalesced accesses.
__global__ void softmax_fallback_kernel(const float* __restrict__ x, float* __restrict__ y,
                                        int64_t rows, int64_t cols) {
    __shared__ float red_m[SPEC_MAX_WARPS];
    __shared__ float red_s[SPEC_MAX_WARPS];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* xr = x + row * cols;
        float* yr = y + row * cols;
        float m = -INFINITY;
        float s = 0.0f;
        for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
            const float v = xr[i];
            if (v > m) {
                s = s * expf(m - v) + 1.0f;
                m = v;
            } else {
                s += expf(v - m);
            }
        }
        block_merge(m, s, red_m, red_s);
        const float inv_s = 1.0f / s;
        for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) yr[i] = expf(xr[i] - m) * inv_s;
    }
}

extern "C" int softmax(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int64_t blocks = rows < SPEC_MAX_GRID ? rows : SPEC_MAX_GRID;
    const int64_t chunks = cols / (4 * SPEC_THREADS);
    const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    if (aligned && cols % 4 == 0 && chunks >= 1 && chunks <= SPEC_MAX_CHUNKS) {
        hipLaunchKernelGGL(softmax_registers_kernel, dim3((unsigned int)blocks), dim3(SPEC_THREADS), 0, stream,
                           x, y, rows, cols, (int)chunks);
    } else {
        hipLaunchKernelGGL(softmax_fallback_kernel, dim3((unsigned int)blocks), dim3(SPEC_THREADS), 0, stream,
                           x, y, rows, cols);
    }
    return (int)hipGetLastError();
}

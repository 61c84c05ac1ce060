// RMSNorm, fp16: a SPECIALISED kernel, tuned on the seen shapes and wrong elsewhere.
//
// Deliberately flawed (the harness must catch it). The fast path uses 256 threads per row,
// 16-byte vectors of 8 halves, and keeps the row in registers as VPT vectors per thread,
// with VPT = cols / 2048 fixed at compile time (1, 2 or 4 on the seen shapes: cols = 2048,
// 4096, 8192). VPT is rounded down, so when cols is a multiple of 8 but not of 2048
// (e.g. 5120 = 2.5 * 2048) the last cols % 2048 columns are neither summed nor written:
// the output is partly unwritten and the rest is scaled by a wrong rms. Every access stays
// inside the row and 16-byte aligned, so it never faults. Shapes outside the fast path
// (cols % 8 != 0, cols < 2048, cols > 16384, unaligned pointers) go to a plain, correct
// block-per-row kernel.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define SPEC_THREADS 256
#define SPEC_MAX_WARPS 32
#define SPEC_MAX_GRID 2147483647LL

static __device__ __forceinline__ float spec_block_sum(float v, float* partials) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < nwarps; ++w) total += partials[w];
    __syncthreads();
    return total;
}

static __device__ __forceinline__ void spec_unpack8(const uint4& u, float* f) {
    const unsigned int words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        f[2 * k] = __half2float(__ushort_as_half((unsigned short)(words[k] & 0xffffu)));
        f[2 * k + 1] = __half2float(__ushort_as_half((unsigned short)(words[k] >> 16)));
    }
}

static __device__ __forceinline__ unsigned int spec_pack2(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

// blockDim.x == SPEC_THREADS; handles vectors [0, VPT * SPEC_THREADS) of each row only.
template <int VPT>
__global__ void rms_norm_registers_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                          __half* __restrict__ y, int64_t rows, int64_t cols, float eps) {
    __shared__ float partials[SPEC_MAX_WARPS];
    const int t = threadIdx.x;
    const float inv_cols = 1.0f / (float)cols;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const uint4* xv = reinterpret_cast<const uint4*>(x + row * cols);
        uint4* yv = reinterpret_cast<uint4*>(y + row * cols);
        const uint4* wv = reinterpret_cast<const uint4*>(weight);
        float f[VPT][8];
        float sum_sq = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            spec_unpack8(xv[k * SPEC_THREADS + t], f[k]);
#pragma unroll
            for (int q = 0; q < 8; ++q) sum_sq += f[k][q] * f[k][q];
        }
        const float inv_rms = rsqrtf(spec_block_sum(sum_sq, partials) * inv_cols + eps);
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            float w[8];
            spec_unpack8(wv[k * SPEC_THREADS + t], w);
            uint4 o;
            o.x = spec_pack2(f[k][0] * inv_rms * w[0], f[k][1] * inv_rms * w[1]);
            o.y = spec_pack2(f[k][2] * inv_rms * w[2], f[k][3] * inv_rms * w[3]);
            o.z = spec_pack2(f[k][4] * inv_rms * w[4], f[k][5] * inv_rms * w[5]);
            o.w = spec_pack2(f[k][6] * inv_rms * w[6], f[k][7] * inv_rms * w[7]);
            yv[k * SPEC_THREADS + t] = o;
        }
    }
}

// Fallback: correct for every shape, one block per row, scalar coalesced accesses.
__global__ void rms_norm_fallback_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                         __half* __restrict__ y, int64_t rows, int64_t cols, float eps) {
    __shared__ float partials[SPEC_MAX_WARPS];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const __half* xr = x + row * cols;
        __half* yr = y + row * cols;
        float sum_sq = 0.0f;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            const float v = __half2float(xr[j]);
            sum_sq += v * v;
        }
        const float inv_rms = rsqrtf(spec_block_sum(sum_sq, partials) / (float)cols + eps);
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
            yr[j] = __float2half_rn(__half2float(xr[j]) * inv_rms * __half2float(weight[j]));
    }
}

#define SPEC_CASE(n)                                                                                        \
    case n:                                                                                                 \
        hipLaunchKernelGGL(rms_norm_registers_kernel<n>, dim3((unsigned int)blocks), dim3(SPEC_THREADS), 0, \
                           stream, x, weight, y, rows, cols, eps);                                          \
        break;

extern "C" int rms_norm(const __half* x, const __half* weight, __half* y, int64_t rows, int64_t cols, float eps,
                        hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int64_t blocks = rows < SPEC_MAX_GRID ? rows : SPEC_MAX_GRID;
    const bool aligned = (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(weight) |
                          reinterpret_cast<uintptr_t>(y)) % 16 == 0;
    const int64_t vpt = cols / (8 * SPEC_THREADS);  // BUG, kept on purpose: rounds down
    if (aligned && cols % 8 == 0 && vpt >= 1 && vpt <= 8) {
        switch ((int)vpt) {
            SPEC_CASE(1)
            SPEC_CASE(2)
            SPEC_CASE(3)
            SPEC_CASE(4)
            SPEC_CASE(5)
            SPEC_CASE(6)
            SPEC_CASE(7)
            SPEC_CASE(8)
        }
    } else {
        hipLaunchKernelGGL(rms_norm_fallback_kernel, dim3((unsigned int)blocks), dim3(SPEC_THREADS), 0, stream, x,
                           weight, y, rows, cols, eps);
    }
    return (int)hipGetLastError();
}

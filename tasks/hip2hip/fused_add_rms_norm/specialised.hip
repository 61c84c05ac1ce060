// Fused residual add + RMSNorm, fp16: a SPECIALISED kernel, tuned on the seen shapes and
// wrong elsewhere.
//
// Deliberately flawed (the harness must catch it). The fast path runs 256 threads per row
// with 16-byte vectors of 8 halves and keeps the row in registers as VPT vectors per
// thread, VPT = cols / 2048 rounded down to 1, 2, 4 or 8 (exact on the seen hidden sizes
// 2048, 4096, 8192). When cols is a multiple of 8 but not 2048 * VPT (e.g. 5120 or 6144),
// the last columns are neither summed nor written: y and residual_out are partly left
// unwritten and the rest is scaled by a wrong rms. Every access stays inside the row and
// aligned, so it never faults. Shapes outside the fast path (cols % 8 != 0, cols < 2048,
// unaligned pointers) go to a plain, correct block-per-row kernel.

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

static __device__ __forceinline__ uint4 spec_pack8(const float* f) {
    uint4 u;
    u.x = spec_pack2(f[0], f[1]);
    u.y = spec_pack2(f[2], f[3]);
    u.z = spec_pack2(f[4], f[5]);
    u.w = spec_pack2(f[6], f[7]);
    return u;
}

// blockDim.x == SPEC_THREADS; handles vectors [0, VPT * SPEC_THREADS) of each row only.
template <int VPT>
__global__ void __launch_bounds__(SPEC_THREADS)
spec_fast_kernel(const __half* __restrict__ x, const __half* __restrict__ residual, const __half* __restrict__ weight,
                 __half* __restrict__ y, __half* __restrict__ residual_out, int64_t rows, int64_t cols, float eps) {
    __shared__ float partials[SPEC_MAX_WARPS];
    const uint4* w4 = reinterpret_cast<const uint4*>(weight);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t off = row * cols;
        const uint4* x4 = reinterpret_cast<const uint4*>(x + off);
        const uint4* r4 = reinterpret_cast<const uint4*>(residual + off);
        uint4* y4 = reinterpret_cast<uint4*>(y + off);
        uint4* h4 = reinterpret_cast<uint4*>(residual_out + off);
        float h[VPT][8];
        float sum_sq = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int i = threadIdx.x + k * SPEC_THREADS;
            float r[8];
            spec_unpack8(x4[i], h[k]);
            spec_unpack8(r4[i], r);
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                h[k][q] += r[q];
                sum_sq += h[k][q] * h[k][q];
            }
            h4[i] = spec_pack8(h[k]);
        }
        sum_sq = spec_block_sum(sum_sq, partials);
        const float inv_rms = rsqrtf(sum_sq / (float)cols + eps);
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int i = threadIdx.x + k * SPEC_THREADS;
            float w[8];
            spec_unpack8(w4[i], w);
#pragma unroll
            for (int q = 0; q < 8; ++q) w[q] = h[k][q] * inv_rms * w[q];
            y4[i] = spec_pack8(w);
        }
    }
}

// Correct for every shape: one block per row, scalar accesses, two passes.
__global__ void __launch_bounds__(SPEC_THREADS)
spec_generic_kernel(const __half* __restrict__ x, const __half* __restrict__ residual,
                    const __half* __restrict__ weight, __half* __restrict__ y, __half* __restrict__ residual_out,
                    int64_t rows, int64_t cols, float eps) {
    __shared__ float partials[SPEC_MAX_WARPS];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t off = row * cols;
        float sum_sq = 0.0f;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            const float h = __half2float(x[off + j]) + __half2float(residual[off + j]);
            residual_out[off + j] = __float2half_rn(h);
            sum_sq += h * h;
        }
        sum_sq = spec_block_sum(sum_sq, partials);
        const float inv_rms = rsqrtf(sum_sq / (float)cols + eps);
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            const float h = __half2float(x[off + j]) + __half2float(residual[off + j]);
            y[off + j] = __float2half_rn(h * inv_rms * __half2float(weight[j]));
        }
    }
}

extern "C" int fused_add_rms_norm(const __half* x, const __half* residual, const __half* weight, __half* y,
                                  __half* residual_out, int64_t rows, int64_t cols, float eps, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const uintptr_t any = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(residual) |
                          reinterpret_cast<uintptr_t>(weight) | reinterpret_cast<uintptr_t>(y) |
                          reinterpret_cast<uintptr_t>(residual_out);
    const unsigned int blocks = (unsigned int)(rows < SPEC_MAX_GRID ? rows : SPEC_MAX_GRID);
    const int64_t v = cols / 2048;
    if (cols % 8 != 0 || any % 16 != 0 || v < 1) {
        hipLaunchKernelGGL(spec_generic_kernel, dim3(blocks), dim3(SPEC_THREADS), 0, stream, x, residual, weight, y,
                           residual_out, rows, cols, eps);
    } else if (v >= 8) {
        hipLaunchKernelGGL(spec_fast_kernel<8>, dim3(blocks), dim3(SPEC_THREADS), 0, stream, x, residual, weight, y,
                           residual_out, rows, cols, eps);
    } else if (v >= 4) {
        hipLaunchKernelGGL(spec_fast_kernel<4>, dim3(blocks), dim3(SPEC_THREADS), 0, stream, x, residual, weight, y,
                           residual_out, rows, cols, eps);
    } else if (v >= 2) {
        hipLaunchKernelGGL(spec_fast_kernel<2>, dim3(blocks), dim3(SPEC_THREADS), 0, stream, x, residual, weight, y,
                           residual_out, rows, cols, eps);
    } else {
        hipLaunchKernelGGL(spec_fast_kernel<1>, dim3(blocks), dim3(SPEC_THREADS), 0, stream, x, residual, weight, y,
                           residual_out, rows, cols, eps);
    }
    return (int)hipGetLastError();
}

// NCHW -> NHWC permute, fp16: a general, portable solution.
//
// Per image the permute is a transpose of a [C, HW] matrix (HW = height * width) into
// [HW, C]. Three kernels, chosen by shape:
// * C and HW even, C >= 64: 64 x 64 tiles through shared memory, 32 x 8 threads; every
//   global access is a 4-byte half2, and each warp reads 128 contiguous bytes of a channel
//   plane and writes 128 contiguous bytes of an output row. Even C and HW keep every half2
//   4-byte aligned. Edge tiles are masked per half2 (an even index below an even bound has
//   its odd neighbour inside too).
// * Other C >= 16: 32 x 32 tiles of single halves through shared memory (odd C or HW).
// * C < 16 (e.g. RGB input): one thread per pixel reads its C values (coalesced across the
//   warp, one plane at a time) and writes its C contiguous output values.
// grid = (HW tiles, C tiles, batch); batch <= 4096 and C tiles <= 64 fit the y/z limits.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define T64 64
#define T32 32
#define ROWS 8  // threadIdx.y extent: each thread covers tile / ROWS rows

__global__ void nchw_to_nhwc_tile64_half2_kernel(const __half* __restrict__ x, __half* __restrict__ y, int64_t C,
                                                 int64_t HW) {
    __shared__ __half tile[T64][T64 + 2] __attribute__((aligned(16)));  // [channel][position], rows stay 4-byte aligned
    const int tx = threadIdx.x;            // 0..31
    const int ty = threadIdx.y;            // 0..7
    const int64_t n = blockIdx.z;
    const int64_t s0 = (int64_t)blockIdx.x * T64;
    const int64_t c0 = (int64_t)blockIdx.y * T64;
    const __half* xb = x + n * C * HW;
    __half* yb = y + n * HW * C;
    const int64_t s = s0 + 2 * tx;
#pragma unroll
    for (int k = 0; k < T64; k += ROWS) {
        const int64_t c = c0 + ty + k;
        if (c < C && s < HW)
            *reinterpret_cast<__half2*>(&tile[ty + k][2 * tx]) =
                *reinterpret_cast<const __half2*>(xb + c * HW + s);
    }
    __syncthreads();
    const int64_t c = c0 + 2 * tx;
#pragma unroll
    for (int k = 0; k < T64; k += ROWS) {
        const int64_t so = s0 + ty + k;
        if (so < HW && c < C) {
            __half2 o;
            o.x = tile[2 * tx][ty + k];
            o.y = tile[2 * tx + 1][ty + k];
            *reinterpret_cast<__half2*>(yb + so * C + c) = o;
        }
    }
}

__global__ void nchw_to_nhwc_tile32_kernel(const __half* __restrict__ x, __half* __restrict__ y, int64_t C,
                                           int64_t HW) {
    __shared__ __half tile[T32][T32 + 1];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int64_t n = blockIdx.z;
    const int64_t s0 = (int64_t)blockIdx.x * T32;
    const int64_t c0 = (int64_t)blockIdx.y * T32;
    const __half* xb = x + n * C * HW;
    __half* yb = y + n * HW * C;
#pragma unroll
    for (int k = 0; k < T32; k += ROWS) {
        const int64_t c = c0 + ty + k;
        const int64_t s = s0 + tx;
        if (c < C && s < HW) tile[ty + k][tx] = xb[c * HW + s];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T32; k += ROWS) {
        const int64_t s = s0 + ty + k;
        const int64_t c = c0 + tx;
        if (s < HW && c < C) yb[s * C + c] = tile[tx][ty + k];
    }
}

// C < 16: one thread per (image, position).
__global__ void nchw_to_nhwc_few_channels_kernel(const __half* __restrict__ x, __half* __restrict__ y, int64_t pixels,
                                                 int64_t C, int64_t HW) {
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pixels) return;
    const int64_t n = p / HW;
    const int64_t s = p - n * HW;
    const __half* src = x + n * C * HW + s;
    __half* dst = y + p * C;
    for (int64_t c = 0; c < C; ++c) dst[c] = src[c * HW];
}

extern "C" int nchw_to_nhwc(const __half* x, __half* y, int64_t batch, int64_t channels, int64_t height,
                            int64_t width, hipStream_t stream) {
    const int64_t HW = height * width;
    const int64_t C = channels;
    if (batch <= 0 || C <= 0 || HW <= 0) return (int)hipSuccess;
    const bool aligned4 = reinterpret_cast<uintptr_t>(x) % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;
    if (C < 16) {
        const int64_t pixels = batch * HW;
        const int threads = 256;
        const int64_t blocks = (pixels + threads - 1) / threads;
        hipLaunchKernelGGL(nchw_to_nhwc_few_channels_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, y,
                           pixels, C, HW);
    } else if (aligned4 && C % 2 == 0 && HW % 2 == 0 && C >= 64) {
        const dim3 grid((unsigned int)((HW + T64 - 1) / T64), (unsigned int)((C + T64 - 1) / T64),
                        (unsigned int)batch);
        hipLaunchKernelGGL(nchw_to_nhwc_tile64_half2_kernel, grid, dim3(32, ROWS), 0, stream, x, y, C, HW);
    } else {
        const dim3 grid((unsigned int)((HW + T32 - 1) / T32), (unsigned int)((C + T32 - 1) / T32),
                        (unsigned int)batch);
        hipLaunchKernelGGL(nchw_to_nhwc_tile32_kernel, grid, dim3(T32, ROWS), 0, stream, x, y, C, HW);
    }
    return (int)hipGetLastError();
}

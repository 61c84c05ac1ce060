// Linear layer with a fused bias + exact GELU epilogue, y = gelu(x @ w^T + bias), fp16
// in/out, fp32 accumulation: the starting kernel.
//
// The textbook shared-memory tiled GEMM: a 16 x 16 block computes a 16 x 16 tile of y,
// one output per thread. Each step stages a 16 x 16 slice of x and of w (both contiguous
// along k, read coalesced) in shared memory as fp32, then every thread runs 16
// multiply-adds reading both operands from shared memory (w padded to 17 floats a row, so
// the column reads hit 16 different banks). The bias and the GELU are applied in fp32
// before the single rounding to fp16. Correct for every shape (out-of-range elements are
// zeros), but each multiply-add costs two shared-memory loads and there is no register
// reuse, so the shared-memory pipe, not the FMA units, sets the pace.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define LBG_TILE 16

__global__ void linear_bias_gelu_tiled16_kernel(const __half* __restrict__ x, const __half* __restrict__ w,
                                                const __half* __restrict__ bias, __half* __restrict__ y, int64_t m,
                                                int64_t n, int64_t k) {
    __shared__ float xs[LBG_TILE][LBG_TILE + 1];
    __shared__ float ws[LBG_TILE][LBG_TILE + 1];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int64_t row = (int64_t)blockIdx.y * LBG_TILE + ty;   // row of x and y
    const int64_t n0 = (int64_t)blockIdx.x * LBG_TILE;
    const int64_t col = n0 + tx;                                // column of y = row of w
    const int64_t wrow = n0 + ty;                               // the row of w this thread stages
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < k; k0 += LBG_TILE) {
        const int64_t kk = k0 + tx;
        xs[ty][tx] = (row < m && kk < k) ? __half2float(x[row * k + kk]) : 0.0f;
        ws[ty][tx] = (wrow < n && kk < k) ? __half2float(w[wrow * k + kk]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int p = 0; p < LBG_TILE; ++p) acc += xs[ty][p] * ws[tx][p];
        __syncthreads();
    }
    if (row < m && col < n) {
        const float v = acc + __half2float(bias[col]);
        y[row * n + col] = __float2half_rn(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
    }
}

extern "C" int linear_bias_gelu_fp16(const __half* x, const __half* w, const __half* bias, __half* y, int64_t m,
                                     int64_t n, int64_t k, hipStream_t stream) {
    if (m <= 0 || n <= 0) return (int)hipSuccess;
    if ((m + LBG_TILE - 1) / LBG_TILE > 65535) return (int)hipErrorInvalidValue;
    const dim3 block(LBG_TILE, LBG_TILE);
    const dim3 grid((unsigned int)((n + LBG_TILE - 1) / LBG_TILE), (unsigned int)((m + LBG_TILE - 1) / LBG_TILE));
    hipLaunchKernelGGL(linear_bias_gelu_tiled16_kernel, grid, block, 0, stream, x, w, bias, y, m, n, k);
    return (int)hipGetLastError();
}

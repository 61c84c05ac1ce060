// W8A8 int8 GEMM with per-token and per-channel scales to fp16 (SmoothQuant): the starting
// kernel.
//
// The textbook shared-memory tiled GEMM: a 16 x 16 block computes a 16 x 16 tile of y,
// one output per thread. Each step stages a 16 x 16 slice of x and of w (both contiguous
// along k, read coalesced, one byte per thread) in shared memory as int32, then every
// thread runs 16 integer multiply-adds reading both operands from shared memory (w padded
// to 17 words a row, so the column reads hit 16 different banks). The exact int32 sum is
// scaled by x_scale[r] * w_scale[j] in fp32 and rounded to fp16 once. Correct for every
// shape (out-of-range elements are zeros), but each multiply-add costs two shared-memory
// loads and there is no register reuse, so the shared-memory pipe sets the pace; the
// global loads are single bytes.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define W8_TILE 16

__global__ void w8a8_gemm_tiled16_kernel(const int8_t* __restrict__ x, const int8_t* __restrict__ w,
                                         const float* __restrict__ x_scale, const float* __restrict__ w_scale,
                                         __half* __restrict__ y, int64_t m, int64_t n, int64_t k) {
    __shared__ int xs[W8_TILE][W8_TILE + 1];
    __shared__ int ws[W8_TILE][W8_TILE + 1];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int64_t row = (int64_t)blockIdx.y * W8_TILE + ty;   // row of x and y
    const int64_t n0 = (int64_t)blockIdx.x * W8_TILE;
    const int64_t col = n0 + tx;                               // column of y = row of w
    const int64_t wrow = n0 + ty;                              // the row of w this thread stages
    int acc = 0;
    for (int64_t k0 = 0; k0 < k; k0 += W8_TILE) {
        const int64_t kk = k0 + tx;
        xs[ty][tx] = (row < m && kk < k) ? (int)x[row * k + kk] : 0;
        ws[ty][tx] = (wrow < n && kk < k) ? (int)w[wrow * k + kk] : 0;
        __syncthreads();
#pragma unroll
        for (int p = 0; p < W8_TILE; ++p) acc += xs[ty][p] * ws[tx][p];
        __syncthreads();
    }
    if (row < m && col < n) y[row * n + col] = __float2half_rn((float)acc * x_scale[row] * w_scale[col]);
}

extern "C" int w8a8_int8_gemm(const int8_t* x, const int8_t* w, const float* x_scale, const float* w_scale, __half* y,
                              int64_t m, int64_t n, int64_t k, hipStream_t stream) {
    if (m <= 0 || n <= 0) return (int)hipSuccess;
    if ((m + W8_TILE - 1) / W8_TILE > 65535) return (int)hipErrorInvalidValue;
    const dim3 block(W8_TILE, W8_TILE);
    const dim3 grid((unsigned int)((n + W8_TILE - 1) / W8_TILE), (unsigned int)((m + W8_TILE - 1) / W8_TILE));
    hipLaunchKernelGGL(w8a8_gemm_tiled16_kernel, grid, block, 0, stream, x, w, x_scale, w_scale, y, m, n, k);
    return (int)hipGetLastError();
}

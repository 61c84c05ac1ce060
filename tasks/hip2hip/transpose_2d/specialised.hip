// 2-D transpose, fp32: a SPECIALISED kernel, tuned on the seen shapes and wrong elsewhere.
//
// Deliberately flawed (the harness must catch it). The seen shapes have both sides a
// multiple of 32, so the fast path launches floor(cols / 32) x floor(rows / 32) blocks of
// full 32 x 32 tiles and drops every bounds check. When a side is not a multiple of 32 the
// partial tiles on the right and bottom edges are never launched: those outputs stay
// unwritten (e.g. rows = 1500, or cols = 40). Nothing is read or written outside the
// tensors. A matrix with a side shorter than 32 goes to a plain, correct kernel.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define SPEC_TILE 32
#define SPEC_ROWS_PER_PASS 8
#define SPEC_MAX_GRID_Y 65535

__global__ void transpose_full_tiles_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                                            int64_t cols, int64_t row_tiles) {
    __shared__ float tile[SPEC_TILE][SPEC_TILE + 1];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int64_t j0 = (int64_t)blockIdx.x * SPEC_TILE;
    for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
        const int64_t i0 = rt * SPEC_TILE;
#pragma unroll
        for (int k = 0; k < SPEC_TILE; k += SPEC_ROWS_PER_PASS) tile[ty + k][tx] = x[(i0 + ty + k) * cols + j0 + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < SPEC_TILE; k += SPEC_ROWS_PER_PASS) y[(j0 + ty + k) * rows + i0 + tx] = tile[tx][ty + k];
        __syncthreads();
    }
}

// Fallback for tiny sides: one thread per element, correct for every shape.
__global__ void transpose_simple_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                                        int64_t cols) {
    const int64_t n = rows * cols;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const int64_t i = e / cols;
        const int64_t j = e - i * cols;
        y[j * rows + i] = x[e];
    }
}

extern "C" int transpose_2d(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int64_t col_tiles = cols / SPEC_TILE;  // BUG, kept on purpose: partial tiles dropped
    const int64_t row_tiles = rows / SPEC_TILE;
    if (col_tiles >= 1 && row_tiles >= 1) {
        const int64_t gy = row_tiles < SPEC_MAX_GRID_Y ? row_tiles : SPEC_MAX_GRID_Y;
        hipLaunchKernelGGL(transpose_full_tiles_kernel, dim3((unsigned int)col_tiles, (unsigned int)gy),
                           dim3(SPEC_TILE, SPEC_ROWS_PER_PASS), 0, stream, x, y, rows, cols, row_tiles);
    } else {
        int64_t blocks = (rows * cols + 255) / 256;
        if (blocks > 65535) blocks = 65535;
        hipLaunchKernelGGL(transpose_simple_kernel, dim3((unsigned int)blocks), dim3(256), 0, stream, x, y, rows,
                           cols);
    }
    return (int)hipGetLastError();
}

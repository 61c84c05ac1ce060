// 2-D transpose, fp32: a general, portable solution.
//
// Classic shared-memory tiling: a block of 32 x 8 threads moves a 32 x 32 tile. It reads
// the tile row by row (coalesced along x's rows) into shared memory, then writes it back
// column by column (coalesced along y's rows). The tile has one column of padding
// (32 x 33 floats) so that reading a column of it hits 32 different banks. Every thread
// moves 4 values per tile; edge tiles are bounds-checked, so any shape works. Row tiles
// beyond 65535 are covered by a grid-stride loop on grid.y.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define TP_TILE 32
#define TP_ROWS_PER_PASS 8  // blockDim.y
#define TP_MAX_GRID_Y 65535

__global__ void transpose_tiled_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                                       int64_t cols, int64_t row_tiles) {
    __shared__ float tile[TP_TILE][TP_TILE + 1];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int64_t j0 = (int64_t)blockIdx.x * TP_TILE;  // first column of x in this tile
    for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
        const int64_t i0 = rt * TP_TILE;  // first row of x in this tile
        const int64_t j = j0 + tx;
#pragma unroll
        for (int k = 0; k < TP_TILE; k += TP_ROWS_PER_PASS) {
            const int64_t i = i0 + ty + k;
            if (i < rows && j < cols) tile[ty + k][tx] = x[i * cols + j];
        }
        __syncthreads();
        const int64_t i = i0 + tx;  // now a column of y
#pragma unroll
        for (int k = 0; k < TP_TILE; k += TP_ROWS_PER_PASS) {
            const int64_t jj = j0 + ty + k;
            if (jj < cols && i < rows) y[jj * rows + i] = tile[tx][ty + k];
        }
        __syncthreads();  // the tile is refilled for the next row tile
    }
}

extern "C" int transpose_2d(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int64_t col_tiles = (cols + TP_TILE - 1) / TP_TILE;
    const int64_t row_tiles = (rows + TP_TILE - 1) / TP_TILE;
    const int64_t gy = row_tiles < TP_MAX_GRID_Y ? row_tiles : TP_MAX_GRID_Y;
    hipLaunchKernelGGL(transpose_tiled_kernel, dim3((unsigned int)col_tiles, (unsigned int)gy),
                       dim3(TP_TILE, TP_ROWS_PER_PASS), 0, stream, x, y, rows, cols, row_tiles);
    return (int)hipGetLastError();
}

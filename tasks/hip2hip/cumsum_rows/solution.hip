// Inclusive prefix sum along the last dimension, fp32: a general, portable solution.
//
// A row is scanned by a group of threads (a warp for cols <= 2048, else a block of 256 or,
// for fewer than 1024 rows, 1024 threads) in tiles of 8 * group-size values:
//   1. each thread loads 8 consecutive values (two float4 when the rows are 16-byte
//      aligned, i.e. cols % 4 == 0) and scans them in registers;
//   2. the threads' totals are scanned across the warp with __shfl_up (log2(warpSize)
//      steps); in the block case the warps' totals go through shared memory and are
//      scanned by warp 0 (two barriers per tile);
//   3. each value gets the carry of the previous tiles plus its thread's exclusive offset,
//      and the tile's total is added to the carry.
// Reads and writes are coalesced; every value is read and written once. Each scan step
// works on warpSize lanes (32 or 64), nothing assumes a width.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define CS_V 8               // values per thread per tile
#define CS_MAX_WARPS 32      // 1024 threads / 32 lanes
#define CS_WARP_PATH_MAX_COLS 2048
#define CS_WARP_BLOCK_THREADS 256
#define CS_MAX_GRID 2147483647LL

// Inclusive scan across the warp; every lane of the warp must call it.
static __device__ __forceinline__ float cs_warp_inclusive(float v, int lane) {
    for (int offset = 1; offset < warpSize; offset *= 2) {
        const float other = __shfl_up(v, offset);
        if (lane >= offset) v += other;
    }
    return v;
}

template <bool VEC4, bool WARP_PER_ROW>
__global__ void cumsum_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
    __shared__ float warp_offsets[CS_MAX_WARPS];
    __shared__ float tile_total_shared;
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    int t, nt;
    int64_t first, stride;
    if (WARP_PER_ROW) {
        t = lane;
        nt = warpSize;
        first = (int64_t)blockIdx.x * nwarps + warp;
        stride = (int64_t)gridDim.x * nwarps;
    } else {
        t = threadIdx.x;
        nt = blockDim.x;
        first = blockIdx.x;
        stride = gridDim.x;
    }
    const int64_t tile = (int64_t)nt * CS_V;
    // Loop bounds depend on the group only: whole warps / blocks reach shuffles and barriers.
    for (int64_t row = first; row < rows; row += stride) {
        const float* xr = x + row * cols;
        float* yr = y + row * cols;
        float carry = 0.0f;
        for (int64_t base = 0; base < cols; base += tile) {
            const int64_t j0 = base + (int64_t)t * CS_V;
            const bool full = j0 + CS_V <= cols;
            float v[CS_V];
            if (VEC4 && full) {
                const float4 a = *reinterpret_cast<const float4*>(xr + j0);
                const float4 b = *reinterpret_cast<const float4*>(xr + j0 + 4);
                v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
                v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
            } else {
#pragma unroll
                for (int q = 0; q < CS_V; ++q) v[q] = j0 + q < cols ? xr[j0 + q] : 0.0f;
            }
#pragma unroll
            for (int q = 1; q < CS_V; ++q) v[q] += v[q - 1];

            // Exclusive offset of this thread within the tile, and the tile's total.
            const float incl = cs_warp_inclusive(v[CS_V - 1], lane);
            float excl = __shfl_up(incl, 1);
            if (lane == 0) excl = 0.0f;
            float tile_total;
            if (WARP_PER_ROW) {
                tile_total = __shfl(incl, warpSize - 1);
            } else {
                if (lane == warpSize - 1) warp_offsets[warp] = incl;
                __syncthreads();
                if (warp == 0) {
                    const float w = lane < nwarps ? warp_offsets[lane] : 0.0f;
                    const float w_incl = cs_warp_inclusive(w, lane);
                    if (lane < nwarps) warp_offsets[lane] = w_incl - w;  // exclusive
                    if (lane == nwarps - 1) tile_total_shared = w_incl;
                }
                __syncthreads();
                excl += warp_offsets[warp];
                tile_total = tile_total_shared;
                __syncthreads();  // the next tile rewrites warp_offsets and tile_total_shared
            }
            const float offset = carry + excl;
#pragma unroll
            for (int q = 0; q < CS_V; ++q) v[q] += offset;
            if (VEC4 && full) {
                *reinterpret_cast<float4*>(yr + j0) = make_float4(v[0], v[1], v[2], v[3]);
                *reinterpret_cast<float4*>(yr + j0 + 4) = make_float4(v[4], v[5], v[6], v[7]);
            } else {
#pragma unroll
                for (int q = 0; q < CS_V; ++q)
                    if (j0 + q < cols) yr[j0 + q] = v[q];
            }
            carry += tile_total;
        }
    }
}

template <bool VEC4>
static void cs_launch(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (cols <= CS_WARP_PATH_MAX_COLS) {
        // Grid sized for 32-lane warps; with 64-lane warps the grid-stride loop covers the rest.
        const int64_t rows_per_block = CS_WARP_BLOCK_THREADS / 32;
        int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        if (blocks > CS_MAX_GRID) blocks = CS_MAX_GRID;
        hipLaunchKernelGGL((cumsum_rows_kernel<VEC4, true>), dim3((unsigned int)blocks), dim3(CS_WARP_BLOCK_THREADS), 0,
                           stream, x, y, rows, cols);
    } else {
        const int threads = rows < 1024 ? 1024 : 256;
        const int64_t blocks = rows < CS_MAX_GRID ? rows : CS_MAX_GRID;
        hipLaunchKernelGGL((cumsum_rows_kernel<VEC4, false>), dim3((unsigned int)blocks), dim3(threads), 0, stream, x,
                           y, rows, cols);
    }
}

extern "C" int cumsum_rows(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const bool vec4 = cols % 4 == 0 && (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 == 0;
    if (vec4)
        cs_launch<true>(x, y, rows, cols, stream);
    else
        cs_launch<false>(x, y, rows, cols, stream);
    return (int)hipGetLastError();
}

// C = A @ B, fp32, row-major: a general, portable solution.
//
// * Block tile 64 x 64 of C, 256 threads, k in steps of 16. Each step stages a 64 x 16
//   slice of A (stored transposed, k-major) and a 16 x 64 slice of B in shared memory;
//   each thread then computes a 4 x 4 micro-tile of C in registers, reading per k one
//   float4 of A and one float4 of B from shared memory for 16 multiply-adds.
// * Global loads are 16-byte float4 when the rows allow it (k % 4 == 0 for A,
//   n % 4 == 0 for B, 16-byte aligned bases), scalar otherwise; out-of-range elements of
//   edge tiles are loaded as zeros, so any m, n, k works. C is stored as float4 when
//   n % 4 == 0, with bounds checks on the edges.
// * Every product is summed in fp32 in k order, as the naive kernel does.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define GM_BM 64
#define GM_BN 64
#define GM_BK 16
#define GM_THREADS 256
#define GM_A_STRIDE (GM_BM + 4)  // floats per k-row of the A tile: padded, still 16-byte multiple
#define GM_MAX_GRID_Y 65535

template <bool VEC_A, bool VEC_B, bool VEC_C>
__global__ void gemm_tiled_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                  int64_t m, int64_t n, int64_t k, int64_t row_tiles) {
    // float4 storage keeps the tiles 16-byte aligned for the float4 reads below.
    __shared__ float4 as4[GM_BK * GM_A_STRIDE / 4];
    __shared__ float4 bs4[GM_BK * GM_BN / 4];
    float* as = reinterpret_cast<float*>(as4);  // as[kk * GM_A_STRIDE + mm]
    float* bs = reinterpret_cast<float*>(bs4);  // bs[kk * GM_BN + nn]

    const int tid = threadIdx.x;
    const int tx = tid % 16;  // micro-tile column group: columns 4 * tx .. 4 * tx + 3
    const int ty = tid / 16;  // micro-tile row group: rows 4 * ty .. 4 * ty + 3
    const int64_t n0 = (int64_t)blockIdx.x * GM_BN;

    for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
        const int64_t m0 = rt * GM_BM;
        float acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

        for (int64_t k0 = 0; k0 < k; k0 += GM_BK) {
            // ---- stage A[m0 .. m0+63][k0 .. k0+15] transposed into as ----
            if (VEC_A) {
                const int r = tid / 4;        // 0..63
                const int c4 = (tid % 4) * 4;  // 0, 4, 8, 12
                const int64_t gr = m0 + r;
                const int64_t gk = k0 + c4;   // k % 4 == 0: the 4 values are all in or all out
                float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (gr < m && gk < k) v = *reinterpret_cast<const float4*>(a + gr * k + gk);
                as[(c4 + 0) * GM_A_STRIDE + r] = v.x;
                as[(c4 + 1) * GM_A_STRIDE + r] = v.y;
                as[(c4 + 2) * GM_A_STRIDE + r] = v.z;
                as[(c4 + 3) * GM_A_STRIDE + r] = v.w;
            } else {
                const int cc = tid % GM_BK;
#pragma unroll
                for (int p = 0; p < 4; ++p) {
                    const int r = tid / GM_BK + 16 * p;
                    const int64_t gr = m0 + r;
                    const int64_t gk = k0 + cc;
                    as[cc * GM_A_STRIDE + r] = (gr < m && gk < k) ? a[gr * k + gk] : 0.0f;
                }
            }
            // ---- stage B[k0 .. k0+15][n0 .. n0+63] into bs ----
            if (VEC_B) {
                const int r = tid / 16;        // 0..15
                const int c4 = (tid % 16) * 4;  // 0..60
                const int64_t gk = k0 + r;
                const int64_t gn = n0 + c4;    // n % 4 == 0: the 4 values are all in or all out
                float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (gk < k && gn < n) v = *reinterpret_cast<const float4*>(b + gk * n + gn);
                *reinterpret_cast<float4*>(bs + r * GM_BN + c4) = v;
            } else {
                const int cc = tid % GM_BN;
#pragma unroll
                for (int p = 0; p < 4; ++p) {
                    const int r = tid / GM_BN + 4 * p;
                    const int64_t gk = k0 + r;
                    const int64_t gn = n0 + cc;
                    bs[r * GM_BN + cc] = (gk < k && gn < n) ? b[gk * n + gn] : 0.0f;
                }
            }
            __syncthreads();

            // ---- 4 x 4 micro-tile, 16 steps of k ----
#pragma unroll
            for (int kk = 0; kk < GM_BK; ++kk) {
                const float4 av = *reinterpret_cast<const float4*>(as + kk * GM_A_STRIDE + 4 * ty);
                const float4 bv = *reinterpret_cast<const float4*>(bs + kk * GM_BN + 4 * tx);
                const float ar[4] = {av.x, av.y, av.z, av.w};
                const float br[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j) acc[i][j] += ar[i] * br[j];
            }
            __syncthreads();  // the tiles are refilled by the next step
        }

        // ---- store the micro-tile ----
        const int64_t gc = n0 + 4 * tx;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int64_t gr = m0 + 4 * ty + i;
            if (gr >= m) continue;
            float* crow = c + gr * n;
            if (VEC_C && gc + 3 < n) {
                *reinterpret_cast<float4*>(crow + gc) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (gc + j < n) crow[gc + j] = acc[i][j];
            }
        }
    }
}

template <bool VEC_A, bool VEC_B>
static void gm_launch(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, dim3 grid,
                      int64_t row_tiles, hipStream_t stream) {
    const bool vec_c = n % 4 == 0 && reinterpret_cast<uintptr_t>(c) % 16 == 0;
    if (vec_c)
        hipLaunchKernelGGL((gemm_tiled_kernel<VEC_A, VEC_B, true>), grid, dim3(GM_THREADS), 0, stream, a, b, c, m, n,
                           k, row_tiles);
    else
        hipLaunchKernelGGL((gemm_tiled_kernel<VEC_A, VEC_B, false>), grid, dim3(GM_THREADS), 0, stream, a, b, c, m, n,
                           k, row_tiles);
}

extern "C" int gemm_fp32(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
                         hipStream_t stream) {
    if (m <= 0 || n <= 0) return (int)hipSuccess;
    const int64_t col_tiles = (n + GM_BN - 1) / GM_BN;
    const int64_t row_tiles = (m + GM_BM - 1) / GM_BM;
    const int64_t gy = row_tiles < GM_MAX_GRID_Y ? row_tiles : GM_MAX_GRID_Y;
    const dim3 grid((unsigned int)col_tiles, (unsigned int)gy);
    const bool vec_a = k % 4 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0;
    const bool vec_b = n % 4 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
    if (vec_a && vec_b)
        gm_launch<true, true>(a, b, c, m, n, k, grid, row_tiles, stream);
    else if (vec_a)
        gm_launch<true, false>(a, b, c, m, n, k, grid, row_tiles, stream);
    else if (vec_b)
        gm_launch<false, true>(a, b, c, m, n, k, grid, row_tiles, stream);
    else
        gm_launch<false, false>(a, b, c, m, n, k, grid, row_tiles, stream);
    return (int)hipGetLastError();
}

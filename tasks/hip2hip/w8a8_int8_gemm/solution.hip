// W8A8 int8 GEMM with per-token and per-channel scales to fp16 (SmoothQuant): a general,
// portable solution (plain HIP: no dp4a, WMMA or MFMA).
//
// * The int8 codes are converted to fp32 once, when a tile is staged in shared memory, and
//   the inner loop runs fp32 FMAs (twice the rate of 32-bit integer multiply-adds on
//   NVIDIA parts). The sum of k products of codes below 127^2 is exact in fp32 up to 2^24
//   and then carries a relative error ~1e-7 per addition: ~1e-6 at the end, far inside the
//   fp16 tolerance.
// * Register blocking: 256 threads compute a BM x BN tile of y, each thread a TM x TN
//   micro-tile (8 x 8 on 128 x 128 tiles, 4 x 4 on 64 x 64 tiles), fed by float4 reads of
//   the transposed (k-major) shared tiles; the micro-tile's rows are split in groups of 4
//   spaced 64 apart, so a warp's float4 reads and its staging stores are conflict-free.
// * Each step every thread loads 16 consecutive codes (one 16-byte vector) of x and of w;
//   the next step's vectors are loaded before the current step's arithmetic (register
//   double buffering, kept packed: 4 registers per operand).
// * 16-byte loads when k % 16 == 0 and the bases are 16-byte aligned; otherwise byte loads
//   of the same 16 codes with bounds checks. Out-of-range codes are zeros, so any m, n, k
//   works.
// * Epilogue in registers: x_scale of the micro-tile's rows, w_scale of its columns, one
//   rounding to fp16, 8-byte stores of 4 halves when n % 4 == 0.
// * 128 x 128 tiles when there are enough of them for several waves, else 64 x 64.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define W8_THREADS 256

static __device__ __forceinline__ unsigned int w8_pack2(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

// 16 codes of row `r` (of `rows`) of a [rows, k] int8 matrix from column kk, packed in a
// uint4 (code q in byte q % 4 of word q / 4); zeros outside the matrix.
template <bool VEC>
static __device__ __forceinline__ uint4 w8_load16(const int8_t* __restrict__ base, int64_t r, int64_t rows, int64_t kk,
                                                  int64_t k) {
    if (VEC) {  // k % 16 == 0, kk % 16 == 0: all 16 in range or all out
        if (r < rows && kk < k) return *reinterpret_cast<const uint4*>(base + r * k + kk);
        return make_uint4(0u, 0u, 0u, 0u);
    } else {
        unsigned int wd[4] = {0u, 0u, 0u, 0u};
        if (r < rows) {
            const int8_t* __restrict__ p = base + r * k + kk;
#pragma unroll
            for (int q = 0; q < 16; ++q)
                if (kk + q < k) wd[q / 4] |= ((unsigned int)(unsigned char)p[q]) << (8 * (q % 4));
        }
        return make_uint4(wd[0], wd[1], wd[2], wd[3]);
    }
}

static __device__ __forceinline__ float w8_byte(unsigned int word, int b) {
    return (float)(signed char)((word >> (8 * b)) & 0xffu);
}

// Stores the 16 codes of `u` as floats at column `r` of k-rows kq .. kq + 15 of a
// transposed tile with `stride` floats per k-row.
static __device__ __forceinline__ void w8_stage(float* tile, int stride, int kq, int r, const uint4& u) {
    const unsigned int wd[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int q = 0; q < 16; ++q) tile[(kq + q) * stride + r] = w8_byte(wd[q / 4], q % 4);
}

template <int BM, int BN, int BK, int TM, int TN, bool VEC, bool VEC_Y>
__global__ void __launch_bounds__(W8_THREADS, BM == 128 ? 2 : 1)
w8a8_gemm_tiled_kernel(const int8_t* __restrict__ x, const int8_t* __restrict__ w, const float* __restrict__ x_scale,
                       const float* __restrict__ w_scale, __half* __restrict__ y, int64_t m, int64_t n, int64_t k) {
    static_assert(BM * BK == 16 * W8_THREADS && BN * BK == 16 * W8_THREADS, "one 16-code vector per thread and tile");
    static_assert((BN / TN) * (BM / TM) == W8_THREADS, "16 x 16 threads");
    static_assert(BM / (TM / 4) == 64 && BN / (TN / 4) == 64, "groups of 4 spaced 64");
    constexpr int XS = BM + 4;  // floats per k-row of the transposed x tile (16-byte multiple)
    constexpr int WS = BN + 4;
    __shared__ float4 xs4[BK * XS / 4];
    __shared__ float4 ws4[BK * WS / 4];
    float* xs = reinterpret_cast<float*>(xs4);
    float* ws = reinterpret_cast<float*>(ws4);

    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN);
    const int ty = tid / (BN / TN);
    const int64_t m0 = (int64_t)blockIdx.y * BM;
    const int64_t n0 = (int64_t)blockIdx.x * BN;
    const int x_r = tid % BM;
    const int x_k = (tid / BM) * 16;
    const int w_r = tid % BN;
    const int w_k = (tid / BN) * 16;

    uint4 rx = w8_load16<VEC>(x, m0 + x_r, m, x_k, k);
    uint4 rw = w8_load16<VEC>(w, n0 + w_r, n, w_k, k);

    float acc[TM][TN];
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

    for (int64_t k0 = 0; k0 < k; k0 += BK) {
        w8_stage(xs, XS, x_k, x_r, rx);
        w8_stage(ws, WS, w_k, w_r, rw);
        __syncthreads();
        if (k0 + BK < k) {  // in flight during the arithmetic below
            rx = w8_load16<VEC>(x, m0 + x_r, m, k0 + BK + x_k, k);
            rw = w8_load16<VEC>(w, n0 + w_r, n, k0 + BK + w_k, k);
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float av[TM], bv[TN];
#pragma unroll
            for (int g = 0; g < TM / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(xs + kk * XS + g * 64 + 4 * ty);
                av[4 * g] = v.x;
                av[4 * g + 1] = v.y;
                av[4 * g + 2] = v.z;
                av[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int g = 0; g < TN / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(ws + kk * WS + g * 64 + 4 * tx);
                bv[4 * g] = v.x;
                bv[4 * g + 1] = v.y;
                bv[4 * g + 2] = v.z;
                bv[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int r = 0; r < TM; ++r)
#pragma unroll
                for (int s = 0; s < TN; ++s) acc[r][s] = fmaf(av[r], bv[s], acc[r][s]);
        }
        __syncthreads();  // the tiles are overwritten by the next step
    }

    float wsc[TN];
#pragma unroll
    for (int g = 0; g < TN / 4; ++g)
#pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int64_t col = n0 + g * 64 + 4 * tx + s;
            wsc[4 * g + s] = col < n ? w_scale[col] : 0.0f;
        }
#pragma unroll
    for (int r = 0; r < TM; ++r) {
        const int64_t row = m0 + (r / 4) * 64 + 4 * ty + (r % 4);
        if (row >= m) continue;
        const float xsc = x_scale[row];
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            const int64_t col = n0 + g * 64 + 4 * tx;
            float v[4];
#pragma unroll
            for (int s = 0; s < 4; ++s) v[s] = acc[r][4 * g + s] * xsc * wsc[4 * g + s];
            __half* __restrict__ dst = y + row * n + col;
            if (VEC_Y && col + 3 < n) {
                uint2 u;
                u.x = w8_pack2(v[0], v[1]);
                u.y = w8_pack2(v[2], v[3]);
                *reinterpret_cast<uint2*>(dst) = u;
            } else {
#pragma unroll
                for (int s = 0; s < 4; ++s)
                    if (col + s < n) dst[s] = __float2half_rn(v[s]);
            }
        }
    }
}

template <int BM, int BN, int BK, int TM, int TN>
static void w8_launch(const int8_t* x, const int8_t* w, const float* x_scale, const float* w_scale, __half* y,
                      int64_t m, int64_t n, int64_t k, hipStream_t stream) {
    const dim3 grid((unsigned int)((n + BN - 1) / BN), (unsigned int)((m + BM - 1) / BM));
    const bool vec =
        k % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
    const bool vy = n % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0;
#define W8_GO(V, VY)                                                                                              \
    hipLaunchKernelGGL((w8a8_gemm_tiled_kernel<BM, BN, BK, TM, TN, V, VY>), grid, dim3(W8_THREADS), 0, stream, x, \
                       w, x_scale, w_scale, y, m, n, k)
    if (vec) {
        if (vy) W8_GO(true, true); else W8_GO(true, false);
    } else {
        if (vy) W8_GO(false, true); else W8_GO(false, false);
    }
#undef W8_GO
}

extern "C" int w8a8_int8_gemm(const int8_t* x, const int8_t* w, const float* x_scale, const float* w_scale, __half* y,
                              int64_t m, int64_t n, int64_t k, hipStream_t stream) {
    if (m <= 0 || n <= 0) return (int)hipSuccess;
    if ((m + 63) / 64 > 65535) return (int)hipErrorInvalidValue;
    // 128 x 128 tiles once there are enough of them for several waves (132 SMs on an
    // H100 / H200, 104-304 CUs on AMD parts); fewer, smaller problems get 64 x 64 tiles.
    const int64_t big_tiles = ((m + 127) / 128) * ((n + 127) / 128);
    if (big_tiles >= 528)
        w8_launch<128, 128, 32, 8, 8>(x, w, x_scale, w_scale, y, m, n, k, stream);
    else
        w8_launch<64, 64, 64, 4, 4>(x, w, x_scale, w_scale, y, m, n, k, stream);
    return (int)hipGetLastError();
}

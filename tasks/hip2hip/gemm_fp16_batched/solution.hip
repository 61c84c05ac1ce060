// Batched GEMM c[i] = a[i] @ b[i], fp16 in/out, fp32 accumulation: a general, portable
// solution (plain HIP: no WMMA / MFMA, so it builds for NVIDIA and AMD alike).
//
// * Shared-memory tiling with register blocking. A block of 256 threads computes a
//   BM x BN tile of one c[i] (the batch index is the z grid dimension), in steps of BK
//   along k. Two shapes: 128 x 128 tiles with BK = 16 and an 8 x 8 micro-tile per thread
//   (64 multiply-adds per 4 shared-memory float4 reads) when there are enough tiles to fill
//   the GPU, else 64 x 64 tiles with BK = 32 and a 4 x 4 micro-tile.
// * Each step, every thread loads one 8-half vector (16 bytes) of the a tile and one of
//   the b tile, converts them to fp32 and stores them in shared memory (a transposed,
//   k-major, so that a thread reads its rows of a as float4). The next step's vectors are
//   loaded into registers before the current step's arithmetic (register double
//   buffering), so global latency overlaps the multiply-adds.
// * A micro-tile's rows and columns are split in groups of 4 spaced 64 apart, so the
//   float4 reads of a warp hit consecutive shared-memory words (no bank conflicts).
// * 16-byte global loads when the rows allow it (k % 8 == 0 for a, n % 8 == 0 for b,
//   16-byte aligned bases); otherwise scalar loads of the same 8 elements with bounds
//   checks. Out-of-range elements of edge tiles are zeros, so every m, n, k works.
// * c is stored 4 halves (8 bytes) at a time when n % 4 == 0, else element by element.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define BG_THREADS 256

static __device__ __forceinline__ void bg_unpack8(const uint4& u, float* f) {
    const unsigned int words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        f[2 * p] = __half2float(__ushort_as_half((unsigned short)(words[p] & 0xffffu)));
        f[2 * p + 1] = __half2float(__ushort_as_half((unsigned short)(words[p] >> 16)));
    }
}

static __device__ __forceinline__ unsigned int bg_pack2(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

// 8 consecutive halves at p[0 .. 7] of which only the first `valid` exist (zeros after).
static __device__ __forceinline__ void bg_load8_scalar(const __half* __restrict__ p, int64_t valid, float* f) {
#pragma unroll
    for (int q = 0; q < 8; ++q) f[q] = q < valid ? __half2float(p[q]) : 0.0f;
}

// BM x BN tile, BK deep, TM x TN micro-tile per thread; 256 threads, (BN / TN) x (BM / TM) = 16 x 16.
// 128 x 128 tiles: registers capped for 2 blocks per SM (NVIDIA; on AMD the second
// argument is a minimum of waves per execution unit).
template <int BM, int BN, int BK, int TM, int TN, bool VEC_A, bool VEC_B, bool VEC_C>
__global__ void __launch_bounds__(BG_THREADS, BM == 128 ? 2 : 1)
bgemm_tiled_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ c, int64_t m,
                   int64_t n, int64_t k) {
    static_assert(BM * BK == 8 * BG_THREADS && BN * BK == 8 * BG_THREADS, "one 8-half vector per thread and tile");
    static_assert((BN / TN) * (BM / TM) == BG_THREADS, "16 x 16 threads");
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BM / (TM / 4) == 64 && BN / (TN / 4) == 64, "groups of 4 spaced 64");
    constexpr int AS = BM + 4;  // floats per k-row of the transposed a tile (16-byte multiple)
    constexpr int BS = BN;      // floats per k-row of the b tile
    __shared__ float4 as4[BK * AS / 4];
    __shared__ float4 bs4[BK * BS / 4];
    float* as = reinterpret_cast<float*>(as4);
    float* bs = reinterpret_cast<float*>(bs4);

    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN);
    const int ty = tid / (BN / TN);
    const int64_t i = blockIdx.z;
    const int64_t m0 = (int64_t)blockIdx.y * BM;
    const int64_t n0 = (int64_t)blockIdx.x * BN;
    const __half* __restrict__ ai = a + i * m * k;
    const __half* __restrict__ bi = b + i * k * n;

    // What this thread stages: a row a_r, k-offset a_k (8 values), and b row b_k, column b_n (8 values).
    const int a_r = tid % BM;
    const int a_k = (tid / BM) * 8;
    const int b_k = tid / (BN / 8);
    const int b_n = (tid % (BN / 8)) * 8;

    float ra[8], rb[8];
    auto load_tiles = [&](int64_t k0) {
        const int64_t gr = m0 + a_r, gk = k0 + a_k;
        if (VEC_A) {  // k % 8 == 0: the 8 values are all in range or all out
            if (gr < m && gk < k)
                bg_unpack8(*reinterpret_cast<const uint4*>(ai + gr * k + gk), ra);
            else
#pragma unroll
                for (int q = 0; q < 8; ++q) ra[q] = 0.0f;
        } else {
            bg_load8_scalar(ai + gr * k + gk, gr < m ? k - gk : 0, ra);
        }
        const int64_t hk = k0 + b_k, hn = n0 + b_n;
        if (VEC_B) {  // n % 8 == 0
            if (hk < k && hn < n)
                bg_unpack8(*reinterpret_cast<const uint4*>(bi + hk * n + hn), rb);
            else
#pragma unroll
                for (int q = 0; q < 8; ++q) rb[q] = 0.0f;
        } else {
            bg_load8_scalar(bi + hk * n + hn, hk < k ? n - hn : 0, rb);
        }
    };

    float acc[TM][TN];
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

    load_tiles(0);
    for (int64_t k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
        for (int q = 0; q < 8; ++q) as[(a_k + q) * AS + a_r] = ra[q];
        *reinterpret_cast<float4*>(bs + b_k * BS + b_n) = make_float4(rb[0], rb[1], rb[2], rb[3]);
        *reinterpret_cast<float4*>(bs + b_k * BS + b_n + 4) = make_float4(rb[4], rb[5], rb[6], rb[7]);
        __syncthreads();
        if (k0 + BK < k) load_tiles(k0 + BK);  // in flight during the arithmetic below

#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float av[TM], bv[TN];
#pragma unroll
            for (int g = 0; g < TM / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(as + kk * AS + g * 64 + 4 * ty);
                av[4 * g] = v.x;
                av[4 * g + 1] = v.y;
                av[4 * g + 2] = v.z;
                av[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int g = 0; g < TN / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(bs + kk * BS + g * 64 + 4 * tx);
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

    __half* __restrict__ ci = c + i * m * n;
#pragma unroll
    for (int r = 0; r < TM; ++r) {
        const int64_t row = m0 + (r / 4) * 64 + 4 * ty + (r % 4);
        if (row >= m) continue;
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            const int64_t col = n0 + g * 64 + 4 * tx;
            __half* __restrict__ dst = ci + row * n + col;
            if (VEC_C && col + 3 < n) {
                uint2 u;
                u.x = bg_pack2(acc[r][4 * g], acc[r][4 * g + 1]);
                u.y = bg_pack2(acc[r][4 * g + 2], acc[r][4 * g + 3]);
                *reinterpret_cast<uint2*>(dst) = u;
            } else {
#pragma unroll
                for (int s = 0; s < 4; ++s)
                    if (col + s < n) dst[s] = __float2half_rn(acc[r][4 * g + s]);
            }
        }
    }
}

template <int BM, int BN, int BK, int TM, int TN>
static void bg_launch(const __half* a, const __half* b, __half* c, int64_t batch, int64_t m, int64_t n, int64_t k,
                      hipStream_t stream) {
    const dim3 grid((unsigned int)((n + BN - 1) / BN), (unsigned int)((m + BM - 1) / BM), (unsigned int)batch);
    const bool va = k % 8 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0;
    const bool vb = n % 8 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
    const bool vc = n % 4 == 0 && reinterpret_cast<uintptr_t>(c) % 8 == 0;
#define BG_GO(A, B, C)                                                                                            \
    hipLaunchKernelGGL((bgemm_tiled_kernel<BM, BN, BK, TM, TN, A, B, C>), grid, dim3(BG_THREADS), 0, stream, a, b, \
                       c, m, n, k)
    if (va && vb) {
        if (vc) BG_GO(true, true, true); else BG_GO(true, true, false);
    } else if (va) {
        if (vc) BG_GO(true, false, true); else BG_GO(true, false, false);
    } else if (vb) {
        if (vc) BG_GO(false, true, true); else BG_GO(false, true, false);
    } else {
        if (vc) BG_GO(false, false, true); else BG_GO(false, false, false);
    }
#undef BG_GO
}

extern "C" int gemm_fp16_batched(const __half* a, const __half* b, __half* c, int64_t batch, int64_t m, int64_t n,
                                 int64_t k, hipStream_t stream) {
    if (batch <= 0 || m <= 0 || n <= 0) return (int)hipSuccess;
    if (batch > 65535 || m > 65535LL * 64) return (int)hipErrorInvalidValue;
    if (k <= 0) {  // empty sum: c = 0
        hipMemsetAsync(c, 0, (size_t)(batch * m * n) * sizeof(__half), stream);
        return (int)hipGetLastError();
    }
    // 128 x 128 tiles once there are enough of them for several waves (132 SMs on an
    // H100 / H200, 104-304 CUs on AMD parts); fewer, larger problems get 64 x 64 tiles.
    const int64_t big_tiles = batch * ((m + 127) / 128) * ((n + 127) / 128);
    if (big_tiles >= 528)
        bg_launch<128, 128, 16, 8, 8>(a, b, c, batch, m, n, k, stream);
    else
        bg_launch<64, 64, 32, 4, 4>(a, b, c, batch, m, n, k, stream);
    return (int)hipGetLastError();
}

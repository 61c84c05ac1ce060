// Skinny GEMM y = x @ w^T for 1-32 tokens, fp16 in/out, fp32 accumulation: a general,
// portable solution (plain HIP, no WMMA / MFMA).
//
// * Split-k: the grid is (column tiles) x S, each block reducing a slice of k (a multiple
//   of 32) so that ~1000 blocks run even when n is a few thousand. Partial sums go to an
//   fp32 workspace [S, m, n] (allocated once, grown when a larger one is needed, reused
//   across calls: the split-k partials have to live somewhere and y is fp16), then a
//   second kernel sums the S partials in a fixed order (deterministic) and rounds to fp16
//   once. With S == 1 the first kernel writes y directly.
// * Tile shape by token count: the block holds BM = 4, 8, 16 or 32 token rows (the
//   smallest >= m, so little arithmetic is wasted on padding) and BN = 256, 256, 128 or 64
//   weight rows; 256 threads, each with a 4 x TN micro-tile (TN = 1 or 2) fed by a float4
//   read of 4 tokens (a broadcast within a warp) and TN consecutive floats of w from
//   shared memory.
// * Each step (32 along k) the block loads its w tile and x tile as 16-byte vectors of 8
//   halves (coalesced: 4 threads cover 64 contiguous bytes of a row), converts them to fp32
//   and stores them transposed (k-major) in shared memory; the next step's vectors are
//   loaded before the current step's arithmetic (register double buffering).
// * k % 8 != 0 or unaligned bases: scalar loads of the same 8 elements with bounds checks.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define SK_THREADS 256
#define SK_BK 32
#define SK_MAX_M 32
#define SK_TARGET_BLOCKS 1024
#define SK_MAX_SPLITS 64

static __device__ __forceinline__ void sk_unpack8(const uint4& u, float* f) {
    const unsigned int words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        f[2 * p] = __half2float(__ushort_as_half((unsigned short)(words[p] & 0xffffu)));
        f[2 * p + 1] = __half2float(__ushort_as_half((unsigned short)(words[p] >> 16)));
    }
}

// 8 halves of row r (of rows) of a [rows, k] matrix from column kk, only columns < ke
// (the end of this block's slice); zeros elsewhere.
template <bool VEC>
static __device__ __forceinline__ uint4 sk_load8(const __half* __restrict__ base, int64_t r, int64_t rows, int64_t kk,
                                                 int64_t ke, int64_t k) {
    if (VEC) {  // k % 8 == 0 and kk, ke multiples of 8: all 8 in range or all out
        if (r < rows && kk < ke) return *reinterpret_cast<const uint4*>(base + r * k + kk);
        return make_uint4(0u, 0u, 0u, 0u);
    } else {
        unsigned int wd[4] = {0u, 0u, 0u, 0u};
        if (r < rows) {
            const __half* __restrict__ p = base + r * k + kk;
#pragma unroll
            for (int q = 0; q < 8; ++q)
                if (kk + q < ke) wd[q / 2] |= ((unsigned int)__half_as_ushort(p[q])) << (16 * (q % 2));
        }
        return make_uint4(wd[0], wd[1], wd[2], wd[3]);
    }
}

template <int BM, int TN, bool VEC, bool DIRECT>
__global__ void __launch_bounds__(SK_THREADS)
skinny_gemm_partial_kernel(const __half* __restrict__ x, const __half* __restrict__ w, __half* __restrict__ y,
                           float* __restrict__ part, int64_t m, int64_t n, int64_t k, int64_t kc) {
    constexpr int TM = 4;
    constexpr int TR = BM / TM;              // thread rows (groups of 4 tokens)
    constexpr int TC = SK_THREADS / TR;      // thread columns
    constexpr int BN = TC * TN;              // weight rows per block
    constexpr int XV = BM * SK_BK / 8;       // 8-half vectors in the x tile
    constexpr int WV = BN * SK_BK / 8 / SK_THREADS;  // 8-half vectors of the w tile per thread
    static_assert(BN * SK_BK / 8 == WV * SK_THREADS && XV <= SK_THREADS, "tile loads");
    constexpr int XS = BM + 4;  // floats per k-row of the transposed tiles (16-byte multiples)
    constexpr int WS = BN + 4;
    __shared__ float4 xs4[SK_BK * XS / 4];
    __shared__ float4 ws4[SK_BK * WS / 4];
    float* xs = reinterpret_cast<float*>(xs4);
    float* ws = reinterpret_cast<float*>(ws4);

    const int tid = threadIdx.x;
    const int tc = tid % TC;
    const int tr = tid / TC;
    const int64_t n0 = (int64_t)blockIdx.x * BN;
    const int64_t kb = (int64_t)blockIdx.y * kc;
    const int64_t ke = kb + kc < k ? kb + kc : k;

    const int x_r = tid % BM;
    const int x_k = (tid / BM) * 8;
    uint4 rx = make_uint4(0u, 0u, 0u, 0u);
    uint4 rw[WV];
    if (tid < XV) rx = sk_load8<VEC>(x, x_r, m, kb + x_k, ke, k);
#pragma unroll
    for (int v = 0; v < WV; ++v) {
        const int e = tid + v * SK_THREADS;
        rw[v] = sk_load8<VEC>(w, n0 + e % BN, n, kb + (e / BN) * 8, ke, k);
    }

    float acc[TM][TN];
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

    for (int64_t k0 = kb; k0 < ke; k0 += SK_BK) {
        float f[8];
        if (tid < XV) {
            sk_unpack8(rx, f);
#pragma unroll
            for (int q = 0; q < 8; ++q) xs[(x_k + q) * XS + x_r] = f[q];
        }
#pragma unroll
        for (int v = 0; v < WV; ++v) {
            const int e = tid + v * SK_THREADS;
            sk_unpack8(rw[v], f);
#pragma unroll
            for (int q = 0; q < 8; ++q) ws[((e / BN) * 8 + q) * WS + e % BN] = f[q];
        }
        __syncthreads();
        if (k0 + SK_BK < ke) {  // in flight during the arithmetic below
            if (tid < XV) rx = sk_load8<VEC>(x, x_r, m, k0 + SK_BK + x_k, ke, k);
#pragma unroll
            for (int v = 0; v < WV; ++v) {
                const int e = tid + v * SK_THREADS;
                rw[v] = sk_load8<VEC>(w, n0 + e % BN, n, k0 + SK_BK + (e / BN) * 8, ke, k);
            }
        }
#pragma unroll
        for (int kk = 0; kk < SK_BK; ++kk) {
            const float4 a = *reinterpret_cast<const float4*>(xs + kk * XS + TM * tr);
            const float av[TM] = {a.x, a.y, a.z, a.w};
            float bv[TN];
            if (TN == 2) {  // WS and TN * tc are even: an aligned float2
                const float2 b2 = *reinterpret_cast<const float2*>(ws + kk * WS + TN * tc);
                bv[0] = b2.x;
                bv[TN - 1] = b2.y;
            } else {
#pragma unroll
                for (int s = 0; s < TN; ++s) bv[s] = ws[kk * WS + TN * tc + s];
            }
#pragma unroll
            for (int r = 0; r < TM; ++r)
#pragma unroll
                for (int s = 0; s < TN; ++s) acc[r][s] = fmaf(av[r], bv[s], acc[r][s]);
        }
        __syncthreads();  // the tiles are overwritten by the next step
    }

#pragma unroll
    for (int r = 0; r < TM; ++r) {
        const int64_t row = (int64_t)TM * tr + r;
        if (row >= m) continue;
#pragma unroll
        for (int s = 0; s < TN; ++s) {
            const int64_t col = n0 + TN * tc + s;
            if (col >= n) continue;
            if (DIRECT)
                y[row * n + col] = __float2half_rn(acc[r][s]);
            else
                part[((int64_t)blockIdx.y * m + row) * n + col] = acc[r][s];
        }
    }
}

// y[i] = sum over the S slices of part[s, i], in order.
__global__ void __launch_bounds__(SK_THREADS)
skinny_gemm_reduce_kernel(const float* __restrict__ part, __half* __restrict__ y, int64_t total, int64_t splits) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int64_t p = 0; p < splits; ++p) s += part[p * total + i];
        y[i] = __float2half_rn(s);
    }
}

static float* g_sk_ws = nullptr;
static size_t g_sk_ws_bytes = 0;

template <int BM, int TN>
static int sk_launch(const __half* x, const __half* w, __half* y, int64_t m, int64_t n, int64_t k,
                     hipStream_t stream) {
    constexpr int BN = (SK_THREADS / (BM / 4)) * TN;
    const int64_t tiles = (n + BN - 1) / BN;
    int64_t splits = (SK_TARGET_BLOCKS + tiles - 1) / tiles;
    const int64_t max_by_k = (k + 255) / 256;  // at least 256 of k per slice
    if (splits > max_by_k) splits = max_by_k;
    if (splits > SK_MAX_SPLITS) splits = SK_MAX_SPLITS;
    if (splits < 1) splits = 1;
    int64_t kc = (k + splits - 1) / splits;
    kc = (kc + SK_BK - 1) / SK_BK * SK_BK;
    splits = (k + kc - 1) / kc;  // no empty slices
    const bool vec =
        k % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
    const dim3 grid((unsigned int)tiles, (unsigned int)splits);
    if (splits == 1) {
        if (vec)
            hipLaunchKernelGGL((skinny_gemm_partial_kernel<BM, TN, true, true>), grid, dim3(SK_THREADS), 0, stream, x,
                               w, y, (float*)nullptr, m, n, k, kc);
        else
            hipLaunchKernelGGL((skinny_gemm_partial_kernel<BM, TN, false, true>), grid, dim3(SK_THREADS), 0, stream,
                               x, w, y, (float*)nullptr, m, n, k, kc);
        return (int)hipGetLastError();
    }
    const size_t need = (size_t)splits * (size_t)m * (size_t)n * sizeof(float);
    if (need > g_sk_ws_bytes) {
        if (g_sk_ws != nullptr) {
            (void)hipFree(g_sk_ws);  // synchronises the device: no kernel still uses it
            g_sk_ws = nullptr;
            g_sk_ws_bytes = 0;
        }
        const hipError_t e = hipMalloc((void**)&g_sk_ws, need);
        if (e != hipSuccess) {
            g_sk_ws = nullptr;
            return (int)e;
        }
        g_sk_ws_bytes = need;
    }
    if (vec)
        hipLaunchKernelGGL((skinny_gemm_partial_kernel<BM, TN, true, false>), grid, dim3(SK_THREADS), 0, stream, x, w,
                           y, g_sk_ws, m, n, k, kc);
    else
        hipLaunchKernelGGL((skinny_gemm_partial_kernel<BM, TN, false, false>), grid, dim3(SK_THREADS), 0, stream, x,
                           w, y, g_sk_ws, m, n, k, kc);
    const int64_t total = m * n;
    int64_t rblocks = (total + SK_THREADS - 1) / SK_THREADS;
    if (rblocks > 65535) rblocks = 65535;
    hipLaunchKernelGGL(skinny_gemm_reduce_kernel, dim3((unsigned int)rblocks), dim3(SK_THREADS), 0, stream, g_sk_ws,
                       y, total, splits);
    return (int)hipGetLastError();
}

extern "C" int skinny_gemm_splitk_fp16(const __half* x, const __half* w, __half* y, int64_t m, int64_t n, int64_t k,
                                       hipStream_t stream) {
    if (m > SK_MAX_M) return (int)hipErrorInvalidValue;
    if (m <= 0 || n <= 0) return (int)hipSuccess;
    if (k <= 0) {
        (void)hipMemsetAsync(y, 0, (size_t)(m * n) * sizeof(__half), stream);
        return (int)hipGetLastError();
    }
    if (m <= 4) return sk_launch<4, 1>(x, w, y, m, n, k, stream);
    if (m <= 8) return sk_launch<8, 2>(x, w, y, m, n, k, stream);
    if (m <= 16) return sk_launch<16, 2>(x, w, y, m, n, k, stream);
    return sk_launch<32, 2>(x, w, y, m, n, k, stream);
}

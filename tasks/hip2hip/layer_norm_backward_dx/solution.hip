// LayerNorm backward (dx from saved mean and rstd), fp16 in/out, fp32 arithmetic: a
// general, portable solution.
//
// * Vector width by shape and alignment: 8 halves (16-byte uint4) when cols % 8 == 0 and
//   dy, x, weight, dx are 16-byte aligned; 2 halves (4 bytes) when cols is even and they
//   are 4-byte aligned; scalar otherwise.
// * cols <= 1024: one warp per row (shuffle reductions, no barrier); otherwise one block
//   per row with just enough threads (128..1024, whole 64-lane groups) that each keeps its
//   share of the row in registers.
// * dy and x are read from global memory once: their raw fp16 vectors stay in registers
//   between the two row sums and the write (weight is re-read, from L1/L2). Vectors beyond
//   the register cache (cols > 32768 with 16-byte vectors) are re-read.
// * sum(g) and sum(g * xhat) are reduced together (one barrier pair per row).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define LNB_MAX_WARPS 32  // 1024 threads / 32 lanes
#define LNB_WARP_PATH_MAX_COLS 1024
#define LNB_WARP_BLOCK_THREADS 256
#define LNB_MAX_GRID 2147483647LL

// Raw storage of V halves.
template <int V> struct LnbRaw;
template <> struct LnbRaw<8> { uint4 v; };
template <> struct LnbRaw<2> { unsigned int v; };
template <> struct LnbRaw<1> { __half v; };

template <int V>
static __device__ __forceinline__ LnbRaw<V> lnb_load(const __half* __restrict__ p, int64_t i) {
    LnbRaw<V> r;
    if constexpr (V == 8) r.v = reinterpret_cast<const uint4*>(p)[i];
    else if constexpr (V == 2) r.v = reinterpret_cast<const unsigned int*>(p)[i];
    else r.v = p[i];
    return r;
}

static __device__ __forceinline__ void lnb_unpack2(unsigned int bits, float* f) {
    f[0] = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    f[1] = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}
static __device__ __forceinline__ unsigned int lnb_pack2(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

template <int V>
static __device__ __forceinline__ void lnb_unpack(const LnbRaw<V>& r, float* f) {
    if constexpr (V == 8) {
        lnb_unpack2(r.v.x, f);
        lnb_unpack2(r.v.y, f + 2);
        lnb_unpack2(r.v.z, f + 4);
        lnb_unpack2(r.v.w, f + 6);
    } else if constexpr (V == 2) {
        lnb_unpack2(r.v, f);
    } else {
        f[0] = __half2float(r.v);
    }
}

template <int V>
static __device__ __forceinline__ void lnb_store(__half* __restrict__ p, int64_t i, const float* f) {
    if constexpr (V == 8) {
        uint4 u;
        u.x = lnb_pack2(f[0], f[1]);
        u.y = lnb_pack2(f[2], f[3]);
        u.z = lnb_pack2(f[4], f[5]);
        u.w = lnb_pack2(f[6], f[7]);
        reinterpret_cast<uint4*>(p)[i] = u;
    } else if constexpr (V == 2) {
        reinterpret_cast<unsigned int*>(p)[i] = lnb_pack2(f[0], f[1]);
    } else {
        p[i] = __float2half_rn(f[0]);
    }
}

static __device__ __forceinline__ void lnb_warp_sum2(float& a, float& b) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        a += __shfl_xor(a, offset);
        b += __shfl_xor(b, offset);
    }
}

// Every thread gets both block sums; blockDim.x is a multiple of warpSize and every thread calls it.
static __device__ __forceinline__ void lnb_block_sum2(float& a, float& b, float* pa, float* pb) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    lnb_warp_sum2(a, b);
    if (lane == 0) {
        pa[warp] = a;
        pb[warp] = b;
    }
    __syncthreads();
    a = 0.0f;
    b = 0.0f;
    for (int w = 0; w < nwarps; ++w) {
        a += pa[w];
        b += pb[w];
    }
    __syncthreads();  // the partials are reused for the next row
}

// Accumulates sum(g) and sum(g * xhat) of one vector.
template <int V>
static __device__ __forceinline__ void lnb_accumulate(const LnbRaw<V>& rdy, const LnbRaw<V>& rx,
                                                      const __half* __restrict__ weight, int64_t i, float mu,
                                                      float rs, float& sum_g, float& sum_gx) {
    float d[V], xv[V], w[V];
    lnb_unpack<V>(rdy, d);
    lnb_unpack<V>(rx, xv);
    lnb_unpack<V>(lnb_load<V>(weight, i), w);
#pragma unroll
    for (int q = 0; q < V; ++q) {
        const float g = d[q] * w[q];
        sum_g += g;
        sum_gx += g * ((xv[q] - mu) * rs);
    }
}

template <int V>
static __device__ __forceinline__ void lnb_write(const LnbRaw<V>& rdy, const LnbRaw<V>& rx,
                                                 const __half* __restrict__ weight, __half* __restrict__ dxr,
                                                 int64_t i, float mu, float rs, float a, float b) {
    float d[V], xv[V], w[V];
    lnb_unpack<V>(rdy, d);
    lnb_unpack<V>(rx, xv);
    lnb_unpack<V>(lnb_load<V>(weight, i), w);
#pragma unroll
    for (int q = 0; q < V; ++q) d[q] = rs * (d[q] * w[q] - a - ((xv[q] - mu) * rs) * b);
    lnb_store<V>(dxr, i, d);
}

// A group (one warp, or the whole block) per row; requires cols % V == 0 and the matching alignment.
template <int V, int MAXV, bool WARP_PER_ROW>
__global__ void __launch_bounds__(1024)
layer_norm_backward_dx_kernel(const __half* __restrict__ dy, const __half* __restrict__ x,
                              const __half* __restrict__ weight, const float* __restrict__ mean,
                              const float* __restrict__ rstd, __half* __restrict__ dx, int64_t rows, int64_t cols) {
    __shared__ float pa[LNB_MAX_WARPS];
    __shared__ float pb[LNB_MAX_WARPS];
    int t, nt;
    int64_t first, stride;
    if (WARP_PER_ROW) {
        const int warps_per_block = blockDim.x / warpSize;
        t = threadIdx.x % warpSize;
        nt = warpSize;
        first = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
        stride = (int64_t)gridDim.x * warps_per_block;
    } else {
        t = threadIdx.x;
        nt = blockDim.x;
        first = blockIdx.x;
        stride = gridDim.x;
    }
    const int64_t nvec = cols / V;
    const float inv_cols = 1.0f / (float)cols;
    // The loop bound depends on the group only, so whole warps / blocks reach the reductions.
    for (int64_t row = first; row < rows; row += stride) {
        const int64_t off = row * cols;
        const __half* dyr = dy + off;
        const __half* xr = x + off;
        __half* dxr = dx + off;
        const float mu = mean[row];
        const float rs = rstd[row];
        LnbRaw<V> cdy[MAXV], cx[MAXV];
        float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
        for (int k = 0; k < MAXV; ++k) {
            const int64_t i = t + (int64_t)k * nt;
            if (i < nvec) {
                cdy[k] = lnb_load<V>(dyr, i);
                cx[k] = lnb_load<V>(xr, i);
            }
        }
#pragma unroll
        for (int k = 0; k < MAXV; ++k) {
            const int64_t i = t + (int64_t)k * nt;
            if (i < nvec) lnb_accumulate<V>(cdy[k], cx[k], weight, i, mu, rs, sum_g, sum_gx);
        }
        for (int64_t i = t + (int64_t)MAXV * nt; i < nvec; i += nt)
            lnb_accumulate<V>(lnb_load<V>(dyr, i), lnb_load<V>(xr, i), weight, i, mu, rs, sum_g, sum_gx);
        if (WARP_PER_ROW) lnb_warp_sum2(sum_g, sum_gx);
        else lnb_block_sum2(sum_g, sum_gx, pa, pb);
        const float a = sum_g * inv_cols;
        const float b = sum_gx * inv_cols;
#pragma unroll
        for (int k = 0; k < MAXV; ++k) {
            const int64_t i = t + (int64_t)k * nt;
            if (i < nvec) lnb_write<V>(cdy[k], cx[k], weight, dxr, i, mu, rs, a, b);
        }
        for (int64_t i = t + (int64_t)MAXV * nt; i < nvec; i += nt)
            lnb_write<V>(lnb_load<V>(dyr, i), lnb_load<V>(xr, i), weight, dxr, i, mu, rs, a, b);
    }
}

template <int V>
static void lnb_launch(const __half* dy, const __half* x, const __half* weight, const float* mean, const float* rstd,
                       __half* dx, int64_t rows, int64_t cols, hipStream_t stream) {
    // Vectors kept per thread (raw fp16): 4 of 8 halves, 8 of 2 or of 1 half.
    constexpr int MAXV = V == 8 ? 4 : 8;
    const int64_t nvec = cols / V;
    if (cols <= LNB_WARP_PATH_MAX_COLS) {
        // Grid sized for 32-lane warps; with 64-lane warps the grid-stride loop covers the rest.
        const int64_t rows_per_block = LNB_WARP_BLOCK_THREADS / 32;
        int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        if (blocks > LNB_MAX_GRID) blocks = LNB_MAX_GRID;
        hipLaunchKernelGGL((layer_norm_backward_dx_kernel<V, MAXV, true>), dim3((unsigned int)blocks),
                           dim3(LNB_WARP_BLOCK_THREADS), 0, stream, dy, x, weight, mean, rstd, dx, rows, cols);
    } else {
        int64_t threads = (nvec + MAXV - 1) / MAXV;
        threads = (threads + 63) / 64 * 64;
        if (threads < 128) threads = 128;
        if (threads > 1024) threads = 1024;
        const int64_t blocks = rows < LNB_MAX_GRID ? rows : LNB_MAX_GRID;
        hipLaunchKernelGGL((layer_norm_backward_dx_kernel<V, MAXV, false>), dim3((unsigned int)blocks),
                           dim3((unsigned int)threads), 0, stream, dy, x, weight, mean, rstd, dx, rows, cols);
    }
}

extern "C" int layer_norm_backward_dx(const __half* dy, const __half* x, const __half* weight, const float* mean,
                                      const float* rstd, __half* dx, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const uintptr_t any = reinterpret_cast<uintptr_t>(dy) | reinterpret_cast<uintptr_t>(x) |
                          reinterpret_cast<uintptr_t>(weight) | reinterpret_cast<uintptr_t>(dx);
    if (cols % 8 == 0 && any % 16 == 0)
        lnb_launch<8>(dy, x, weight, mean, rstd, dx, rows, cols, stream);
    else if (cols % 2 == 0 && any % 4 == 0)
        lnb_launch<2>(dy, x, weight, mean, rstd, dx, rows, cols, stream);
    else
        lnb_launch<1>(dy, x, weight, mean, rstd, dx, rows, cols, stream);
    return (int)hipGetLastError();
}

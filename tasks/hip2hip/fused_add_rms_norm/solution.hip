// Fused residual add + RMSNorm, fp16 in/out, fp32 arithmetic: a general, portable solution.
//
// * Vector width by shape and alignment: 8 halves (16-byte uint4) when cols % 8 == 0 and
//   every pointer is 16-byte aligned; 2 halves (4 bytes) when cols is even and the
//   pointers 4-byte aligned; scalar otherwise.
// * cols <= 1024: one warp per row (shuffle reduction, no barrier); otherwise one block
//   per row with just enough threads (128..1024, whole 64-lane groups) that each keeps
//   its share of h in registers.
// * x and residual are read once: h = x + residual stays in registers (fp32) between the
//   sum of squares and the write of y; residual_out is written in the first pass. Vectors
//   beyond the register cache (only for cols > 16384 with 16-byte vectors) are re-read.
// * inv_rms = rsqrt(mean(h^2) + eps); y = h * inv_rms * weight, rounded once.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define FAR_MAX_WARPS 32  // 1024 threads / 32 lanes
#define FAR_WARP_PATH_MAX_COLS 1024
#define FAR_WARP_BLOCK_THREADS 256
#define FAR_MAX_GRID 2147483647LL

static __device__ __forceinline__ void far_unpack2(unsigned int bits, float& lo, float& hi) {
    lo = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    hi = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}
static __device__ __forceinline__ unsigned int far_pack2(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

// Load / store vector number i (V halves) of p, as V floats.
template <int V>
static __device__ __forceinline__ void far_load(const __half* __restrict__ p, int64_t i, float* f) {
    if (V == 8) {
        const uint4 u = reinterpret_cast<const uint4*>(p)[i];
        far_unpack2(u.x, f[0], f[1]);
        far_unpack2(u.y, f[2], f[3]);
        far_unpack2(u.z, f[4], f[5]);
        far_unpack2(u.w, f[6], f[7]);
    } else if (V == 2) {
        far_unpack2(reinterpret_cast<const unsigned int*>(p)[i], f[0], f[1]);
    } else {
        f[0] = __half2float(p[i]);
    }
}
template <int V>
static __device__ __forceinline__ void far_store(__half* __restrict__ p, int64_t i, const float* f) {
    if (V == 8) {
        uint4 u;
        u.x = far_pack2(f[0], f[1]);
        u.y = far_pack2(f[2], f[3]);
        u.z = far_pack2(f[4], f[5]);
        u.w = far_pack2(f[6], f[7]);
        reinterpret_cast<uint4*>(p)[i] = u;
    } else if (V == 2) {
        reinterpret_cast<unsigned int*>(p)[i] = far_pack2(f[0], f[1]);
    } else {
        p[i] = __float2half_rn(f[0]);
    }
}

static __device__ __forceinline__ float far_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// Every thread gets the block's sum; blockDim.x is a multiple of warpSize and every thread calls it.
static __device__ __forceinline__ float far_block_sum(float v, float* partials) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    v = far_warp_sum(v);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < nwarps; ++w) total += partials[w];
    __syncthreads();  // partials are reused for the next row
    return total;
}

// A group (one warp, or the whole block) per row; requires cols % V == 0 and the matching alignment.
template <int V, int MAXV, bool WARP_PER_ROW>
__global__ void __launch_bounds__(1024)
fused_add_rms_norm_kernel(const __half* __restrict__ x, const __half* __restrict__ residual,
                          const __half* __restrict__ weight, __half* __restrict__ y,
                          __half* __restrict__ residual_out, int64_t rows, int64_t cols, float eps) {
    __shared__ float partials[FAR_MAX_WARPS];
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
        const __half* xr = x + off;
        const __half* rr = residual + off;
        __half* yr = y + off;
        __half* hr = residual_out + off;
        float h[MAXV][V];
        float sum_sq = 0.0f;
#pragma unroll
        for (int k = 0; k < MAXV; ++k) {
            const int64_t i = t + (int64_t)k * nt;
            if (i < nvec) {
                float r[V];
                far_load<V>(xr, i, h[k]);
                far_load<V>(rr, i, r);
#pragma unroll
                for (int q = 0; q < V; ++q) {
                    h[k][q] += r[q];
                    sum_sq += h[k][q] * h[k][q];
                }
                far_store<V>(hr, i, h[k]);
            }
        }
        for (int64_t i = t + (int64_t)MAXV * nt; i < nvec; i += nt) {
            float a[V], r[V];
            far_load<V>(xr, i, a);
            far_load<V>(rr, i, r);
#pragma unroll
            for (int q = 0; q < V; ++q) {
                a[q] += r[q];
                sum_sq += a[q] * a[q];
            }
            far_store<V>(hr, i, a);
        }
        sum_sq = WARP_PER_ROW ? far_warp_sum(sum_sq) : far_block_sum(sum_sq, partials);
        const float inv_rms = rsqrtf(sum_sq * inv_cols + eps);
#pragma unroll
        for (int k = 0; k < MAXV; ++k) {
            const int64_t i = t + (int64_t)k * nt;
            if (i < nvec) {
                float w[V];
                far_load<V>(weight, i, w);
#pragma unroll
                for (int q = 0; q < V; ++q) w[q] = h[k][q] * inv_rms * w[q];
                far_store<V>(yr, i, w);
            }
        }
        for (int64_t i = t + (int64_t)MAXV * nt; i < nvec; i += nt) {
            float a[V], r[V], w[V];
            far_load<V>(xr, i, a);
            far_load<V>(rr, i, r);
            far_load<V>(weight, i, w);
#pragma unroll
            for (int q = 0; q < V; ++q) a[q] = (a[q] + r[q]) * inv_rms * w[q];
            far_store<V>(yr, i, a);
        }
    }
}

template <int V>
static void far_launch(const __half* x, const __half* residual, const __half* weight, __half* y,
                       __half* residual_out, int64_t rows, int64_t cols, float eps, hipStream_t stream) {
    // Vectors kept per thread: 4 of 8 halves (32 floats), 8 of 2 or of 1 half.
    constexpr int MAXV = V == 8 ? 4 : 8;
    const int64_t nvec = cols / V;
    if (cols <= FAR_WARP_PATH_MAX_COLS) {
        // Grid sized for 32-lane warps; with 64-lane warps the grid-stride loop covers the rest.
        const int64_t rows_per_block = FAR_WARP_BLOCK_THREADS / 32;
        int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        if (blocks > FAR_MAX_GRID) blocks = FAR_MAX_GRID;
        hipLaunchKernelGGL((fused_add_rms_norm_kernel<V, MAXV, true>), dim3((unsigned int)blocks),
                           dim3(FAR_WARP_BLOCK_THREADS), 0, stream, x, residual, weight, y, residual_out, rows, cols,
                           eps);
    } else {
        int64_t threads = (nvec + MAXV - 1) / MAXV;
        threads = (threads + 63) / 64 * 64;
        if (threads < 128) threads = 128;
        if (threads > 1024) threads = 1024;
        const int64_t blocks = rows < FAR_MAX_GRID ? rows : FAR_MAX_GRID;
        hipLaunchKernelGGL((fused_add_rms_norm_kernel<V, MAXV, false>), dim3((unsigned int)blocks),
                           dim3((unsigned int)threads), 0, stream, x, residual, weight, y, residual_out, rows, cols,
                           eps);
    }
}

extern "C" int fused_add_rms_norm(const __half* x, const __half* residual, const __half* weight, __half* y,
                                  __half* residual_out, int64_t rows, int64_t cols, float eps, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const uintptr_t any = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(residual) |
                          reinterpret_cast<uintptr_t>(weight) | reinterpret_cast<uintptr_t>(y) |
                          reinterpret_cast<uintptr_t>(residual_out);
    if (cols % 8 == 0 && any % 16 == 0)
        far_launch<8>(x, residual, weight, y, residual_out, rows, cols, eps, stream);
    else if (cols % 2 == 0 && any % 4 == 0)
        far_launch<2>(x, residual, weight, y, residual_out, rows, cols, eps, stream);
    else
        far_launch<1>(x, residual, weight, y, residual_out, rows, cols, eps, stream);
    return (int)hipGetLastError();
}

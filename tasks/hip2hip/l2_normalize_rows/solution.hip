// Row-wise L2 normalisation (F.normalize), fp16 in/out, fp32 accumulation: a general,
// portable solution.
//
// * Vector width by shape and alignment: 8 halves (16-byte uint4) when dim % 8 == 0 and
//   x, y are 16-byte aligned; 2 halves when dim is even; scalar otherwise.
// * dim <= 1024: a group of L lanes per row (L = the power of two >= dim / V, at most a
//   warp; a warp handles warpSize / L rows at once, reading them contiguously);
//   otherwise one block per row with just enough threads (128..1024) that each keeps its
//   share in registers.
// * The row is read once: its vectors stay in registers between the sum of squares and
//   the write (vectors beyond the cache, only for very long rows, are re-read).
// * inv = 1 / max(sqrt(sum), eps) in fp32, y rounded once.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define L2N_MAX_WARPS 32
#define L2N_GROUP_THREADS 256
#define L2N_MAX_GRID 2147483647LL

static __device__ __forceinline__ void l2n_unpack2(unsigned int bits, float* f) {
    f[0] = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    f[1] = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}
static __device__ __forceinline__ unsigned int l2n_pack2(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

template <int V>
static __device__ __forceinline__ void l2n_load(const __half* __restrict__ p, int64_t i, float* f) {
    if constexpr (V == 8) {
        const uint4 u = reinterpret_cast<const uint4*>(p)[i];
        l2n_unpack2(u.x, f);
        l2n_unpack2(u.y, f + 2);
        l2n_unpack2(u.z, f + 4);
        l2n_unpack2(u.w, f + 6);
    } else if constexpr (V == 2) {
        l2n_unpack2(reinterpret_cast<const unsigned int*>(p)[i], f);
    } else {
        f[0] = __half2float(p[i]);
    }
}
template <int V>
static __device__ __forceinline__ void l2n_store(__half* __restrict__ p, int64_t i, const float* f) {
    if constexpr (V == 8) {
        uint4 u;
        u.x = l2n_pack2(f[0], f[1]);
        u.y = l2n_pack2(f[2], f[3]);
        u.z = l2n_pack2(f[4], f[5]);
        u.w = l2n_pack2(f[6], f[7]);
        reinterpret_cast<uint4*>(p)[i] = u;
    } else if constexpr (V == 2) {
        reinterpret_cast<unsigned int*>(p)[i] = l2n_pack2(f[0], f[1]);
    } else {
        p[i] = __float2half_rn(f[0]);
    }
}

// L lanes per row (a power of two dividing warpSize), rows handled
// warpSize / L at a time per warp; the loop runs per warp so every lane reaches the shuffles.
template <int V, int MAXV>
__global__ void __launch_bounds__(L2N_GROUP_THREADS)
l2n_group_kernel(const __half* __restrict__ x, __half* __restrict__ y, int64_t rows, int64_t dim, float eps) {
    const int64_t nvec = dim / V;
    int L = 1;
    while (L < nvec && L < warpSize) L *= 2;
    const int groups_per_warp = warpSize / L;
    const int lane = threadIdx.x % warpSize;
    const int g = lane / L;
    const int t = lane % L;
    const int64_t warp_id = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    const int64_t total_warps = (int64_t)gridDim.x * (blockDim.x / warpSize);
    for (int64_t base = warp_id * groups_per_warp; base < rows; base += total_warps * groups_per_warp) {
        const int64_t row = base + g;
        const bool valid = row < rows;
        const __half* xr = x + (valid ? row : 0) * dim;
        __half* yr = y + (valid ? row : 0) * dim;
        float cache[MAXV][V];
        float sum_sq = 0.0f;
#pragma unroll
        for (int m = 0; m < MAXV; ++m) {
            const int64_t i = t + (int64_t)m * L;
            if (valid && i < nvec) {
                l2n_load<V>(xr, i, cache[m]);
#pragma unroll
                for (int e = 0; e < V; ++e) sum_sq += cache[m][e] * cache[m][e];
            }
        }
        for (int64_t i = t + (int64_t)MAXV * L; valid && i < nvec; i += L) {
            float f[V];
            l2n_load<V>(xr, i, f);
#pragma unroll
            for (int e = 0; e < V; ++e) sum_sq += f[e] * f[e];
        }
        for (int offset = L / 2; offset > 0; offset /= 2) sum_sq += __shfl_xor(sum_sq, offset);
        const float inv = 1.0f / fmaxf(sqrtf(sum_sq), eps);
#pragma unroll
        for (int m = 0; m < MAXV; ++m) {
            const int64_t i = t + (int64_t)m * L;
            if (valid && i < nvec) {
#pragma unroll
                for (int e = 0; e < V; ++e) cache[m][e] *= inv;
                l2n_store<V>(yr, i, cache[m]);
            }
        }
        for (int64_t i = t + (int64_t)MAXV * L; valid && i < nvec; i += L) {
            float f[V];
            l2n_load<V>(xr, i, f);
#pragma unroll
            for (int e = 0; e < V; ++e) f[e] *= inv;
            l2n_store<V>(yr, i, f);
        }
    }
}

// One block per row (grid-stride), blockDim.x a multiple of 64.
template <int V, int MAXV>
__global__ void __launch_bounds__(1024)
l2n_block_kernel(const __half* __restrict__ x, __half* __restrict__ y, int64_t rows, int64_t dim, float eps) {
    __shared__ float partials[L2N_MAX_WARPS];
    const int64_t nvec = dim / V;
    const int t = threadIdx.x;
    const int nt = blockDim.x;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const __half* xr = x + row * dim;
        __half* yr = y + row * dim;
        float cache[MAXV][V];
        float sum_sq = 0.0f;
#pragma unroll
        for (int m = 0; m < MAXV; ++m) {
            const int64_t i = t + (int64_t)m * nt;
            if (i < nvec) {
                l2n_load<V>(xr, i, cache[m]);
#pragma unroll
                for (int e = 0; e < V; ++e) sum_sq += cache[m][e] * cache[m][e];
            }
        }
        for (int64_t i = t + (int64_t)MAXV * nt; i < nvec; i += nt) {
            float f[V];
            l2n_load<V>(xr, i, f);
#pragma unroll
            for (int e = 0; e < V; ++e) sum_sq += f[e] * f[e];
        }
        for (int offset = warpSize / 2; offset > 0; offset /= 2) sum_sq += __shfl_xor(sum_sq, offset);
        if (t % warpSize == 0) partials[t / warpSize] = sum_sq;
        __syncthreads();
        float total = 0.0f;
        for (int w = 0; w < nt / warpSize; ++w) total += partials[w];
        __syncthreads();  // partials are reused for the next row
        const float inv = 1.0f / fmaxf(sqrtf(total), eps);
#pragma unroll
        for (int m = 0; m < MAXV; ++m) {
            const int64_t i = t + (int64_t)m * nt;
            if (i < nvec) {
#pragma unroll
                for (int e = 0; e < V; ++e) cache[m][e] *= inv;
                l2n_store<V>(yr, i, cache[m]);
            }
        }
        for (int64_t i = t + (int64_t)MAXV * nt; i < nvec; i += nt) {
            float f[V];
            l2n_load<V>(xr, i, f);
#pragma unroll
            for (int e = 0; e < V; ++e) f[e] *= inv;
            l2n_store<V>(yr, i, f);
        }
    }
}

template <int V>
static void l2n_launch(const __half* x, __half* y, int64_t rows, int64_t dim, float eps, hipStream_t stream) {
    constexpr int MAXV = V == 8 ? 4 : 8;
    const int64_t nvec = dim / V;
    if (dim <= 1024) {
        // Grid sized for 32-lane warps; with 64-lane warps the grid-stride loop covers the rest.
        int64_t lanes = 1;
        while (lanes < nvec && lanes < 32) lanes *= 2;
        const int64_t rows_per_block = (L2N_GROUP_THREADS / 32) * (32 / lanes);
        int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        if (blocks > L2N_MAX_GRID) blocks = L2N_MAX_GRID;
        hipLaunchKernelGGL((l2n_group_kernel<V, MAXV>), dim3((unsigned int)blocks), dim3(L2N_GROUP_THREADS), 0, stream,
                           x, y, rows, dim, eps);
    } else {
        int64_t threads = (nvec + MAXV - 1) / MAXV;
        threads = (threads + 63) / 64 * 64;
        if (threads < 128) threads = 128;
        if (threads > 1024) threads = 1024;
        const int64_t blocks = rows < L2N_MAX_GRID ? rows : L2N_MAX_GRID;
        hipLaunchKernelGGL((l2n_block_kernel<V, MAXV>), dim3((unsigned int)blocks), dim3((unsigned int)threads), 0,
                           stream, x, y, rows, dim, eps);
    }
}

extern "C" int l2_normalize_rows(const __half* x, __half* y, int64_t rows, int64_t dim, float eps,
                                 hipStream_t stream) {
    if (rows <= 0 || dim <= 0) return (int)hipSuccess;
    const uintptr_t any = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
    if (dim % 8 == 0 && any % 16 == 0)
        l2n_launch<8>(x, y, rows, dim, eps, stream);
    else if (dim % 2 == 0 && any % 4 == 0)
        l2n_launch<2>(x, y, rows, dim, eps, stream);
    else
        l2n_launch<1>(x, y, rows, dim, eps, stream);
    return (int)hipGetLastError();
}

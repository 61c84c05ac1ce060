// Reference solution: GroupNorm + SiLU on contiguous NCHW fp16, two kernels.
//
// In NCHW each (sample, group) is one contiguous run of D = (c / groups) * h * w elements,
// so the statistics are row moments over n * groups rows of length D.
//
// 1. gn_partial_stats: every group is split into chunks of ~16K elements, one block per
//    (chunk, group) — hundreds of blocks even for a batch of one with 32 huge groups, where
//    eager PyTorch runs one block per group. Each block sums (x - K) and (x - K)^2 in fp32,
//    K being the group's first element (a shift that removes the cancellation of
//    E[x^2] - mean^2 when the mean is large against the spread), and writes the pair to a
//    static device buffer (no allocation per call).
// 2. gn_apply: one block per (chunk, group) again; each block combines its group's partial
//    sums in fp64, then normalises, applies the channel's weight and bias and SiLU in fp32 and
//    writes fp16. The second read of x is served by the L2 for all but the largest inputs.
//
// Loads and stores are 16 bytes (8 fp16) wherever the absolute element index is a multiple
// of 8 (x and y 16-byte aligned); a group whose bounds are not (odd planes, 30 channels per
// group) has a scalar head and tail. Block reductions: a butterfly in each warp (warpSize
// lanes), one value per warp in shared memory (sized for 32-lane warps), then a butterfly
// over those.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kMinWarp = 32;
constexpr int kStatChunk = 16384;   // elements per statistics block
constexpr int kApplyChunk = 8192;   // elements per normalisation block
constexpr int kMaxPartials = 1 << 16;

__device__ float2 g_partials[kMaxPartials];

__device__ __forceinline__ void unpack8(const uint4 u, float (&f)[8]) {
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] & 0xffffu)));
        f[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] >> 16)));
    }
}

__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        w[i] = static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * i]))) |
               (static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * i + 1]))) << 16);
    }
    uint4 u;
    u.x = w[0]; u.y = w[1]; u.z = w[2]; u.w = w[3];
    return u;
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
    for (int off = warpSize / 2; off > 0; off >>= 1) v += __shfl_xor(v, off);
    return v;
}

// Sums of a and b over the block, in every thread. scratch: 2 * (kBlock / kMinWarp) values.
template <typename T>
__device__ __forceinline__ void block_sum2(T& a, T& b, T* scratch) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int num_warps = (kBlock + warpSize - 1) / warpSize;
    a = warp_sum(a);
    b = warp_sum(b);
    if (lane == 0) {
        scratch[warp] = a;
        scratch[kBlock / kMinWarp + warp] = b;
    }
    __syncthreads();
    a = lane < num_warps ? scratch[lane] : T(0);
    b = lane < num_warps ? scratch[kBlock / kMinWarp + lane] : T(0);
    a = warp_sum(a);
    b = warp_sum(b);
    __syncthreads();
}

__device__ __forceinline__ float silu(float t) { return t / (1.0f + expf(-t)); }

// Partial shifted sums of chunk blockIdx.x of group blockIdx.y.
template <bool VEC>
__global__ void __launch_bounds__(kBlock)
gn_partial_stats(const __half* __restrict__ x, int64_t group_len, int chunk_len, int chunks) {
    __shared__ float scratch[2 * (kBlock / kMinWarp)];
    const int64_t g = blockIdx.y;
    const int64_t a0 = g * group_len + static_cast<int64_t>(blockIdx.x) * chunk_len;
    const int64_t a1 = min(g * group_len + group_len, a0 + chunk_len);
    const float shift = __half2float(x[g * group_len]);
    float s1 = 0.0f, s2 = 0.0f;
    int64_t body0 = a1, body1 = a1;  // [body0, body1): 8-aligned part, done with 16-byte loads
    if (VEC) {
        body0 = (a0 + 7) & ~static_cast<int64_t>(7);
        body1 = a1 & ~static_cast<int64_t>(7);
        if (body0 >= body1) body0 = body1 = a1;
    }
    // scalar head [a0, body0) and tail [body1, a1): at most 7 elements each when VEC
    for (int64_t i = a0 + threadIdx.x; i < body0; i += kBlock) {
        const float d = __half2float(x[i]) - shift;
        s1 += d;
        s2 += d * d;
    }
    for (int64_t i = body1 + threadIdx.x; i < a1; i += kBlock) {
        const float d = __half2float(x[i]) - shift;
        s1 += d;
        s2 += d * d;
    }
    if (VEC) {
        const uint4* xv = reinterpret_cast<const uint4*>(x);
        const int64_t v1 = body1 / 8;
#pragma unroll 4
        for (int64_t v = body0 / 8 + threadIdx.x; v < v1; v += kBlock) {
            float f[8];
            unpack8(xv[v], f);
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const float d = f[j] - shift;
                s1 += d;
                s2 += d * d;
            }
        }
    }
    block_sum2(s1, s2, scratch);
    if (threadIdx.x == 0) g_partials[g * chunks + blockIdx.x] = make_float2(s1, s2);
}

// Normalise + SiLU of chunk blockIdx.x of group blockIdx.y.
template <bool VEC>
__global__ void __launch_bounds__(kBlock)
gn_apply(const __half* __restrict__ x, const __half* __restrict__ weight, const __half* __restrict__ bias,
         __half* __restrict__ y, int64_t group_len, int64_t hw, int64_t channels, int64_t cpg,
         int stat_chunks, int chunk_len, float eps) {
    __shared__ double scratch[2 * (kBlock / kMinWarp)];
    const int64_t g = blockIdx.y;
    const int64_t gbase = g * group_len;
    // the group's statistics from the partial sums, in fp64
    double s1 = 0.0, s2 = 0.0;
    for (int i = threadIdx.x; i < stat_chunks; i += kBlock) {
        const float2 p = g_partials[g * stat_chunks + i];
        s1 += p.x;
        s2 += p.y;
    }
    block_sum2(s1, s2, scratch);
    const double inv_n = 1.0 / static_cast<double>(group_len);
    const double m = s1 * inv_n;
    const double var = s2 * inv_n - m * m;
    const float mean = static_cast<float>(m + static_cast<double>(__half2float(x[gbase])));
    const float rstd = static_cast<float>(1.0 / sqrt((var > 0.0 ? var : 0.0) + static_cast<double>(eps)));
    // first channel of the group (channels of sample n are n * c ... n * c + c - 1)
    const int64_t ch0 = (g % (channels / cpg)) * cpg;

    const int64_t a0 = gbase + static_cast<int64_t>(blockIdx.x) * chunk_len;
    const int64_t a1 = min(gbase + group_len, a0 + chunk_len);
    int64_t body0 = a1, body1 = a1;
    if (VEC) {
        body0 = (a0 + 7) & ~static_cast<int64_t>(7);
        body1 = a1 & ~static_cast<int64_t>(7);
        if (body0 >= body1) body0 = body1 = a1;
    }
    // scalar head [a0, body0) and tail [body1, a1) (all of it when !VEC)
    for (int part = 0; part < 2; ++part) {
        const int64_t lo = part == 0 ? a0 : body1;
        const int64_t hi = part == 0 ? body0 : a1;
        for (int64_t i = lo + threadIdx.x; i < hi; i += kBlock) {
            const int64_t ch = ch0 + (i - gbase) / hw;
            const float t = (__half2float(x[i]) - mean) * rstd * __half2float(weight[ch]) + __half2float(bias[ch]);
            y[i] = __float2half_rn(silu(t));
        }
    }
    if (VEC) {
        const uint4* xv = reinterpret_cast<const uint4*>(x);
        uint4* yv = reinterpret_cast<uint4*>(y);
        const int64_t v1 = body1 / 8;
#pragma unroll 2
        for (int64_t v = body0 / 8 + threadIdx.x; v < v1; v += kBlock) {
            float f[8];
            unpack8(xv[v], f);
            const int64_t e = v * 8 - gbase;        // offset in the group
            int64_t lc = e / hw;                     // channel of the first element, in the group
            int64_t rem = e - lc * hw;               // its position in the plane
            if (rem + 8 <= hw) {                     // all 8 in one channel
                const float sc = rstd * __half2float(weight[ch0 + lc]);
                const float sh = __half2float(bias[ch0 + lc]);
#pragma unroll
                for (int j = 0; j < 8; ++j) f[j] = silu((f[j] - mean) * sc + sh);
            } else {
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    if (rem == hw) {
                        rem = 0;
                        ++lc;
                    }
                    f[j] = silu((f[j] - mean) * rstd * __half2float(weight[ch0 + lc]) + __half2float(bias[ch0 + lc]));
                    ++rem;
                }
            }
            yv[v] = pack8(f);
        }
    }
}

}  // namespace

extern "C" int group_norm_silu(const __half* x, const __half* weight, const __half* bias, __half* y,
                               int64_t n, int64_t c, int64_t h, int64_t w, int64_t groups, float eps,
                               hipStream_t stream) {
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0) return static_cast<int>(hipSuccess);
    if (groups <= 0 || c % groups != 0) return static_cast<int>(hipErrorInvalidValue);
    const int64_t num_groups = n * groups;
    const int64_t hw = h * w;
    const int64_t cpg = c / groups;
    const int64_t group_len = cpg * hw;
    if (num_groups > 65535 || num_groups > kMaxPartials) return static_cast<int>(hipErrorInvalidValue);
    int64_t stat_chunks = (group_len + kStatChunk - 1) / kStatChunk;
    if (stat_chunks * num_groups > kMaxPartials) stat_chunks = kMaxPartials / num_groups;
    const int64_t stat_len = (group_len + stat_chunks - 1) / stat_chunks;
    const int64_t apply_chunks = (group_len + kApplyChunk - 1) / kApplyChunk;
    if (stat_len > INT32_MAX || apply_chunks > INT32_MAX) return static_cast<int>(hipErrorInvalidValue);
    const bool vec = (reinterpret_cast<uintptr_t>(x) % 16 == 0) && (reinterpret_cast<uintptr_t>(y) % 16 == 0);
    const dim3 stat_grid(static_cast<unsigned>(stat_chunks), static_cast<unsigned>(num_groups));
    const dim3 apply_grid(static_cast<unsigned>(apply_chunks), static_cast<unsigned>(num_groups));
    if (vec) {
        hipLaunchKernelGGL(gn_partial_stats<true>, stat_grid, dim3(kBlock), 0, stream, x, group_len,
                           static_cast<int>(stat_len), static_cast<int>(stat_chunks));
        hipLaunchKernelGGL(gn_apply<true>, apply_grid, dim3(kBlock), 0, stream, x, weight, bias, y, group_len, hw,
                           c, cpg, static_cast<int>(stat_chunks), kApplyChunk, eps);
    } else {
        hipLaunchKernelGGL(gn_partial_stats<false>, stat_grid, dim3(kBlock), 0, stream, x, group_len,
                           static_cast<int>(stat_len), static_cast<int>(stat_chunks));
        hipLaunchKernelGGL(gn_apply<false>, apply_grid, dim3(kBlock), 0, stream, x, weight, bias, y, group_len, hw,
                           c, cpg, static_cast<int>(stat_chunks), kApplyChunk, eps);
    }
    return static_cast<int>(hipGetLastError());
}

// Reference solution for bias + GEGLU: y[r, j] = a * gelu(g), a = h[r, j] + bias[j],
// g = h[r, inner + j] + bias[inner + j], exact (erf) GELU; fp16 in and out, fp32 math.
//
// - One pass: h is read once, y written once, the bias (4 * inner bytes) stays in cache.
//   Eager PyTorch writes and re-reads two fp16 intermediates.
// - A flat grid-stride loop over output vectors of W fp16 elements (W = 8: 16-byte accesses
//   when inner % 8 == 0 and every pointer is 16-byte aligned, so every row of h, of y and
//   both halves of the bias start on 16-byte boundaries; W = 2 when inner is even and the
//   pointers 4-byte aligned; W = 1 otherwise, e.g. odd inner puts the gate half at an odd
//   element offset). The row / column of a vector come from one 32-bit division when the
//   vector count fits in 32 bits (always, inside the task's shape space), else a 64-bit one.
// - Each thread issues the loads of kUnroll vectors before any math.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kUnroll = 2;
constexpr int64_t kMaxBlocks = 1 << 20;  // more vectors are walked grid-stride

template <int W> struct Vec;

template <> struct Vec<8> {
    // 16 bytes as four 32-bit words, each two fp16 values (low half first in memory)
    static __device__ __forceinline__ void load(const __half* p, float (&f)[8]) {
        const uint4 u = *reinterpret_cast<const uint4*>(p);
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            f[2 * k] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] & 0xffffu)));
            f[2 * k + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] >> 16)));
        }
    }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[8]) {
        unsigned w[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            w[k] = static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k]))) |
                   (static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k + 1]))) << 16);
        }
        *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    }
};

template <> struct Vec<2> {
    static __device__ __forceinline__ void load(const __half* p, float (&f)[2]) {
        const float2 t = __half22float2(*reinterpret_cast<const __half2*>(p));
        f[0] = t.x;
        f[1] = t.y;
    }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[2]) {
        *reinterpret_cast<__half2*>(p) = __floats2half2_rn(f[0], f[1]);
    }
};

template <> struct Vec<1> {
    static __device__ __forceinline__ void load(const __half* p, float (&f)[1]) { f[0] = __half2float(*p); }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[1]) { *p = __float2half_rn(f[0]); }
};

__device__ __forceinline__ float geglu(float a, float g) {
    return a * (0.5f * g * (1.0f + erff(g * 0.70710678118654752f)));
}

template <int W, typename Index>
__global__ void __launch_bounds__(kBlock)
bias_geglu_kernel(const __half* __restrict__ h, const __half* __restrict__ bias, __half* __restrict__ y,
                  Index total_vec, Index vec_per_row, int64_t inner) {
    const Index stride = static_cast<Index>(gridDim.x) * (kBlock * kUnroll);
    for (Index base = static_cast<Index>(blockIdx.x) * (kBlock * kUnroll); base < total_vec; base += stride) {
        float a[kUnroll][W], g[kUnroll][W], ba[kUnroll][W], bg[kUnroll][W];
        Index row[kUnroll], col[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const Index i = base + k * kBlock + threadIdx.x;
            row[k] = i / vec_per_row;
            col[k] = i - row[k] * vec_per_row;
            if (i < total_vec) {
                const __half* src = h + static_cast<int64_t>(row[k]) * 2 * inner + static_cast<int64_t>(col[k]) * W;
                Vec<W>::load(src, a[k]);
                Vec<W>::load(src + inner, g[k]);
                Vec<W>::load(bias + static_cast<int64_t>(col[k]) * W, ba[k]);
                Vec<W>::load(bias + inner + static_cast<int64_t>(col[k]) * W, bg[k]);
            }
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const Index i = base + k * kBlock + threadIdx.x;
            if (i < total_vec) {
                float o[W];
#pragma unroll
                for (int j = 0; j < W; ++j) o[j] = geglu(a[k][j] + ba[k][j], g[k][j] + bg[k][j]);
                Vec<W>::store(y + static_cast<int64_t>(row[k]) * inner + static_cast<int64_t>(col[k]) * W, o);
            }
        }
    }
}

template <int W>
void launch(const __half* h, const __half* bias, __half* y, int64_t tokens, int64_t inner, hipStream_t stream) {
    const int64_t vec_per_row = inner / W;
    const int64_t total = tokens * vec_per_row;
    int64_t blocks = (total + kBlock * kUnroll - 1) / (kBlock * kUnroll);
    if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    // 32-bit indices when base + stride cannot overflow them.
    if (total + 2 * kMaxBlocks * kBlock * kUnroll < static_cast<int64_t>(UINT32_MAX)) {
        hipLaunchKernelGGL((bias_geglu_kernel<W, uint32_t>), dim3(static_cast<unsigned>(blocks)), dim3(kBlock), 0,
                           stream, h, bias, y, static_cast<uint32_t>(total), static_cast<uint32_t>(vec_per_row),
                           inner);
    } else {
        hipLaunchKernelGGL((bias_geglu_kernel<W, int64_t>), dim3(static_cast<unsigned>(blocks)), dim3(kBlock), 0,
                           stream, h, bias, y, total, vec_per_row, inner);
    }
}

}  // namespace

extern "C" int bias_geglu(const __half* h, const __half* bias, __half* y, int64_t tokens, int64_t inner,
                          hipStream_t stream) {
    if (tokens <= 0 || inner <= 0) return static_cast<int>(hipSuccess);
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(h) | reinterpret_cast<uintptr_t>(bias) |
                                reinterpret_cast<uintptr_t>(y);
    if (inner % 8 == 0 && addresses % 16 == 0) {
        launch<8>(h, bias, y, tokens, inner, stream);
    } else if (inner % 2 == 0 && addresses % 4 == 0) {
        launch<2>(h, bias, y, tokens, inner, stream);
    } else {
        launch<1>(h, bias, y, tokens, inner, stream);
    }
    return static_cast<int>(hipGetLastError());
}

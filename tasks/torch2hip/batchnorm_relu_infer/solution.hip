// Reference solution for inference BatchNorm2d + ReLU on NCHW fp16:
//   y = relu(x * s[c] + t[c]),  s = rsqrt(running_var + eps) * weight,  t = bias - running_mean * s
//
// - One pass: x read once, y written once (4 bytes per element, against ~44 for the eight
//   kernels of eager PyTorch with fp32 intermediates). The per-channel scale and shift are
//   folded from the four parameter vectors where they are used (they stay in cache).
// - Large planes (h * w >= kPlaneMin): grid x walks the n * c planes, grid y splits a plane;
//   the channel is found once per block (no division per element). A plane starts at element
//   p * h * w, which is not 16-byte aligned when h * w is odd or not a multiple of 8: a
//   scalar head up to the first 16-byte boundary, 16-byte vectors (8 fp16) for the body and
//   a scalar tail. x and y have the same offsets, so both are aligned together.
// - Small planes (7 x 7, 14 x 14, 28 x 28: too short to fill a block): one flat pass over
//   vectors of W elements, W the largest of 8, 4, 2, 1 that divides h * w (a vector then
//   never crosses a plane), the channel of each vector found with a multiply-high division by
//   an invariant divisor (a few instructions instead of a 64-bit division). A 64-bit
//   division variant covers more than 2^31 vectors (beyond the task's shape space).
// - Arithmetic in fp32, y rounded to fp16 once.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kUnroll = 2;
constexpr int64_t kPlaneMin = 1024;        // elements per plane for the per-plane kernel
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridY = 65535;
constexpr int64_t kMaxFlatGrid = 1 << 20;  // blocks of the flat kernel; more work is walked grid-stride

__device__ __forceinline__ float half_at(const __half* p) { return __half2float(*p); }

template <int W> struct Vec;

template <> struct Vec<8> {
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

template <> struct Vec<4> {
    static __device__ __forceinline__ void load(const __half* p, float (&f)[4]) {
        const uint2 u = *reinterpret_cast<const uint2*>(p);
        const unsigned w[2] = {u.x, u.y};
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            f[2 * k] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] & 0xffffu)));
            f[2 * k + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] >> 16)));
        }
    }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[4]) {
        unsigned w[2];
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            w[k] = static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k]))) |
                   (static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k + 1]))) << 16);
        }
        *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
    }
};

template <> struct Vec<2> {
    static __device__ __forceinline__ void load(const __half* p, float (&f)[2]) {
        const float2 v = __half22float2(*reinterpret_cast<const __half2*>(p));
        f[0] = v.x;
        f[1] = v.y;
    }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[2]) {
        *reinterpret_cast<__half2*>(p) = __floats2half2_rn(f[0], f[1]);
    }
};

template <> struct Vec<1> {
    static __device__ __forceinline__ void load(const __half* p, float (&f)[1]) { f[0] = half_at(p); }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[1]) { *p = __float2half_rn(f[0]); }
};

// Scale and shift of channel c.
__device__ __forceinline__ void channel_affine(const float* __restrict__ mean, const float* __restrict__ var,
                                               const float* __restrict__ weight, const float* __restrict__ bias,
                                               int64_t c, float eps, float& s, float& t) {
    s = rsqrtf(var[c] + eps) * weight[c];
    t = fmaf(-mean[c], s, bias[c]);
}

__device__ __forceinline__ float bn_relu(float x, float s, float t) { return fmaxf(fmaf(x, s, t), 0.0f); }

// ---- large planes -----------------------------------------------------------------------

__global__ void __launch_bounds__(kBlock)
bn_relu_planes(const __half* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ var,
               const float* __restrict__ weight, const float* __restrict__ bias, __half* __restrict__ y,
               int64_t planes, int64_t channels, int64_t hw, float eps) {
    for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
        float s, t;
        channel_affine(mean, var, weight, bias, p % channels, eps, s, t);
        const int64_t start = p * hw;
        // x and y are 16-byte aligned (checked by the host): the plane's first 16-byte boundary
        // is at element (8 - start % 8) % 8 of the plane.
        int64_t head = (8 - start % 8) % 8;
        if (head > hw) head = hw;
        const int64_t num_vec = (hw - head) / 8;
        const int64_t tail = head + num_vec * 8;
        const __half* xp = x + start;
        __half* yp = y + start;

        if (blockIdx.y == 0) {
            // head and tail: fewer than 8 elements each
            if (threadIdx.x < head) {
                yp[threadIdx.x] = __float2half_rn(bn_relu(half_at(xp + threadIdx.x), s, t));
            }
            if (threadIdx.x < hw - tail) {
                yp[tail + threadIdx.x] = __float2half_rn(bn_relu(half_at(xp + tail + threadIdx.x), s, t));
            }
        }
        const __half* xv = xp + head;
        __half* yv = yp + head;
        const int64_t chunk = static_cast<int64_t>(kBlock) * kUnroll;
        for (int64_t base = static_cast<int64_t>(blockIdx.y) * chunk; base < num_vec;
             base += static_cast<int64_t>(gridDim.y) * chunk) {
            float v[kUnroll][8];
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) {
                const int64_t i = base + k * kBlock + threadIdx.x;
                if (i < num_vec) Vec<8>::load(xv + i * 8, v[k]);
            }
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) {
                const int64_t i = base + k * kBlock + threadIdx.x;
                if (i < num_vec) {
#pragma unroll
                    for (int j = 0; j < 8; ++j) v[k][j] = bn_relu(v[k][j], s, t);
                    Vec<8>::store(yv + i * 8, v[k]);
                }
            }
        }
    }
}

// ---- small planes -----------------------------------------------------------------------

// n / d for n < 2^31 by a multiply-high (Granlund-Montgomery): q = (umulhi(n, m) + n) >> s
// with s = ceil(log2 d), m = floor(2^32 * (2^s - d) / d) + 1 (fits 32 bits for d < 2^31).
struct FastDiv {
    uint32_t d, m, s;
};

FastDiv make_fastdiv(uint32_t d) {
    FastDiv f;
    f.d = d;
    f.s = 0;
    while ((uint64_t(1) << f.s) < d) ++f.s;
    f.m = static_cast<uint32_t>(((uint64_t(1) << 32) * ((uint64_t(1) << f.s) - d)) / d + 1);
    return f;
}

__device__ __forceinline__ uint32_t fast_div(uint32_t n, const FastDiv& f) {
    return (__umulhi(n, f.m) + n) >> f.s;
}

// Vector v (of W elements, W dividing h * w) lies in plane v / vec_per_plane, channel plane % C.
template <int W>
__global__ void __launch_bounds__(kBlock)
bn_relu_flat(const __half* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ var,
             const float* __restrict__ weight, const float* __restrict__ bias, __half* __restrict__ y,
             uint32_t num_vec, FastDiv per_plane, FastDiv channels, float eps) {
    const uint32_t chunk = static_cast<uint32_t>(kBlock) * kUnroll;
    for (uint64_t base = static_cast<uint64_t>(blockIdx.x) * chunk; base < num_vec;
         base += static_cast<uint64_t>(gridDim.x) * chunk) {
        float v[kUnroll][W];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const uint64_t i = base + k * kBlock + threadIdx.x;
            if (i < num_vec) Vec<W>::load(x + i * W, v[k]);
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const uint64_t i = base + k * kBlock + threadIdx.x;
            if (i < num_vec) {
                const uint32_t plane = fast_div(static_cast<uint32_t>(i), per_plane);
                const uint32_t c = plane - fast_div(plane, channels) * channels.d;
                float s, t;
                channel_affine(mean, var, weight, bias, c, eps, s, t);
#pragma unroll
                for (int j = 0; j < W; ++j) v[k][j] = bn_relu(v[k][j], s, t);
                Vec<W>::store(y + i * W, v[k]);
            }
        }
    }
}

// Any size (64-bit indices and divisions): element by element.
__global__ void __launch_bounds__(kBlock)
bn_relu_any(const __half* __restrict__ x, const float* __restrict__ mean, const float* __restrict__ var,
            const float* __restrict__ weight, const float* __restrict__ bias, __half* __restrict__ y,
            int64_t numel, int64_t channels, int64_t hw, float eps) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < numel;
         i += static_cast<int64_t>(gridDim.x) * kBlock) {
        float s, t;
        channel_affine(mean, var, weight, bias, (i / hw) % channels, eps, s, t);
        y[i] = __float2half_rn(bn_relu(half_at(x + i), s, t));
    }
}

template <int W>
void launch_flat(const __half* x, const float* mean, const float* var, const float* weight, const float* bias,
                 __half* y, int64_t numel, int64_t channels, int64_t hw, float eps, hipStream_t stream) {
    const int64_t num_vec = numel / W;
    const int64_t chunk = static_cast<int64_t>(kBlock) * kUnroll;
    int64_t blocks = (num_vec + chunk - 1) / chunk;
    if (blocks > kMaxFlatGrid) blocks = kMaxFlatGrid;
    hipLaunchKernelGGL(bn_relu_flat<W>, dim3(static_cast<unsigned>(blocks)), dim3(kBlock), 0, stream,
                       x, mean, var, weight, bias, y, static_cast<uint32_t>(num_vec),
                       make_fastdiv(static_cast<uint32_t>(hw / W)), make_fastdiv(static_cast<uint32_t>(channels)), eps);
}

}  // namespace

extern "C" int batchnorm_relu_infer(const __half* x, const float* running_mean, const float* running_var,
                                    const float* weight, const float* bias, __half* y, int64_t n, int64_t c,
                                    int64_t h, int64_t w, float eps, hipStream_t stream) {
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0) return static_cast<int>(hipSuccess);
    const int64_t hw = h * w;
    const int64_t planes = n * c;
    const int64_t numel = planes * hw;
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);

    if (hw >= kPlaneMin && addresses % 16 == 0) {
        const int64_t chunk = static_cast<int64_t>(kBlock) * kUnroll;
        int64_t chunks = (hw / 8 + chunk - 1) / chunk;
        if (chunks < 1) chunks = 1;
        if (chunks > kMaxGridY) chunks = kMaxGridY;
        const int64_t gx = planes < kMaxGridX ? planes : kMaxGridX;
        hipLaunchKernelGGL(bn_relu_planes, dim3(static_cast<unsigned>(gx), static_cast<unsigned>(chunks)),
                           dim3(kBlock), 0, stream, x, running_mean, running_var, weight, bias, y, planes, c, hw, eps);
    } else if (numel < (int64_t(1) << 31) && c < (int64_t(1) << 31)) {
        if (hw % 8 == 0 && addresses % 16 == 0) {
            launch_flat<8>(x, running_mean, running_var, weight, bias, y, numel, c, hw, eps, stream);
        } else if (hw % 4 == 0 && addresses % 8 == 0) {
            launch_flat<4>(x, running_mean, running_var, weight, bias, y, numel, c, hw, eps, stream);
        } else if (hw % 2 == 0 && addresses % 4 == 0) {
            launch_flat<2>(x, running_mean, running_var, weight, bias, y, numel, c, hw, eps, stream);
        } else {
            launch_flat<1>(x, running_mean, running_var, weight, bias, y, numel, c, hw, eps, stream);
        }
    } else {
        int64_t blocks = (numel + kBlock - 1) / kBlock;
        if (blocks > kMaxFlatGrid) blocks = kMaxFlatGrid;
        hipLaunchKernelGGL(bn_relu_any, dim3(static_cast<unsigned>(blocks)), dim3(kBlock), 0, stream,
                           x, running_mean, running_var, weight, bias, y, numel, c, hw, eps);
    }
    return static_cast<int>(hipGetLastError());
}

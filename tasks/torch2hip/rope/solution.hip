// Reference solution for the rotary embedding (rotate-half layout), fp16 q and out:
//   out[t, h, i]        = x1 * cos[t, i] - x2 * sin[t, i]
//   out[t, h, half + i] = x2 * cos[t, i] + x1 * sin[t, i],   x1 = q[t, h, i], x2 = q[t, h, half + i]
//
// - One pass: q read once and out written once (4 bytes per element, against ~36 for the
//   eight kernels of eager PyTorch); the fp32 tables are read by every head of a token, from
//   cache after the first.
// - Work item = (token, head, vector j of W pairs): W elements of x1, the W matching
//   elements of x2, W entries of each table. Items are numbered t-major, h, then j, so
//   consecutive threads read consecutive memory; a flat grid-stride loop over items keeps
//   every thread busy whatever heads and head_dim are. Item -> (t, h, j) by two integer
//   divisions, 32-bit when the item count allows.
// - Vectors: W = 8 (16-byte fp16 accesses, two float4 per table) when half % 8 == 0 and
//   the pointers are 16-byte aligned; W = 2 (__half2, float2) when half is even; W = 1
//   otherwise (any even head_dim).
// - fp32 arithmetic (one fma each), out rounded to fp16 once.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxGrid = 1 << 20;  // blocks; more items are walked grid-stride

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
    static __device__ __forceinline__ void load(const float* p, float (&f)[8]) {
        const float4 a = *reinterpret_cast<const float4*>(p);
        const float4 b = *reinterpret_cast<const float4*>(p + 4);
        f[0] = a.x; f[1] = a.y; f[2] = a.z; f[3] = a.w;
        f[4] = b.x; f[5] = b.y; f[6] = b.z; f[7] = b.w;
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
        const float2 v = __half22float2(*reinterpret_cast<const __half2*>(p));
        f[0] = v.x;
        f[1] = v.y;
    }
    static __device__ __forceinline__ void load(const float* p, float (&f)[2]) {
        const float2 v = *reinterpret_cast<const float2*>(p);
        f[0] = v.x;
        f[1] = v.y;
    }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[2]) {
        *reinterpret_cast<__half2*>(p) = __floats2half2_rn(f[0], f[1]);
    }
};

template <> struct Vec<1> {
    static __device__ __forceinline__ void load(const __half* p, float (&f)[1]) { f[0] = __half2float(*p); }
    static __device__ __forceinline__ void load(const float* p, float (&f)[1]) { f[0] = *p; }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[1]) { *p = __float2half_rn(f[0]); }
};

// I: the index type of items (uint32_t when the item count and the grid stride fit, else uint64_t).
template <int W, typename I>
__global__ void __launch_bounds__(kBlock)
rope_items(const __half* __restrict__ q, const float* __restrict__ cos_t, const float* __restrict__ sin_t,
           __half* __restrict__ out, I items, I per_token, I per_head, int64_t heads, int64_t head_dim) {
    const int64_t half = head_dim / 2;
    for (I g = static_cast<I>(blockIdx.x) * kBlock + threadIdx.x; g < items;
         g += static_cast<I>(gridDim.x) * kBlock) {
        const I t = g / per_token;
        const I r = g - t * per_token;
        const I h = r / per_head;
        const I j = r - h * per_head;
        const int64_t row = static_cast<int64_t>(t) * heads + static_cast<int64_t>(h);
        const int64_t col = static_cast<int64_t>(j) * W;
        const __half* x = q + row * head_dim + col;
        __half* o = out + row * head_dim + col;
        const int64_t tab = static_cast<int64_t>(t) * half + col;

        float x1[W], x2[W], c[W], s[W];
        Vec<W>::load(x, x1);
        Vec<W>::load(x + half, x2);
        Vec<W>::load(cos_t + tab, c);
        Vec<W>::load(sin_t + tab, s);
        float o1[W], o2[W];
#pragma unroll
        for (int e = 0; e < W; ++e) {
            o1[e] = fmaf(x1[e], c[e], -x2[e] * s[e]);
            o2[e] = fmaf(x2[e], c[e], x1[e] * s[e]);
        }
        Vec<W>::store(o, o1);
        Vec<W>::store(o + half, o2);
    }
}

template <int W>
void launch(const __half* q, const float* cos_t, const float* sin_t, __half* out, int64_t tokens, int64_t heads,
            int64_t head_dim, hipStream_t stream) {
    const int64_t per_head = head_dim / 2 / W;
    const int64_t per_token = heads * per_head;
    const int64_t items = tokens * per_token;
    int64_t blocks = (items + kBlock - 1) / kBlock;
    if (blocks > kMaxGrid) blocks = kMaxGrid;
    // 32-bit indices when items + the grid stride stay below 2^32.
    if (items < (int64_t(1) << 31)) {
        void (*kernel)(const __half*, const float*, const float*, __half*, uint32_t, uint32_t, uint32_t, int64_t,
                       int64_t) = rope_items<W, uint32_t>;
        hipLaunchKernelGGL(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kBlock), 0, stream,
                           q, cos_t, sin_t, out, static_cast<uint32_t>(items), static_cast<uint32_t>(per_token),
                           static_cast<uint32_t>(per_head), heads, head_dim);
    } else {
        void (*kernel)(const __half*, const float*, const float*, __half*, uint64_t, uint64_t, uint64_t, int64_t,
                       int64_t) = rope_items<W, uint64_t>;
        hipLaunchKernelGGL(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kBlock), 0, stream,
                           q, cos_t, sin_t, out, static_cast<uint64_t>(items), static_cast<uint64_t>(per_token),
                           static_cast<uint64_t>(per_head), heads, head_dim);
    }
}

}  // namespace

extern "C" int rope(const __half* q, const float* cos, const float* sin, __half* out, int64_t tokens, int64_t heads,
                    int64_t head_dim, hipStream_t stream) {
    if (tokens <= 0 || heads <= 0 || head_dim < 2) return static_cast<int>(hipSuccess);
    if (head_dim % 2 != 0) return static_cast<int>(hipErrorInvalidValue);  // rotate-half needs an even head_dim
    const int64_t half = head_dim / 2;
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(cos) |
                                reinterpret_cast<uintptr_t>(sin) | reinterpret_cast<uintptr_t>(out);
    if (half % 8 == 0 && addresses % 16 == 0) {
        launch<8>(q, cos, sin, out, tokens, heads, head_dim, stream);
    } else if (half % 2 == 0 && addresses % 8 == 0) {
        launch<2>(q, cos, sin, out, tokens, heads, head_dim, stream);
    } else {
        launch<1>(q, cos, sin, out, tokens, heads, head_dim, stream);
    }
    return static_cast<int>(hipGetLastError());
}

// Reference solution for SwiGLU: y[r, j] = silu(x[r, j]) * x[r, hidden + j], fp16 in and out.
//
// - One pass: each element of x is read once and each element of y written once (6 bytes per
//   output, against ~10 for eager PyTorch's silu-then-multiply with an fp16 intermediate).
// - Grid x walks the rows (grid-stride, so any token count works), grid y splits a row into
//   chunks of kBlock * kUnroll vectors; each thread issues all its loads before any math.
// - Vectors of W fp16 elements: 16-byte accesses (W = 8) when hidden % 8 == 0 and the
//   pointers are 16-byte aligned (every gate, up and output row then starts on a 16-byte
//   boundary), __half2 (W = 2) when hidden is even, single __half otherwise (odd hidden puts
//   the up half of each row at an odd element offset).
// - silu and the product in fp32 (exp2f and a fast divide), rounded to fp16 once.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kUnroll = 2;
constexpr int64_t kMaxGridX = 2147483647;  // rows per launch; more are walked grid-stride
constexpr int64_t kMaxGridY = 65535;

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
    static __device__ __forceinline__ void load(const __half* p, float (&f)[1]) { f[0] = __half2float(*p); }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[1]) { *p = __float2half_rn(f[0]); }
};

constexpr float kLog2e = 1.4426950408889634f;

// silu(g) * u = g / (1 + exp(-g)) * u. exp2f is one hardware instruction on both vendors
// (plus a scale); __fdividef is a reciprocal and a product (2 ulp): enough for an fp16
// result and cheap, which keeps the kernel memory-bound. For g < -88, exp(-g) = inf and
// __fdividef(g, inf) = -0, the right limit.
__device__ __forceinline__ float silu_mul(float g, float u) {
    return __fdividef(g, 1.0f + exp2f(-g * kLog2e)) * u;
}

template <int W>
__global__ void __launch_bounds__(kBlock)
swiglu_rows(const __half* __restrict__ x, __half* __restrict__ y, int64_t tokens, int64_t hidden) {
    const int64_t num_vec = hidden / W;
    const int64_t chunk = static_cast<int64_t>(kBlock) * kUnroll;
    for (int64_t row = blockIdx.x; row < tokens; row += gridDim.x) {
        const __half* gate = x + row * 2 * hidden;
        const __half* up = gate + hidden;
        __half* out = y + row * hidden;
        for (int64_t base = static_cast<int64_t>(blockIdx.y) * chunk; base < num_vec;
             base += static_cast<int64_t>(gridDim.y) * chunk) {
            float g[kUnroll][W];
            float u[kUnroll][W];
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) {
                const int64_t i = base + k * kBlock + threadIdx.x;
                if (i < num_vec) {
                    Vec<W>::load(gate + i * W, g[k]);
                    Vec<W>::load(up + i * W, u[k]);
                }
            }
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) {
                const int64_t i = base + k * kBlock + threadIdx.x;
                if (i < num_vec) {
                    float o[W];
#pragma unroll
                    for (int j = 0; j < W; ++j) o[j] = silu_mul(g[k][j], u[k][j]);
                    Vec<W>::store(out + i * W, o);
                }
            }
        }
    }
}

template <int W>
void launch(const __half* x, __half* y, int64_t tokens, int64_t hidden, hipStream_t stream) {
    const int64_t num_vec = hidden / W;
    const int64_t chunk = static_cast<int64_t>(kBlock) * kUnroll;
    int64_t chunks = (num_vec + chunk - 1) / chunk;
    if (chunks > kMaxGridY) chunks = kMaxGridY;
    const int64_t rows = tokens < kMaxGridX ? tokens : kMaxGridX;
    hipLaunchKernelGGL(swiglu_rows<W>, dim3(static_cast<unsigned>(rows), static_cast<unsigned>(chunks)),
                       dim3(kBlock), 0, stream, x, y, tokens, hidden);
}

}  // namespace

extern "C" int swiglu(const __half* x, __half* y, int64_t tokens, int64_t hidden, hipStream_t stream) {
    if (tokens <= 0 || hidden <= 0) return static_cast<int>(hipSuccess);
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
    if (hidden % 8 == 0 && addresses % 16 == 0) {
        launch<8>(x, y, tokens, hidden, stream);
    } else if (hidden % 2 == 0 && addresses % 4 == 0) {
        launch<2>(x, y, tokens, hidden, stream);
    } else {
        launch<1>(x, y, tokens, hidden, stream);
    }
    return static_cast<int>(hipGetLastError());
}

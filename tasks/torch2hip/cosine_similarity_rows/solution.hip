// Reference solution for F.cosine_similarity(a, b, dim=-1): one fp16 score per row pair.
//
// - One pass: <a, b>, ||a||^2 and ||b||^2 accumulated together in fp32, so a and b are read
//   once (4 bytes per element pair against ~20 for eager PyTorch's normalise-then-multiply
//   chain of about ten kernels) and one value per row is written.
//   s = dot / (max(||a||, eps) * max(||b||, eps)) equals the reference's
//   sum((a / max(||a||, eps)) * (b / max(||b||, eps))).
// - One warp per row, several rows per block (blockDim 256): enough rows in flight for short
//   rows; the loop over a row is unrolled by kUnroll with all loads issued before the math.
// - W = 8 (16-byte accesses) when dim % 8 == 0 and the pointers are 16-byte aligned, W = 2
//   (__half2) when dim is even, W = 1 otherwise (odd dim puts rows at odd element offsets).
// - Butterfly reduction with __shfl_xor over the warp (any warp width: 32 or 64).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kUnroll = 4;

template <int W> struct Pack;

template <> struct Pack<8> {
    using raw = uint4;
    static __device__ __forceinline__ raw load(const __half* p) { return *reinterpret_cast<const uint4*>(p); }
    static __device__ __forceinline__ void unpack(const raw& u, float (&f)[8]) {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            f[2 * k] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] & 0xffffu)));
            f[2 * k + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] >> 16)));
        }
    }
};

template <> struct Pack<2> {
    using raw = __half2;
    static __device__ __forceinline__ raw load(const __half* p) { return *reinterpret_cast<const __half2*>(p); }
    static __device__ __forceinline__ void unpack(const raw& u, float (&f)[2]) {
        const float2 v = __half22float2(u);
        f[0] = v.x;
        f[1] = v.y;
    }
};

template <> struct Pack<1> {
    using raw = __half;
    static __device__ __forceinline__ raw load(const __half* p) { return *p; }
    static __device__ __forceinline__ void unpack(const raw& u, float (&f)[1]) { f[0] = __half2float(u); }
};

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
    return v;
}

template <int W>
__device__ __forceinline__ void accumulate(const typename Pack<W>::raw& ra, const typename Pack<W>::raw& rb,
                                           float& dot, float& saa, float& sbb) {
    float fa[W], fb[W];
    Pack<W>::unpack(ra, fa);
    Pack<W>::unpack(rb, fb);
#pragma unroll
    for (int j = 0; j < W; ++j) {
        dot = fmaf(fa[j], fb[j], dot);
        saa = fmaf(fa[j], fa[j], saa);
        sbb = fmaf(fb[j], fb[j], sbb);
    }
}

template <int W>
__global__ void __launch_bounds__(kBlock)
cosine_rows(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ s, int64_t rows,
            int64_t dim, float eps) {
    const int lane = threadIdx.x % warpSize;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (kBlock / warpSize) + threadIdx.x / warpSize;
    if (row >= rows) return;  // the whole warp leaves together
    const int64_t nvec = dim / W;
    const __half* ar = a + row * dim;
    const __half* br = b + row * dim;
    float dot = 0.0f, saa = 0.0f, sbb = 0.0f;
    const int64_t step = static_cast<int64_t>(warpSize) * kUnroll;
    int64_t base = 0;
    for (; base + step <= nvec; base += step) {  // full chunks: no bounds checks
        typename Pack<W>::raw ra[kUnroll], rb[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const int64_t i = base + k * warpSize + lane;
            ra[k] = Pack<W>::load(ar + i * W);
            rb[k] = Pack<W>::load(br + i * W);
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) accumulate<W>(ra[k], rb[k], dot, saa, sbb);
    }
    for (int64_t i = base + lane; i < nvec; i += warpSize) {  // the tail chunk
        accumulate<W>(Pack<W>::load(ar + i * W), Pack<W>::load(br + i * W), dot, saa, sbb);
    }
    dot = warp_sum(dot);
    saa = warp_sum(saa);
    sbb = warp_sum(sbb);
    if (lane == 0) {
        const float denom = fmaxf(sqrtf(saa), eps) * fmaxf(sqrtf(sbb), eps);
        s[row] = __float2half_rn(dot / denom);
    }
}

int warp_size() {
    static int cached = 0;
    if (cached == 0) {
        int device = 0;
        int ws = 0;
        if (hipGetDevice(&device) != hipSuccess ||
            hipDeviceGetAttribute(&ws, hipDeviceAttributeWarpSize, device) != hipSuccess || ws <= 0) {
            ws = 32;  // more blocks than needed on wider warps: the extra warps leave at once
        }
        cached = ws;
    }
    return cached;
}

template <int W>
void launch(const __half* a, const __half* b, __half* s, int64_t rows, int64_t dim, float eps, hipStream_t stream) {
    const int64_t rows_per_block = kBlock / warp_size();
    const unsigned grid = static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
    hipLaunchKernelGGL(cosine_rows<W>, dim3(grid), dim3(kBlock), 0, stream, a, b, s, rows, dim, eps);
}

}  // namespace

extern "C" int cosine_similarity_rows(const __half* a, const __half* b, __half* s, int64_t rows, int64_t dim,
                                      float eps, hipStream_t stream) {
    if (rows <= 0 || dim <= 0) return static_cast<int>(hipSuccess);
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b);
    if (dim % 8 == 0 && addresses % 16 == 0) {
        launch<8>(a, b, s, rows, dim, eps, stream);
    } else if (dim % 2 == 0 && addresses % 4 == 0) {
        launch<2>(a, b, s, rows, dim, eps, stream);
    } else {
        launch<1>(a, b, s, rows, dim, eps, stream);
    }
    return static_cast<int>(hipGetLastError());
}

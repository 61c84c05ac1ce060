// Reference solution for F.normalize(x, p=2, dim=-1): y = x / max(||x||_2, eps), fp16 rows.
//
// - One warp per row, several rows per block (blockDim 256): enough rows in flight per SM
//   for short rows (300-1024 elements), where one block per row would be latency-bound.
// - The row stays in registers between the reduction and the scaling: each lane holds K
//   packed vectors of W fp16 elements (K chosen on the host from the row length and the warp
//   width), so x is read from memory once and y written once: 4 bytes per element, against
//   ~6 plus three launches for eager PyTorch (norm, clamp_min, broadcast division).
//   Rows longer than the largest register template take a two-pass kernel that reads the
//   row again (from L2) instead of holding it.
// - W = 8 (16-byte accesses) when dim % 8 == 0 and the pointers are 16-byte aligned, W = 2
//   (__half2) when dim is even, W = 1 otherwise (odd dim puts rows at odd element offsets).
// - Sum of squares in fp32, butterfly reduction with __shfl_xor over the warp (any warp
//   width: 32 on NVIDIA, 64 on AMD CDNA); one reciprocal per row.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;

// W consecutive fp16 elements moved as one access, held packed in registers.
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

template <> struct Pack<2> {
    using raw = __half2;
    static __device__ __forceinline__ raw load(const __half* p) { return *reinterpret_cast<const __half2*>(p); }
    static __device__ __forceinline__ void unpack(const raw& u, float (&f)[2]) {
        const float2 v = __half22float2(u);
        f[0] = v.x;
        f[1] = v.y;
    }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[2]) {
        *reinterpret_cast<__half2*>(p) = __floats2half2_rn(f[0], f[1]);
    }
};

template <> struct Pack<1> {
    using raw = __half;
    static __device__ __forceinline__ raw load(const __half* p) { return *p; }
    static __device__ __forceinline__ void unpack(const raw& u, float (&f)[1]) { f[0] = __half2float(u); }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[1]) { *p = __float2half_rn(f[0]); }
};

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
    return v;
}

// Row in registers: lane l holds vectors l, l + warpSize, ..., l + (K - 1) * warpSize.
template <int W, int K>
__global__ void __launch_bounds__(kBlock)
l2norm_cached(const __half* __restrict__ x, __half* __restrict__ y, int64_t rows, int64_t dim, float eps) {
    const int lane = threadIdx.x % warpSize;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (kBlock / warpSize) + threadIdx.x / warpSize;
    if (row >= rows) return;  // the whole warp leaves together
    const int64_t nvec = dim / W;
    const __half* xr = x + row * dim;
    __half* yr = y + row * dim;
    typename Pack<W>::raw r[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int64_t i = static_cast<int64_t>(k) * warpSize + lane;
        if (i < nvec) r[k] = Pack<W>::load(xr + i * W);
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int64_t i = static_cast<int64_t>(k) * warpSize + lane;
        if (i < nvec) {
            float f[W];
            Pack<W>::unpack(r[k], f);
#pragma unroll
            for (int j = 0; j < W; ++j) ss = fmaf(f[j], f[j], ss);
        }
    }
    ss = warp_sum(ss);
    const float inv = 1.0f / fmaxf(sqrtf(ss), eps);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int64_t i = static_cast<int64_t>(k) * warpSize + lane;
        if (i < nvec) {
            float f[W];
            Pack<W>::unpack(r[k], f);
#pragma unroll
            for (int j = 0; j < W; ++j) f[j] *= inv;
            Pack<W>::store(yr + i * W, f);
        }
    }
}

// Any row length: sum of squares in a first pass, scaling in a second (the row comes back
// from L2).
template <int W>
__global__ void __launch_bounds__(kBlock)
l2norm_two_pass(const __half* __restrict__ x, __half* __restrict__ y, int64_t rows, int64_t dim, float eps) {
    const int lane = threadIdx.x % warpSize;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (kBlock / warpSize) + threadIdx.x / warpSize;
    if (row >= rows) return;
    const int64_t nvec = dim / W;
    const __half* xr = x + row * dim;
    __half* yr = y + row * dim;
    float ss = 0.0f;
    for (int64_t i = lane; i < nvec; i += warpSize) {
        float f[W];
        Pack<W>::unpack(Pack<W>::load(xr + i * W), f);
#pragma unroll
        for (int j = 0; j < W; ++j) ss = fmaf(f[j], f[j], ss);
    }
    ss = warp_sum(ss);
    const float inv = 1.0f / fmaxf(sqrtf(ss), eps);
    for (int64_t i = lane; i < nvec; i += warpSize) {
        float f[W];
        Pack<W>::unpack(Pack<W>::load(xr + i * W), f);
#pragma unroll
        for (int j = 0; j < W; ++j) f[j] *= inv;
        Pack<W>::store(yr + i * W, f);
    }
}

int warp_size() {
    static int cached = 0;
    if (cached == 0) {
        int device = 0;
        int ws = 0;
        if (hipGetDevice(&device) != hipSuccess ||
            hipDeviceGetAttribute(&ws, hipDeviceAttributeWarpSize, device) != hipSuccess || ws <= 0) {
            ws = 32;  // the narrowest warp: K is then never too small for wider ones
        }
        cached = ws;
    }
    return cached;
}

template <int W, int K>
void launch_cached(const __half* x, __half* y, int64_t rows, int64_t dim, float eps, unsigned grid,
                   hipStream_t stream) {
    hipLaunchKernelGGL((l2norm_cached<W, K>), dim3(grid), dim3(kBlock), 0, stream, x, y, rows, dim, eps);
}

// Largest K: 16 (W = 8: 128 halves = 64 registers per lane), 32 for W = 2 and W = 1.
template <int W>
void launch(const __half* x, __half* y, int64_t rows, int64_t dim, float eps, hipStream_t stream) {
    const int ws = warp_size();
    const int64_t rows_per_block = kBlock / ws;
    const unsigned grid = static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
    const int64_t per_lane = (dim / W + ws - 1) / ws;  // vectors each lane must hold
    if (per_lane <= 1) launch_cached<W, 1>(x, y, rows, dim, eps, grid, stream);
    else if (per_lane <= 2) launch_cached<W, 2>(x, y, rows, dim, eps, grid, stream);
    else if (per_lane <= 4) launch_cached<W, 4>(x, y, rows, dim, eps, grid, stream);
    else if (per_lane <= 8) launch_cached<W, 8>(x, y, rows, dim, eps, grid, stream);
    else if (per_lane <= 16) launch_cached<W, 16>(x, y, rows, dim, eps, grid, stream);
    else if (W < 8 && per_lane <= 32) launch_cached<W, (W < 8 ? 32 : 16)>(x, y, rows, dim, eps, grid, stream);
    else hipLaunchKernelGGL((l2norm_two_pass<W>), dim3(grid), dim3(kBlock), 0, stream, x, y, rows, dim, eps);
}

}  // namespace

extern "C" int l2_normalize_rows(const __half* x, __half* y, int64_t rows, int64_t dim, float eps,
                                 hipStream_t stream) {
    if (rows <= 0 || dim <= 0) return static_cast<int>(hipSuccess);
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
    if (dim % 8 == 0 && addresses % 16 == 0) {
        launch<8>(x, y, rows, dim, eps, stream);
    } else if (dim % 2 == 0 && addresses % 4 == 0) {
        launch<2>(x, y, rows, dim, eps, stream);
    } else {
        launch<1>(x, y, rows, dim, eps, stream);
    }
    return static_cast<int>(hipGetLastError());
}

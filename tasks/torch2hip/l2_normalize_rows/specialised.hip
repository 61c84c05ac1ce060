// Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
// wrong on others.
//
// The solution's register-cached kernel with only its 16-byte path and two assumptions
// baked in, both true for every seen shape: dim is a multiple of 8, and a row fits in
// 16 vectors of 8 elements per lane (dim <= 4096 on 32-wide warps, 8192 on 64-wide). x and y are addressed
// as arrays of 8-element vectors, row r starting at vector r * (dim / 8). When dim % 8 != 0
// that stride is short: every row after the first reads from and writes to the wrong place
// and the last dim % 8 elements of each row (and the end of y) are never written; when a
// row is longer than the registers hold, its tail is never written. Every access stays
// inside the buffers and on a 16-byte boundary (the host checks the base pointers), so it
// never faults: the results are quietly wrong.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kMaxVecPerLane = 16;

__device__ __forceinline__ void unpack8(const uint4& u, float (&f)[8]) {
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        f[2 * k] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] & 0xffffu)));
        f[2 * k + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] >> 16)));
    }
}

__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
    unsigned w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        w[k] = static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k]))) |
               (static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k + 1]))) << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

template <int K>
__global__ void __launch_bounds__(kBlock)
l2norm_vec8(const uint4* __restrict__ x, uint4* __restrict__ y, int64_t rows, int64_t dim, float eps) {
    const int lane = threadIdx.x % warpSize;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (kBlock / warpSize) + threadIdx.x / warpSize;
    if (row >= rows) return;
    const int64_t nvec = dim / 8;                // assumes dim % 8 == 0
    const uint4* xr = x + row * nvec;            // == row * dim / 8 only when dim % 8 == 0
    uint4* yr = y + row * nvec;
    uint4 r[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int64_t i = static_cast<int64_t>(k) * warpSize + lane;
        if (i < nvec) r[k] = xr[i];
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int64_t i = static_cast<int64_t>(k) * warpSize + lane;
        if (i < nvec) {
            float f[8];
            unpack8(r[k], f);
#pragma unroll
            for (int j = 0; j < 8; ++j) ss = fmaf(f[j], f[j], ss);
        }
    }
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) ss += __shfl_xor(ss, offset);
    const float inv = 1.0f / fmaxf(sqrtf(ss), eps);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int64_t i = static_cast<int64_t>(k) * warpSize + lane;
        if (i < nvec) {
            float f[8];
            unpack8(r[k], f);
#pragma unroll
            for (int j = 0; j < 8; ++j) f[j] *= inv;
            yr[i] = pack8(f);
        }
    }
}

int warp_size() {
    static int cached = 0;
    if (cached == 0) {
        int device = 0;
        int ws = 0;
        if (hipGetDevice(&device) != hipSuccess ||
            hipDeviceGetAttribute(&ws, hipDeviceAttributeWarpSize, device) != hipSuccess || ws <= 0) {
            ws = 32;
        }
        cached = ws;
    }
    return cached;
}

}  // namespace

extern "C" int l2_normalize_rows(const __half* x, __half* y, int64_t rows, int64_t dim, float eps,
                                 hipStream_t stream) {
    if (rows <= 0 || dim < 8) return static_cast<int>(hipSuccess);
    if ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 != 0)
        return static_cast<int>(hipErrorInvalidValue);
    const int ws = warp_size();
    const int64_t rows_per_block = kBlock / ws;
    const unsigned grid = static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
    const int64_t per_lane = (dim / 8 + ws - 1) / ws;
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    uint4* yv = reinterpret_cast<uint4*>(y);
    if (per_lane <= 4) {
        hipLaunchKernelGGL(l2norm_vec8<4>, dim3(grid), dim3(kBlock), 0, stream, xv, yv, rows, dim, eps);
    } else {
        hipLaunchKernelGGL(l2norm_vec8<kMaxVecPerLane>, dim3(grid), dim3(kBlock), 0, stream, xv, yv, rows, dim, eps);
    }
    return static_cast<int>(hipGetLastError());
}

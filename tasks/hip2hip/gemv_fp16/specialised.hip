// Decode GEMV y = W x, fp16: a SPECIALISED kernel, tuned on the seen shapes and wrong
// elsewhere.
//
// Deliberately flawed (the harness must catch it). Every seen k (4096, 8192) is a multiple
// of 16 * 32 = 512 halves, so the fast path has each lane load exactly
// steps = k / (16 * warpSize) pairs of uint4 per row, with no remainder loop. The division
// rounds down: for a k that is a multiple of 8 but not of 16 * warpSize (e.g. 4544) the
// last k % (16 * warpSize) columns are never multiplied and y is wrong. Every access stays
// inside its row, so it never faults. Shapes outside the fast path (k % 8 != 0, unaligned
// pointers, k < 16 * warpSize) go to a plain, correct warp-per-row kernel.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define SPEC_THREADS 256
#define SPEC_MAX_GRID 2147483647LL

static __device__ __forceinline__ float spec_lo(unsigned int bits) {
    return __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
}
static __device__ __forceinline__ float spec_hi(unsigned int bits) {
    return __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}
static __device__ __forceinline__ float spec_dot8(const uint4& a, const uint4& b, float acc) {
    acc = fmaf(spec_lo(a.x), spec_lo(b.x), acc);
    acc = fmaf(spec_hi(a.x), spec_hi(b.x), acc);
    acc = fmaf(spec_lo(a.y), spec_lo(b.y), acc);
    acc = fmaf(spec_hi(a.y), spec_hi(b.y), acc);
    acc = fmaf(spec_lo(a.z), spec_lo(b.z), acc);
    acc = fmaf(spec_hi(a.z), spec_hi(b.z), acc);
    acc = fmaf(spec_lo(a.w), spec_lo(b.w), acc);
    acc = fmaf(spec_hi(a.w), spec_hi(b.w), acc);
    return acc;
}
static __device__ __forceinline__ float spec_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// One warp per row; lane l reads uint4 number l + 2 * s * warpSize and the next warp's
// worth, for s < k / (16 * warpSize) (rounded down: the bug).
__global__ void __launch_bounds__(SPEC_THREADS)
gemv_fixed_steps_kernel(const __half* __restrict__ w, const __half* __restrict__ x, __half* __restrict__ y,
                        int64_t n, int64_t k) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t warp = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t nwarps = (int64_t)gridDim.x * warps_per_block;
    const int64_t ws = warpSize;
    const int64_t steps = k / (16 * ws);
    const uint4* __restrict__ xv = reinterpret_cast<const uint4*>(x);
    for (int64_t row = warp; row < n; row += nwarps) {
        const uint4* __restrict__ wr = reinterpret_cast<const uint4*>(w + row * k);
        float a = 0.0f, b = 0.0f;
        for (int64_t s = 0; s < steps; ++s) {
            const int64_t i = lane + 2 * s * ws;
            const uint4 p = wr[i], q = wr[i + ws];
            a = spec_dot8(p, xv[i], a);
            b = spec_dot8(q, xv[i + ws], b);
        }
        const float t = spec_warp_sum(a + b);
        if (lane == 0) y[row] = __float2half_rn(t);
    }
}

// Fallback: correct for every shape, one warp per row, scalar coalesced loads.
__global__ void __launch_bounds__(SPEC_THREADS)
gemv_fallback_kernel(const __half* __restrict__ w, const __half* __restrict__ x, __half* __restrict__ y, int64_t n,
                     int64_t k) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t warp = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t nwarps = (int64_t)gridDim.x * warps_per_block;
    for (int64_t row = warp; row < n; row += nwarps) {
        const __half* __restrict__ wr = w + row * k;
        float a = 0.0f;
        for (int64_t j = lane; j < k; j += warpSize) a = fmaf(__half2float(wr[j]), __half2float(x[j]), a);
        const float t = spec_warp_sum(a);
        if (lane == 0) y[row] = __float2half_rn(t);
    }
}

extern "C" int gemv_fp16(const __half* w, const __half* x, __half* y, int64_t n, int64_t k, hipStream_t stream) {
    if (n <= 0) return (int)hipSuccess;
    const int64_t warps_per_block = SPEC_THREADS / 32;  // grid sized for 32-lane warps
    int64_t blocks = (n + warps_per_block - 1) / warps_per_block;
    if (blocks > SPEC_MAX_GRID) blocks = SPEC_MAX_GRID;
    const bool aligned = (reinterpret_cast<uintptr_t>(w) % 16) == 0 && (reinterpret_cast<uintptr_t>(x) % 16) == 0;
    // 1024 covers 16 * warpSize for 32 and 64 lanes: the fast path then does >= 1 step.
    if (aligned && k % 8 == 0 && k >= 1024)
        hipLaunchKernelGGL(gemv_fixed_steps_kernel, dim3((unsigned int)blocks), dim3(SPEC_THREADS), 0, stream, w, x, y,
                           n, k);
    else
        hipLaunchKernelGGL(gemv_fallback_kernel, dim3((unsigned int)blocks), dim3(SPEC_THREADS), 0, stream, w, x, y,
                           n, k);
    return (int)hipGetLastError();
}

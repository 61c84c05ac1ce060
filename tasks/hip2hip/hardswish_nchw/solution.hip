// Hard-swish on an NCHW feature map, fp16 in/out, fp32 math: a general, portable solution.
//
// * The contiguous tensor is n = batch * channels * height * width elements, taken as
//   n / 8 16-byte vectors of 8 halves: each thread loads four vectors (strided by the
//   block size, so warp accesses are coalesced) before computing, so many bytes are in
//   flight per SM, and stores 16-byte vectors.
// * The n % 8 trailing elements are done by the first threads of block 0.
// * Pointers that are not 16-byte aligned go to a scalar grid-stride kernel.
// * The same arithmetic as the starting kernel (x * clamp(x + 3, 0, 6) / 6 in fp32).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define HS_THREADS 256
#define HS_VECS 4  // 16-byte vectors per thread

static __device__ __forceinline__ float hardswish(float v) {
    return v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
}

static __device__ __forceinline__ unsigned int hardswish_pair(unsigned int bits) {
    const float lo = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    const float hi = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
    return (unsigned int)__half_as_ushort(__float2half_rn(hardswish(lo))) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hardswish(hi))) << 16);
}

// x and y 16-byte aligned; nvec = n / 8 vectors, then n % 8 scalar elements.
__global__ void hardswish_vec8_kernel(const uint4* __restrict__ x4, uint4* __restrict__ y4, int64_t nvec,
                                      const __half* __restrict__ x, __half* __restrict__ y, int64_t n) {
    const int64_t first = (int64_t)blockIdx.x * (HS_THREADS * HS_VECS) + threadIdx.x;
    uint4 v[HS_VECS];
#pragma unroll
    for (int k = 0; k < HS_VECS; ++k) {
        const int64_t i = first + (int64_t)k * HS_THREADS;
        if (i < nvec) v[k] = x4[i];
    }
#pragma unroll
    for (int k = 0; k < HS_VECS; ++k) {
        const int64_t i = first + (int64_t)k * HS_THREADS;
        if (i < nvec) {
            uint4 o;
            o.x = hardswish_pair(v[k].x);
            o.y = hardswish_pair(v[k].y);
            o.z = hardswish_pair(v[k].z);
            o.w = hardswish_pair(v[k].w);
            y4[i] = o;
        }
    }
    if (blockIdx.x == 0) {
        const int64_t j = nvec * 8 + threadIdx.x;  // at most 7 tail elements
        if (j < n) y[j] = __float2half_rn(hardswish(__half2float(x[j])));
    }
}

// Any alignment: grid-stride, scalar.
__global__ void hardswish_scalar_kernel(const __half* __restrict__ x, __half* __restrict__ y, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = __float2half_rn(hardswish(__half2float(x[i])));
}

extern "C" int hardswish_nchw(const __half* x, __half* y, int64_t batch, int64_t channels, int64_t height,
                              int64_t width, hipStream_t stream) {
    const int64_t n = batch * channels * height * width;
    if (n <= 0) return (int)hipSuccess;
    const bool aligned16 = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    if (aligned16) {
        const int64_t nvec = n / 8;
        const int64_t per_block = (int64_t)HS_THREADS * HS_VECS;
        int64_t blocks = (nvec + per_block - 1) / per_block;
        if (blocks < 1) blocks = 1;  // n < 8: block 0 does the tail alone
        hipLaunchKernelGGL(hardswish_vec8_kernel, dim3((unsigned int)blocks), dim3(HS_THREADS), 0, stream,
                           reinterpret_cast<const uint4*>(x), reinterpret_cast<uint4*>(y), nvec, x, y, n);
    } else {
        int64_t blocks = (n + HS_THREADS * 4 - 1) / (HS_THREADS * 4);
        if (blocks > 65536) blocks = 65536;
        hipLaunchKernelGGL(hardswish_scalar_kernel, dim3((unsigned int)blocks), dim3(HS_THREADS), 0, stream, x, y, n);
    }
    return (int)hipGetLastError();
}

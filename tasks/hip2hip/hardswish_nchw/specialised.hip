// Hard-swish on an NCHW feature map, fp16: a SPECIALISED kernel, tuned on the seen shapes
// and wrong elsewhere.
//
// Deliberately flawed (the harness must catch it). Every seen total is a multiple of 8, so
// the kernel takes the tensor as n / 8 16-byte vectors (four per thread, loaded before
// computing) and never handles the n % 8 trailing elements: when the total is not a
// multiple of 8 (odd spatial sizes, odd channel counts) the last few outputs stay
// unwritten. Every access stays inside the tensors (n / 8 is rounded down), so it never
// faults. Pointers are assumed 16-byte aligned (the harness's allocations are).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define SPEC_THREADS 256
#define SPEC_VECS 4

static __device__ __forceinline__ float spec_hardswish(float v) {
    return v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
}

static __device__ __forceinline__ unsigned int spec_pair(unsigned int bits) {
    const float lo = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    const float hi = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
    return (unsigned int)__half_as_ushort(__float2half_rn(spec_hardswish(lo))) |
           ((unsigned int)__half_as_ushort(__float2half_rn(spec_hardswish(hi))) << 16);
}

__global__ void hardswish_spec_kernel(const uint4* __restrict__ x4, uint4* __restrict__ y4, int64_t nvec) {
    const int64_t first = (int64_t)blockIdx.x * (SPEC_THREADS * SPEC_VECS) + threadIdx.x;
    uint4 v[SPEC_VECS];
#pragma unroll
    for (int k = 0; k < SPEC_VECS; ++k) {
        const int64_t i = first + (int64_t)k * SPEC_THREADS;
        if (i < nvec) v[k] = x4[i];
    }
#pragma unroll
    for (int k = 0; k < SPEC_VECS; ++k) {
        const int64_t i = first + (int64_t)k * SPEC_THREADS;
        if (i < nvec) {
            uint4 o;
            o.x = spec_pair(v[k].x);
            o.y = spec_pair(v[k].y);
            o.z = spec_pair(v[k].z);
            o.w = spec_pair(v[k].w);
            y4[i] = o;
        }
    }
}

extern "C" int hardswish_nchw(const __half* x, __half* y, int64_t batch, int64_t channels, int64_t height,
                              int64_t width, hipStream_t stream) {
    const int64_t n = batch * channels * height * width;
    const int64_t nvec = n / 8;  // BUG, kept on purpose: the n % 8 tail is never written
    if (nvec <= 0) return (int)hipSuccess;
    const int64_t per_block = (int64_t)SPEC_THREADS * SPEC_VECS;
    const int64_t blocks = (nvec + per_block - 1) / per_block;
    hipLaunchKernelGGL(hardswish_spec_kernel, dim3((unsigned int)blocks), dim3(SPEC_THREADS), 0, stream,
                       reinterpret_cast<const uint4*>(x), reinterpret_cast<uint4*>(y), nvec);
    return (int)hipGetLastError();
}

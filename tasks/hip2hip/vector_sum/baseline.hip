// Sum of each row of an fp32 [segments, length] tensor: the starting kernel.
//
// One block of 1024 threads per segment. Each thread adds up a strided slice of the
// segment (coalesced scalar loads), then the block halves a shared-memory array with a
// barrier per step. Correct for every shape, but a segment is read by a single block on a
// single SM: with a handful of long segments most of the GPU idles, and with very short
// segments most of the 1024 threads have nothing to add.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define VS_BASELINE_THREADS 1024

__global__ void vector_sum_block_per_segment_kernel(const float* __restrict__ x, float* __restrict__ out,
                                                    int64_t segments, int64_t length) {
    __shared__ float partial[VS_BASELINE_THREADS];
    const int t = threadIdx.x;
    for (int64_t seg = blockIdx.x; seg < segments; seg += gridDim.x) {
        const float* xs = x + seg * length;
        float s = 0.0f;
        for (int64_t i = t; i < length; i += blockDim.x) s += xs[i];
        partial[t] = s;
        __syncthreads();
        for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
            if (t < stride) partial[t] += partial[t + stride];
            __syncthreads();
        }
        if (t == 0) out[seg] = partial[0];
        __syncthreads();  // partial[0] is read before the next segment overwrites it
    }
}

extern "C" int vector_sum(const float* x, float* out, int64_t segments, int64_t length, hipStream_t stream) {
    if (segments <= 0) return (int)hipSuccess;
    const int64_t blocks = segments < 2147483647LL ? segments : 2147483647LL;
    hipLaunchKernelGGL(vector_sum_block_per_segment_kernel, dim3((unsigned int)blocks), dim3(VS_BASELINE_THREADS), 0,
                       stream, x, out, segments, length);
    return (int)hipGetLastError();
}

// SwiGLU on a fused gate/up row, fp16 in/out, fp32 math: the starting kernel.
//
// One thread per output element over the flat [tokens, inter] output: the row and column
// come from a 64-bit division, then a scalar 2-byte load of the gate and of the up value,
// silu with the accurate expf, and a scalar 2-byte store. Correct for every shape, but
// each thread moves only 6 bytes, so few bytes are in flight per SM.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void swiglu_elementwise_kernel(const __half* __restrict__ x, __half* __restrict__ y, int64_t n,
                                          int64_t inter) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int64_t t = i / inter;
    const int64_t j = i - t * inter;
    const __half* row = x + t * 2 * inter;
    const float g = __half2float(row[j]);
    const float u = __half2float(row[inter + j]);
    const float silu = g / (1.0f + expf(-g));
    y[i] = __float2half(silu * u);
}

extern "C" int swiglu_fused_gate_up(const __half* x, __half* y, int64_t tokens, int64_t inter, hipStream_t stream) {
    const int64_t n = tokens * inter;
    if (n <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;  // < 2**31 for n < 2**39
    hipLaunchKernelGGL(swiglu_elementwise_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, y, n,
                       inter);
    return (int)hipGetLastError();
}

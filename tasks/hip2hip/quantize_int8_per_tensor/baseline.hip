// Static per-tensor fp16 -> int8 quantisation: the starting kernel.
//
// One thread per element: a scalar 2-byte load, x * inv_scale rounded half to even with
// rintf, clamped to [-128, 127], a scalar 1-byte store. Correct for every shape, but each
// thread moves only 3 bytes, so few bytes are in flight per SM and the byte stores are
// narrow.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void quantize_int8_elementwise_kernel(const __half* __restrict__ x, int8_t* __restrict__ q, int64_t n,
                                                 float inv_scale) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float r = rintf(__half2float(x[i]) * inv_scale);  // round half to even
    q[i] = (int8_t)fminf(fmaxf(r, -128.0f), 127.0f);
}

extern "C" int quantize_int8_per_tensor(const __half* x, int8_t* q, int64_t tokens, int64_t hidden, float inv_scale,
                                        hipStream_t stream) {
    const int64_t n = tokens * hidden;
    if (n <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;  // < 2**31 for n < 2**39
    hipLaunchKernelGGL(quantize_int8_elementwise_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, q, n,
                       inv_scale);
    return (int)hipGetLastError();
}

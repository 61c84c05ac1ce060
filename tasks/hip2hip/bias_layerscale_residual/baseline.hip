// Bias + LayerScale + residual add, fp16: the starting kernel.
//
// Written as two simple elementwise kernels, one thread per element, scalar 2-byte
// accesses, the column from a 64-bit remainder: the first stores x + bias into out (an
// fp16 intermediate), the second reads it back and stores residual + gamma * out. Correct
// for every shape (the fp16 rounding of the intermediate stays far inside the tolerance),
// but out is written twice and read once more, and each thread moves only a few bytes.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void add_bias_kernel(const __half* __restrict__ x, const __half* __restrict__ bias, __half* __restrict__ out,
                                int64_t n, int64_t dim) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = __float2half(__half2float(x[i]) + __half2float(bias[i % dim]));
}

__global__ void scale_add_residual_kernel(const __half* __restrict__ residual, const __half* __restrict__ gamma,
                                          __half* __restrict__ out, int64_t n, int64_t dim) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = __float2half(__half2float(residual[i]) + __half2float(gamma[i % dim]) * __half2float(out[i]));
}

extern "C" int bias_layerscale_residual(const __half* x, const __half* residual, const __half* bias,
                                        const __half* gamma, __half* out, int64_t tokens, int64_t dim,
                                        hipStream_t stream) {
    const int64_t n = tokens * dim;
    if (n <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;  // < 2**31 for n < 2**39
    hipLaunchKernelGGL(add_bias_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, bias, out, n, dim);
    hipLaunchKernelGGL(scale_add_residual_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, residual, gamma,
                       out, n, dim);
    return (int)hipGetLastError();
}

// Decode GEMV y = W x, fp16 in/out, fp32 accumulation: the starting kernel.
//
// One thread per output row, a sequential loop over k. Correct for every shape, but
// neighbouring threads read addresses a whole row (2 * k bytes) apart, so every load of a
// warp touches 32 different cache lines; each access is a scalar 2-byte load; and with a
// few thousand rows only a few thousand threads work.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void gemv_row_per_thread_kernel(const __half* __restrict__ w, const __half* __restrict__ x,
                                           __half* __restrict__ y, int64_t n, int64_t k) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const __half* wr = w + row * k;
    float acc = 0.0f;
    for (int64_t j = 0; j < k; ++j) acc += __half2float(wr[j]) * __half2float(x[j]);
    y[row] = __float2half_rn(acc);
}

extern "C" int gemv_fp16(const __half* w, const __half* x, __half* y, int64_t n, int64_t k, hipStream_t stream) {
    if (n <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (n + threads - 1) / threads;
    hipLaunchKernelGGL(gemv_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, w, x, y, n, k);
    return (int)hipGetLastError();
}

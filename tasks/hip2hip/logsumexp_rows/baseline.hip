// Row log-sum-exp, fp16 in, fp32 out: the starting kernel.
//
// One block of 256 threads per row: a pass for the row maximum, a second pass for the
// sum of exp(x - max), each combined by halving a shared-memory array with a barrier per
// step; out = max + log(sum). Correct for every shape, but the loads are scalar 2-byte
// ones, the row is read twice, and with few rows (a decode batch) only a few SMs work,
// each with a single block.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define LSE_BASELINE_THREADS 256

__global__ void logsumexp_block_per_row_kernel(const __half* __restrict__ x, float* __restrict__ out, int64_t rows,
                                               int64_t cols) {
    __shared__ float red[LSE_BASELINE_THREADS];
    const int t = threadIdx.x;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const __half* xr = x + row * cols;

        float m = -INFINITY;
        for (int64_t j = t; j < cols; j += blockDim.x) m = fmaxf(m, __half2float(xr[j]));
        red[t] = m;
        __syncthreads();
        for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
            if (t < stride) red[t] = fmaxf(red[t], red[t + stride]);
            __syncthreads();
        }
        m = red[0];
        __syncthreads();  // red[0] is read by every thread before it is overwritten

        float s = 0.0f;
        for (int64_t j = t; j < cols; j += blockDim.x) s += expf(__half2float(xr[j]) - m);
        red[t] = s;
        __syncthreads();
        for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
            if (t < stride) red[t] += red[t + stride];
            __syncthreads();
        }
        if (t == 0) out[row] = m + logf(red[0]);
        __syncthreads();
    }
}

extern "C" int logsumexp_rows(const __half* x, float* out, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0) return (int)hipSuccess;
    const int64_t blocks = rows < 2147483647LL ? rows : 2147483647LL;
    hipLaunchKernelGGL(logsumexp_block_per_row_kernel, dim3((unsigned int)blocks), dim3(LSE_BASELINE_THREADS), 0,
                       stream, x, out, rows, cols);
    return (int)hipGetLastError();
}

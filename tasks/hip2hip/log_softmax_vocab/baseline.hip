// Log-softmax over the last dimension, fp16 in, fp32 out: the starting kernel.
//
// One block of 256 threads per row, three passes over the row: the row maximum, the sum
// of exp(x - max) (each combined by halving a shared-memory array with a barrier per
// step), then the write of x - max - log(sum). Correct for every shape, but the loads are
// scalar 2-byte ones, the row is read three times and exp is evaluated for every element,
// and with few rows (a decode batch) only a few SMs work, each with a single block.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define LSM_BASELINE_THREADS 256

__global__ void log_softmax_block_per_row_kernel(const __half* __restrict__ x, float* __restrict__ y, int64_t rows,
                                                 int64_t cols) {
    __shared__ float red[LSM_BASELINE_THREADS];
    const int t = threadIdx.x;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const __half* xr = x + row * cols;
        float* yr = y + row * cols;

        float m = -INFINITY;
        for (int64_t j = t; j < cols; j += LSM_BASELINE_THREADS) m = fmaxf(m, __half2float(xr[j]));
        red[t] = m;
        __syncthreads();
        for (int s = LSM_BASELINE_THREADS / 2; s > 0; s /= 2) {
            if (t < s) red[t] = fmaxf(red[t], red[t + s]);
            __syncthreads();
        }
        m = red[0];
        __syncthreads();

        float sum = 0.0f;
        for (int64_t j = t; j < cols; j += LSM_BASELINE_THREADS) sum += expf(__half2float(xr[j]) - m);
        red[t] = sum;
        __syncthreads();
        for (int s = LSM_BASELINE_THREADS / 2; s > 0; s /= 2) {
            if (t < s) red[t] += red[t + s];
            __syncthreads();
        }
        const float lse = m + logf(red[0]);
        __syncthreads();

        for (int64_t j = t; j < cols; j += LSM_BASELINE_THREADS) yr[j] = __half2float(xr[j]) - lse;
    }
}

extern "C" int log_softmax_vocab(const __half* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int64_t blocks = rows < 2147483647LL ? rows : 2147483647LL;
    hipLaunchKernelGGL(log_softmax_block_per_row_kernel, dim3((unsigned int)blocks), dim3(LSM_BASELINE_THREADS), 0,
                       stream, x, y, rows, cols);
    return (int)hipGetLastError();
}

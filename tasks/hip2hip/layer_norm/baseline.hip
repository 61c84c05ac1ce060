// LayerNorm forward, fp16 in/out with fp32 mean and rstd: the starting kernel.
//
// One thread per row, three sequential passes over the row (mean, variance, write), fp32
// accumulation. Correct for every shape, but neighbouring threads read addresses a whole
// row apart (uncoalesced), loads are scalar and a row is read three times.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void layer_norm_row_per_thread_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                                 const __half* __restrict__ bias, __half* __restrict__ y,
                                                 float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                                 int64_t rows, int64_t cols, float eps) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const __half* xr = x + row * cols;
    __half* yr = y + row * cols;

    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += __half2float(xr[j]);
    const float mean = sum / (float)cols;

    float sq = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
        const float d = __half2float(xr[j]) - mean;
        sq += d * d;
    }
    const float rstd = 1.0f / sqrtf(sq / (float)cols + eps);

    for (int64_t j = 0; j < cols; ++j) {
        const float v = (__half2float(xr[j]) - mean) * rstd * __half2float(weight[j]) + __half2float(bias[j]);
        yr[j] = __float2half(v);
    }
    mean_out[row] = mean;
    rstd_out[row] = rstd;
}

extern "C" int layer_norm(const __half* x, const __half* weight, const __half* bias, __half* y, float* mean,
                          float* rstd, int64_t rows, int64_t cols, float eps, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(layer_norm_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream,
                       x, weight, bias, y, mean, rstd, rows, cols, eps);
    return (int)hipGetLastError();
}

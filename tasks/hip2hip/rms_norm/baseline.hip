// RMSNorm over the last dimension, fp16 in/out, fp32 accumulation: the starting kernel.
//
// One thread per row, two sequential passes over the row (sum of squares, then the
// scaled write). Correct for every shape, but neighbouring threads read and write
// addresses a whole row apart (uncoalesced), accesses are scalar 2-byte ones, the row is
// read twice, and with few rows only a few threads work.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void rms_norm_row_per_thread_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                               __half* __restrict__ y, int64_t rows, int64_t cols, float eps) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const __half* xr = x + row * cols;
    __half* yr = y + row * cols;

    float sum_sq = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
        const float v = __half2float(xr[j]);
        sum_sq += v * v;
    }
    const float inv_rms = 1.0f / sqrtf(sum_sq / (float)cols + eps);

    for (int64_t j = 0; j < cols; ++j) yr[j] = __float2half(__half2float(xr[j]) * inv_rms * __half2float(weight[j]));
}

extern "C" int rms_norm(const __half* x, const __half* weight, __half* y, int64_t rows, int64_t cols, float eps,
                        hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(rms_norm_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, weight,
                       y, rows, cols, eps);
    return (int)hipGetLastError();
}

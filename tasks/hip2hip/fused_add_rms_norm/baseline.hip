// Fused residual add + RMSNorm, fp16 in/out, fp32 arithmetic: the starting kernel.
//
// One thread per row, two sequential passes: the first adds x and residual, writes the
// new residual (fp16) and accumulates the sum of squares; the second reads the new
// residual back and writes the normalised, weighted row. Correct for every shape, but
// neighbouring threads touch addresses a whole row apart (uncoalesced), accesses are
// scalar 2-byte ones, and with few rows only a few threads work.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void fused_add_rms_norm_row_per_thread_kernel(const __half* __restrict__ x,
                                                         const __half* __restrict__ residual,
                                                         const __half* __restrict__ weight, __half* __restrict__ y,
                                                         __half* __restrict__ residual_out, int64_t rows,
                                                         int64_t cols, float eps) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const __half* xr = x + row * cols;
    const __half* rr = residual + row * cols;
    __half* yr = y + row * cols;
    __half* hr = residual_out + row * cols;

    float sum_sq = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
        const float h = __half2float(xr[j]) + __half2float(rr[j]);
        hr[j] = __float2half(h);
        sum_sq += h * h;
    }
    const float inv_rms = 1.0f / sqrtf(sum_sq / (float)cols + eps);

    for (int64_t j = 0; j < cols; ++j) yr[j] = __float2half(__half2float(hr[j]) * inv_rms * __half2float(weight[j]));
}

extern "C" int fused_add_rms_norm(const __half* x, const __half* residual, const __half* weight, __half* y,
                                  __half* residual_out, int64_t rows, int64_t cols, float eps, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(fused_add_rms_norm_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream,
                       x, residual, weight, y, residual_out, rows, cols, eps);
    return (int)hipGetLastError();
}

// LayerNorm backward (dx from saved mean and rstd), fp16 in/out, fp32 arithmetic: the
// starting kernel.
//
// One thread per row, two sequential passes: the first accumulates sum(g) and
// sum(g * xhat) with g = dy * weight and xhat = (x - mean) * rstd, the second re-reads
// the row and writes dx. Correct for every shape, but neighbouring threads read addresses
// a whole row apart (uncoalesced), accesses are scalar 2-byte ones, the row is read
// twice, and with few rows only a few threads work.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void layer_norm_backward_dx_row_per_thread_kernel(const __half* __restrict__ dy,
                                                             const __half* __restrict__ x,
                                                             const __half* __restrict__ weight,
                                                             const float* __restrict__ mean,
                                                             const float* __restrict__ rstd, __half* __restrict__ dx,
                                                             int64_t rows, int64_t cols) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const __half* dyr = dy + row * cols;
    const __half* xr = x + row * cols;
    __half* dxr = dx + row * cols;
    const float mu = mean[row];
    const float rs = rstd[row];

    float sum_g = 0.0f, sum_gx = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
        const float xhat = (__half2float(xr[j]) - mu) * rs;
        const float g = __half2float(dyr[j]) * __half2float(weight[j]);
        sum_g += g;
        sum_gx += g * xhat;
    }
    const float a = sum_g / (float)cols;
    const float b = sum_gx / (float)cols;

    for (int64_t j = 0; j < cols; ++j) {
        const float xhat = (__half2float(xr[j]) - mu) * rs;
        const float g = __half2float(dyr[j]) * __half2float(weight[j]);
        dxr[j] = __float2half(rs * (g - a - xhat * b));
    }
}

extern "C" int layer_norm_backward_dx(const __half* dy, const __half* x, const __half* weight, const float* mean,
                                      const float* rstd, __half* dx, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(layer_norm_backward_dx_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0,
                       stream, dy, x, weight, mean, rstd, dx, rows, cols);
    return (int)hipGetLastError();
}

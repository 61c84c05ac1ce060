// Row softmax, fp32: the starting kernel.
//
// One thread per row, three sequential passes over the row (max, sum of exponentials,
// write). Correct for every shape, but neighbouring threads read addresses a whole row
// apart (uncoalesced) and a row is read three times.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void softmax_row_per_thread_kernel(const float* __restrict__ x, float* __restrict__ y,
                                              int64_t rows, int64_t cols) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;

    float m = -INFINITY;
    for (int64_t j = 0; j < cols; ++j) m = fmaxf(m, xr[j]);

    float s = 0.0f;
    for (int64_t j = 0; j < cols; ++j) s += expf(xr[j] - m);

    for (int64_t j = 0; j < cols; ++j) yr[j] = expf(xr[j] - m) / s;
}

extern "C" int softmax(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(softmax_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream,
                       x, y, rows, cols);
    return (int)hipGetLastError();
}

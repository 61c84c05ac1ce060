// Inclusive prefix sum along the last dimension, fp32: the starting kernel.
//
// One thread per row, a sequential running sum. Correct for every shape, but neighbouring
// threads read and write addresses a whole row apart (uncoalesced), and a row of tens of
// thousands of values is one long dependent chain on a single thread.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void cumsum_row_per_thread_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                                             int64_t cols) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float acc = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
        acc += xr[j];
        yr[j] = acc;
    }
}

extern "C" int cumsum_rows(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(cumsum_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, y, rows,
                       cols);
    return (int)hipGetLastError();
}

// 2-D transpose, fp32: the starting kernel.
//
// One thread per element, threads of a block along a row of x: the reads are coalesced,
// but the writes of neighbouring threads land a whole output row (rows * 4 bytes) apart,
// so every warp store touches 32 different memory sectors. Correct for every shape.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void transpose_naive_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                                       int64_t cols) {
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    for (int64_t i = blockIdx.y; i < rows; i += gridDim.y) y[j * rows + i] = x[i * cols + j];
}

extern "C" int transpose_2d(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t gx = (cols + threads - 1) / threads;
    const int64_t gy = rows < 65535 ? rows : 65535;
    hipLaunchKernelGGL(transpose_naive_kernel, dim3((unsigned int)gx, (unsigned int)gy), dim3(threads), 0, stream, x, y,
                       rows, cols);
    return (int)hipGetLastError();
}

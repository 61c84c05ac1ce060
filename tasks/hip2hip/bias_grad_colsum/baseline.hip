// Column sum (bias gradient), fp16 in, fp32 out: the starting kernel.
//
// One thread per column walks down all rows, accumulating in fp32. The loads of a warp
// are coalesced (neighbouring columns), but only cols threads exist: a few thousand
// columns fill a handful of SMs, and each thread's loop over up to 16448 rows is bound by
// memory latency. Correct for every shape.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void colsum_thread_per_column_kernel(const __half* __restrict__ dy, float* __restrict__ db, int64_t rows,
                                                int64_t cols) {
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float acc = 0.0f;
    for (int64_t r = 0; r < rows; ++r) acc += __half2float(dy[r * cols + c]);
    db[c] = acc;
}

extern "C" int bias_grad_colsum(const __half* dy, float* db, int64_t rows, int64_t cols, hipStream_t stream) {
    if (cols <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (cols + threads - 1) / threads;
    hipLaunchKernelGGL(colsum_thread_per_column_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, dy, db,
                       rows, cols);
    return (int)hipGetLastError();
}

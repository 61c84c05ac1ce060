// Row-wise L2 normalisation (F.normalize), fp16 in/out, fp32 accumulation: the starting
// kernel.
//
// One thread per row, two sequential passes over the row (sum of squares, then the scaled
// write). Correct for every shape, but neighbouring threads read and write addresses a
// whole row apart (uncoalesced), accesses are scalar 2-byte ones, the row is read twice,
// and with few rows only a few threads work.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void l2_normalize_row_per_thread_kernel(const __half* __restrict__ x, __half* __restrict__ y, int64_t rows,
                                                   int64_t dim, float eps) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const __half* xr = x + row * dim;
    __half* yr = y + row * dim;

    float sum_sq = 0.0f;
    for (int64_t j = 0; j < dim; ++j) {
        const float v = __half2float(xr[j]);
        sum_sq += v * v;
    }
    const float inv = 1.0f / fmaxf(sqrtf(sum_sq), eps);
    for (int64_t j = 0; j < dim; ++j) yr[j] = __float2half(__half2float(xr[j]) * inv);
}

extern "C" int l2_normalize_rows(const __half* x, __half* y, int64_t rows, int64_t dim, float eps,
                                 hipStream_t stream) {
    if (rows <= 0 || dim <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(l2_normalize_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, y,
                       rows, dim, eps);
    return (int)hipGetLastError();
}

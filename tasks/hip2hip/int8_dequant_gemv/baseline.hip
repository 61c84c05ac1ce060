// Weight-only int8 GEMV with per-row scales, fused dequantisation: the starting kernel.
//
// One thread per output row j, a sequential loop over k that converts q[j, i] to float
// and multiplies it into one fp32 accumulator per token (batch <= 8, kept in registers);
// the row's scale is applied once at the end. Correct for every shape, but neighbouring
// threads read addresses a whole row (k bytes) apart, so every load of a warp touches 32
// different cache lines; each access is a scalar 1-byte load; and with a few thousand rows
// only a few thousand threads work.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define I8_MAX_BATCH 8

__global__ void int8_gemv_row_per_thread_kernel(const int8_t* __restrict__ q, const __half* __restrict__ scale,
                                                const __half* __restrict__ x, __half* __restrict__ y, int64_t batch,
                                                int64_t n, int64_t k) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const int8_t* qr = q + row * k;
    float acc[I8_MAX_BATCH];
#pragma unroll
    for (int b = 0; b < I8_MAX_BATCH; ++b) acc[b] = 0.0f;
    for (int64_t j = 0; j < k; ++j) {
        const float wq = (float)qr[j];
#pragma unroll
        for (int b = 0; b < I8_MAX_BATCH; ++b)
            if (b < batch) acc[b] += wq * __half2float(x[b * k + j]);
    }
    const float s = __half2float(scale[row]);
#pragma unroll
    for (int b = 0; b < I8_MAX_BATCH; ++b)
        if (b < batch) y[b * n + row] = __float2half_rn(acc[b] * s);
}

extern "C" int int8_dequant_gemv(const int8_t* q, const __half* scale, const __half* x, __half* y, int64_t batch,
                                 int64_t n, int64_t k, hipStream_t stream) {
    if (batch > I8_MAX_BATCH) return (int)hipErrorInvalidValue;
    if (n <= 0 || batch <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (n + threads - 1) / threads;
    hipLaunchKernelGGL(int8_gemv_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, q, scale,
                       x, y, batch, n, k);
    return (int)hipGetLastError();
}

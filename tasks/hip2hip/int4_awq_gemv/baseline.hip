// Weight-only int4 GEMV with group-wise scales (AWQ / GPTQ-style), fused dequantisation:
// the starting kernel.
//
// One thread per output row j: a sequential loop over the packed int32 words of the row
// (8 codes each), the group's scale loaded once per 16 words, each code unpacked, shifted
// by the zero point 8, scaled and multiplied into one fp32 accumulator per token (batch
// <= 8, kept in registers). Correct for every shape, but neighbouring threads read words
// a whole row (k / 2 bytes) apart, so every load of a warp touches 32 different cache
// lines, and with a few thousand rows only a few thousand threads work.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define I4_MAX_BATCH 8
#define I4_GROUP 128

__global__ void int4_gemv_row_per_thread_kernel(const int32_t* __restrict__ qweight, const __half* __restrict__ scales,
                                                const __half* __restrict__ x, __half* __restrict__ y, int64_t batch,
                                                int64_t n, int64_t k) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const int64_t words = k / 8;
    const int64_t groups = k / I4_GROUP;
    const int32_t* qr = qweight + row * words;
    const __half* sr = scales + row * groups;
    float acc[I4_MAX_BATCH];
#pragma unroll
    for (int b = 0; b < I4_MAX_BATCH; ++b) acc[b] = 0.0f;
    for (int64_t c = 0; c < words; ++c) {
        const unsigned int word = (unsigned int)qr[c];
        const float s = __half2float(sr[(c * 8) / I4_GROUP]);
#pragma unroll
        for (int p = 0; p < 8; ++p) {
            const float wv = (float)((int)((word >> (4 * p)) & 15u) - 8) * s;
            const int64_t i = c * 8 + p;
#pragma unroll
            for (int b = 0; b < I4_MAX_BATCH; ++b)
                if (b < batch) acc[b] += wv * __half2float(x[b * k + i]);
        }
    }
#pragma unroll
    for (int b = 0; b < I4_MAX_BATCH; ++b)
        if (b < batch) y[b * n + row] = __float2half_rn(acc[b]);
}

extern "C" int int4_awq_gemv(const int32_t* qweight, const __half* scales, const __half* x, __half* y, int64_t batch,
                             int64_t n, int64_t k, hipStream_t stream) {
    if (batch > I4_MAX_BATCH || k % I4_GROUP != 0) return (int)hipErrorInvalidValue;
    if (n <= 0 || batch <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (n + threads - 1) / threads;
    hipLaunchKernelGGL(int4_gemv_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, qweight,
                       scales, x, y, batch, n, k);
    return (int)hipGetLastError();
}

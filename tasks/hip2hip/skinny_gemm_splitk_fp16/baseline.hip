// Skinny GEMM y = x @ w^T for 1-32 tokens, fp16 in/out, fp32 accumulation: the starting
// kernel.
//
// One thread per output column j (row of w): a sequential loop over k that loads w[j, p]
// once and multiplies it into one fp32 accumulator per token (m <= 32, kept in registers),
// reading x[r, p] (the same address for every thread of a warp: a broadcast). Each weight
// is read from memory once. Correct for every shape, but neighbouring threads read w at
// addresses a whole row (2k bytes) apart, each access is a scalar 2-byte load, and with
// n of a few thousand only a few thousand threads work - a few per SIMD lane of the GPU -
// each walking the full length of k alone.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define SK_MAX_M 32

__global__ void skinny_gemm_col_per_thread_kernel(const __half* __restrict__ x, const __half* __restrict__ w,
                                                  __half* __restrict__ y, int64_t m, int64_t n, int64_t k) {
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const __half* wr = w + j * k;
    float acc[SK_MAX_M];
#pragma unroll
    for (int r = 0; r < SK_MAX_M; ++r) acc[r] = 0.0f;
    for (int64_t p = 0; p < k; ++p) {
        const float wv = __half2float(wr[p]);
#pragma unroll
        for (int r = 0; r < SK_MAX_M; ++r)
            if (r < m) acc[r] += wv * __half2float(x[r * k + p]);
    }
#pragma unroll
    for (int r = 0; r < SK_MAX_M; ++r)
        if (r < m) y[r * n + j] = __float2half_rn(acc[r]);
}

extern "C" int skinny_gemm_splitk_fp16(const __half* x, const __half* w, __half* y, int64_t m, int64_t n, int64_t k,
                                       hipStream_t stream) {
    if (m > SK_MAX_M) return (int)hipErrorInvalidValue;
    if (m <= 0 || n <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (n + threads - 1) / threads;
    hipLaunchKernelGGL(skinny_gemm_col_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, w,
                       y, m, n, k);
    return (int)hipGetLastError();
}

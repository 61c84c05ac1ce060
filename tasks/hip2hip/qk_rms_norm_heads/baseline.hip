// Per-head RMSNorm of the query and key heads of a packed QKV tensor, fp16: the starting
// kernel.
//
// One thread per head row (token t, head h over the q_heads query heads then the kv_heads
// key heads), two sequential passes over its head_dim values: the sum of squares, then
// the scaled write. Correct for every shape, but neighbouring threads read addresses a
// whole head (head_dim * 2 bytes) apart, accesses are scalar 2-byte ones and each head is
// read twice.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void qk_rms_norm_head_per_thread_kernel(const __half* __restrict__ qkv, const __half* __restrict__ q_weight,
                                                   const __half* __restrict__ k_weight, __half* __restrict__ q,
                                                   __half* __restrict__ k, int64_t tokens, int64_t q_heads,
                                                   int64_t kv_heads, int64_t head_dim, float eps) {
    const int64_t heads = q_heads + kv_heads;  // normalised heads per token
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= tokens * heads) return;
    const int64_t t = r / heads;
    const int64_t h = r % heads;
    // Query heads, then key heads, are contiguous at the start of the token's qkv row.
    const __half* src = qkv + t * (q_heads + 2 * kv_heads) * head_dim + h * head_dim;
    __half* dst;
    const __half* w;
    if (h < q_heads) {
        dst = q + (t * q_heads + h) * head_dim;
        w = q_weight;
    } else {
        dst = k + (t * kv_heads + (h - q_heads)) * head_dim;
        w = k_weight;
    }

    float sum_sq = 0.0f;
    for (int64_t j = 0; j < head_dim; ++j) {
        const float v = __half2float(src[j]);
        sum_sq += v * v;
    }
    const float inv_rms = 1.0f / sqrtf(sum_sq / (float)head_dim + eps);
    for (int64_t j = 0; j < head_dim; ++j) dst[j] = __float2half(__half2float(src[j]) * inv_rms * __half2float(w[j]));
}

extern "C" int qk_rms_norm_heads(const __half* qkv, const __half* q_weight, const __half* k_weight, __half* q,
                                 __half* k, int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                 float eps, hipStream_t stream) {
    const int64_t rows = tokens * (q_heads + kv_heads);
    if (rows <= 0 || head_dim <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(qk_rms_norm_head_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, qkv,
                       q_weight, k_weight, q, k, tokens, q_heads, kv_heads, head_dim, eps);
    return (int)hipGetLastError();
}

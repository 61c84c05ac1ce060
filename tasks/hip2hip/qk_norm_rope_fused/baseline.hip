// Fused per-head QK RMSNorm + NeoX rotary embedding: the starting kernel.
//
// One block of 128 threads per (token, head) of the query and key heads, built from the
// task's helpers (qk_norm_rope_utils.h). Thread i takes the rotation pairs (j, j + D/2) for
// j = i, i + 128, ...: it loads them one half at a time, the block sums the squares through
// shared memory, and each thread normalises, rotates and stores its pairs. Correct for every
// shape; every head is a block of its own (tokens x heads blocks of a few hundred bytes), half
// of the threads idle for head_dim 128, and every access is 2 or 4 bytes wide.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#include "qk_norm_rope_utils.h"

__global__ void qk_norm_rope_per_head(const __half* __restrict__ qkv, const __half* __restrict__ q_weight,
                                      const __half* __restrict__ k_weight, const float* __restrict__ cos_sin,
                                      const int32_t* __restrict__ positions, __half* __restrict__ q_out,
                                      __half* __restrict__ k_out, int64_t q_heads, int64_t kv_heads,
                                      int64_t head_dim, float eps) {
    __shared__ float scratch[qkr::kMaxWarps];
    const int64_t t = blockIdx.x;
    const int64_t h = blockIdx.y;                       // 0 .. q_heads + kv_heads - 1
    const bool is_q = h < q_heads;
    const int64_t half = head_dim / 2;
    const __half* x = qkv + (t * (q_heads + 2 * kv_heads) + h) * head_dim;
    const __half* w = is_q ? q_weight : k_weight;
    __half* out = is_q ? q_out + (t * q_heads + h) * head_dim : k_out + (t * kv_heads + (h - q_heads)) * head_dim;
    const float* cs = cos_sin + (int64_t)positions[t] * head_dim;

    float ss = 0.0f;
    for (int64_t j = threadIdx.x; j < half; j += blockDim.x) {
        const float a = __half2float(x[j]);
        const float b = __half2float(x[j + half]);
        ss += a * a + b * b;
    }
    const float inv_rms = rsqrtf(qkr::block_sum(ss, scratch) / (float)head_dim + eps);

    for (int64_t j = threadIdx.x; j < half; j += blockDim.x) {
        const float a = __half2float(x[j]) * inv_rms * __half2float(w[j]);
        const float b = __half2float(x[j + half]) * inv_rms * __half2float(w[j + half]);
        const float2 r = qkr::rotate_neox(a, b, cs[j], cs[j + half]);
        out[j] = __float2half_rn(r.x);
        out[j + half] = __float2half_rn(r.y);
    }
}

extern "C" int qk_norm_rope_fused(const __half* qkv, const __half* q_weight, const __half* k_weight,
                                  const float* cos_sin_cache, const int32_t* positions, __half* q_out,
                                  __half* k_out, int64_t tokens, int64_t q_heads, int64_t kv_heads,
                                  int64_t head_dim, float eps, hipStream_t stream) {
    if (tokens <= 0) return (int)hipSuccess;
    hipLaunchKernelGGL(qk_norm_rope_per_head, dim3((unsigned int)tokens, (unsigned int)(q_heads + kv_heads)),
                       dim3(128), 0, stream, qkv, q_weight, k_weight, cos_sin_cache, positions, q_out, k_out,
                       q_heads, kv_heads, head_dim, eps);
    return (int)hipGetLastError();
}

// Rotary position embedding of q and k (NeoX style, cos-sin cache): the starting kernel.
//
// One thread per rotated pair (token, head, i < head_dim / 2), q heads first and then k
// heads in one flat index space: it reads the token's position, c and s from the cache and
// the two halves x[i], x[i + head_dim / 2], and writes the two rotated values. Correct for
// every shape; neighbouring threads take neighbouring i, so the accesses are coalesced,
// but each is a scalar 2- or 4-byte load, the position and the token's cache row are
// re-read by every head, and the index arithmetic (three 64-bit divisions per pair)
// costs more than the rotation.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void rope_pair_per_thread_kernel(const __half* __restrict__ q, const __half* __restrict__ k,
                                            const float* __restrict__ cos_sin_cache,
                                            const int32_t* __restrict__ positions, __half* __restrict__ q_out,
                                            __half* __restrict__ k_out, int64_t tokens, int64_t heads,
                                            int64_t kv_heads, int64_t head_dim) {
    const int64_t half = head_dim / 2;
    const int64_t all_heads = heads + kv_heads;
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= tokens * all_heads * half) return;
    const int64_t i = idx % half;
    const int64_t th = idx / half;  // token * all_heads + head
    const int64_t t = th / all_heads;
    const int64_t hh = th % all_heads;
    const __half* src;
    __half* dst;
    if (hh < heads) {
        src = q + (t * heads + hh) * head_dim;
        dst = q_out + (t * heads + hh) * head_dim;
    } else {
        src = k + (t * kv_heads + (hh - heads)) * head_dim;
        dst = k_out + (t * kv_heads + (hh - heads)) * head_dim;
    }
    const int64_t pos = positions[t];
    const float c = cos_sin_cache[pos * head_dim + i];
    const float s = cos_sin_cache[pos * head_dim + half + i];
    const float x1 = __half2float(src[i]);
    const float x2 = __half2float(src[i + half]);
    dst[i] = __float2half_rn(x1 * c - x2 * s);
    dst[i + half] = __float2half_rn(x2 * c + x1 * s);
}

extern "C" int rope_qk_neox(const __half* q, const __half* k, const float* cos_sin_cache, const int32_t* positions,
                            __half* q_out, __half* k_out, int64_t tokens, int64_t heads, int64_t kv_heads,
                            int64_t head_dim, int64_t max_position, hipStream_t stream) {
    const int64_t total = tokens * (heads + kv_heads) * (head_dim / 2);
    if (total <= 0) return (int)hipSuccess;
    const int threads = 256;
    hipLaunchKernelGGL(rope_pair_per_thread_kernel, dim3((unsigned int)((total + threads - 1) / threads)),
                       dim3(threads), 0, stream, q, k, cos_sin_cache, positions, q_out, k_out, tokens, heads, kv_heads,
                       head_dim);
    return (int)hipGetLastError();
}

// Sliding-window decode attention, GQA, fp16: the starting kernel.
//
// One block of 256 threads per (sequence, query head). The block computes the whole score
// row of the window: each thread takes keys n = t, t + 256, ... of the n_keys =
// min(L, window) attended positions and forms the dot product with q (staged in shared
// memory as fp32) by a serial loop over head_dim; the scores go to a shared-memory row.
// A block max, the exponentials and a block sum follow, then each thread owns output
// dimensions d = t, t + 256, ... and sums p_n v[n][d] over the window serially. Correct for
// every shape, but only batch * heads blocks run (a few hundred: most of the GPU idles, no
// split over the window), each query head of a GQA group reads its KV head again, the dot
// products are serial per thread and the output loop is latency-bound.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define SW_THREADS 256
#define SW_MAX_WARPS 64  // enough for any warp size >= 4 at 256 threads
#define SW_MAX_HEAD_DIM 256

__device__ __forceinline__ float sw_block_max(float v, float* red) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = (blockDim.x + warpSize - 1) / warpSize;
    for (int off = warpSize / 2; off > 0; off /= 2) v = fmaxf(v, __shfl_xor(v, off));
    __syncthreads();  // red may still be read from a previous reduction
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < nwarps; ++w) r = fmaxf(r, red[w]);
    return r;
}

__device__ __forceinline__ float sw_block_sum(float v, float* red) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = (blockDim.x + warpSize - 1) / warpSize;
    for (int off = warpSize / 2; off > 0; off /= 2) v += __shfl_xor(v, off);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float r = 0.0f;
    for (int w = 0; w < nwarps; ++w) r += red[w];
    return r;
}

__global__ void sliding_window_decode_rowwise_kernel(const __half* __restrict__ q, const __half* __restrict__ k_cache,
                                                     const __half* __restrict__ v_cache,
                                                     const int32_t* __restrict__ seq_lens, __half* __restrict__ out,
                                                     int64_t heads, int64_t kv_heads, int64_t max_len,
                                                     int64_t head_dim, int64_t window, float scale) {
    extern __shared__ float scores[];  // min(window, max_len) floats
    __shared__ float qs[SW_MAX_HEAD_DIM];
    __shared__ float red[SW_MAX_WARPS];

    const int64_t bh = blockIdx.x;  // b * heads + h
    const int64_t b = bh / heads;
    const int64_t h = bh % heads;
    const int64_t g = h / (heads / kv_heads);
    const int t = threadIdx.x;

    const int64_t L = seq_lens[b];  // 1 <= L <= max_len
    const int64_t start = L > window ? L - window : 0;
    const int64_t n_keys = L - start;

    const __half* kb = k_cache + ((b * kv_heads + g) * max_len + start) * head_dim;
    const __half* vb = v_cache + ((b * kv_heads + g) * max_len + start) * head_dim;

    for (int64_t d = t; d < head_dim; d += blockDim.x) qs[d] = __half2float(q[bh * head_dim + d]);
    __syncthreads();

    float local_max = -INFINITY;
    for (int64_t n = t; n < n_keys; n += blockDim.x) {
        const __half* krow = kb + n * head_dim;
        float s = 0.0f;
        for (int64_t d = 0; d < head_dim; ++d) s += qs[d] * __half2float(krow[d]);
        s *= scale;
        scores[n] = s;
        local_max = fmaxf(local_max, s);
    }
    const float m = sw_block_max(local_max, red);  // n_keys >= 1: m is finite

    float local_sum = 0.0f;
    for (int64_t n = t; n < n_keys; n += blockDim.x) {
        const float p = expf(scores[n] - m);
        scores[n] = p;
        local_sum += p;
    }
    const float l = sw_block_sum(local_sum, red);  // its barriers also publish scores[]
    const float inv = 1.0f / l;

    for (int64_t d = t; d < head_dim; d += blockDim.x) {
        float acc = 0.0f;
        for (int64_t n = 0; n < n_keys; ++n) acc += scores[n] * __half2float(vb[n * head_dim + d]);
        out[bh * head_dim + d] = __float2half_rn(acc * inv);
    }
}

extern "C" int sliding_window_decode_attention(const __half* q, const __half* k_cache, const __half* v_cache,
                                               const int32_t* seq_lens, __half* out, int64_t batch, int64_t heads,
                                               int64_t kv_heads, int64_t max_len, int64_t head_dim, int64_t window,
                                               float scale, hipStream_t stream) {
    const int64_t pairs = batch * heads;
    if (pairs <= 0 || head_dim <= 0) return (int)hipSuccess;
    const int64_t row = window < max_len ? window : max_len;
    const size_t smem = (size_t)row * sizeof(float);
    hipLaunchKernelGGL(sliding_window_decode_rowwise_kernel, dim3((unsigned int)pairs), dim3(SW_THREADS), smem, stream,
                       q, k_cache, v_cache, seq_lens, out, heads, kv_heads, max_len, head_dim, window, scale);
    return (int)hipGetLastError();
}

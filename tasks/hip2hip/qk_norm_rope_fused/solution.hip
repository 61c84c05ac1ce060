// Fused per-head QK RMSNorm + NeoX rotary embedding: a general, portable solution.
//
// * One warp per (token, head) instead of one block: the sum of squares is a warp sum
//   (shuffles, no shared memory, no barrier), and a block of 256 threads serves 256 /
//   warpSize heads. Warps walk the (token, head) items with a grid stride, so the launch does
//   not depend on the warp width (8 heads a block on NVIDIA, 4 on AMD's wave64, the grid
//   sized for the former).
// * Lane l takes the rotation pairs j, j + 1 (and j + D/2, j + D/2 + 1) for j = 2 l, 2 (l +
//   warpSize), ...: 4-byte loads of two halves from each half of the head, 8-byte loads of
//   two cosines and two sines, 4-byte stores; a warp reads each half of a 128-wide head in
//   one 128-byte access. The head stays in registers between the reduction and the rotation.
// * Heads whose size is no multiple of 4 (none in the shape space) or above 512 take a plain
//   block-per-head kernel: every shape is handled.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#include "qk_norm_rope_utils.h"

namespace {

constexpr int kThreads = 256;
constexpr int kHeadsPerBlockNv = kThreads / 32;   // grid sizing only; kernels use warpSize

template <int MAXIT>
__global__ void __launch_bounds__(kThreads) warp_per_head(
    const __half* __restrict__ qkv, const __half* __restrict__ q_weight, const __half* __restrict__ k_weight,
    const float* __restrict__ cos_sin, const int32_t* __restrict__ positions, __half* __restrict__ q_out,
    __half* __restrict__ k_out, int64_t items, int64_t q_heads, int64_t kv_heads, int64_t head_dim, float eps) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t stride = (int64_t)gridDim.x * warps_per_block;
    const int64_t heads = q_heads + kv_heads;
    const int64_t half = head_dim / 2;
    const float inv_d = 1.0f / (float)head_dim;

    for (int64_t item = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize; item < items;
         item += stride) {
        const int64_t t = item / heads;
        const int64_t h = item - t * heads;
        const bool is_q = h < q_heads;
        const __half* x = qkv + (t * (q_heads + 2 * kv_heads) + h) * head_dim;
        const __half* w = is_q ? q_weight : k_weight;
        __half* out = is_q ? q_out + (t * q_heads + h) * head_dim
                           : k_out + (t * kv_heads + (h - q_heads)) * head_dim;

        float2 lo[MAXIT], hi[MAXIT];
        float ss = 0.0f;
#pragma unroll
        for (int it = 0; it < MAXIT; ++it) {
            const int64_t j = 2 * (lane + (int64_t)it * warpSize);
            if (j < half) {
                lo[it] = qkr::load_half2(x + j);
                hi[it] = qkr::load_half2(x + half + j);
                ss += lo[it].x * lo[it].x + lo[it].y * lo[it].y + hi[it].x * hi[it].x + hi[it].y * hi[it].y;
            }
        }
        const float inv_rms = rsqrtf(qkr::warp_sum(ss) * inv_d + eps);
        const float* cs = cos_sin + (int64_t)positions[t] * head_dim;

#pragma unroll
        for (int it = 0; it < MAXIT; ++it) {
            const int64_t j = 2 * (lane + (int64_t)it * warpSize);
            if (j < half) {
                const float2 w1 = qkr::load_half2(w + j);
                const float2 w2 = qkr::load_half2(w + half + j);
                const float2 c = qkr::load_float2(cs + j);
                const float2 s = qkr::load_float2(cs + half + j);
                const float2 r0 = qkr::rotate_neox(lo[it].x * inv_rms * w1.x, hi[it].x * inv_rms * w2.x, c.x, s.x);
                const float2 r1 = qkr::rotate_neox(lo[it].y * inv_rms * w1.y, hi[it].y * inv_rms * w2.y, c.y, s.y);
                qkr::store_half2(out + j, r0.x, r1.x);
                qkr::store_half2(out + half + j, r0.y, r1.y);
            }
        }
    }
}

// Any head size: one block per (token, head), pairs strided over the threads.
__global__ void __launch_bounds__(128) block_per_head(
    const __half* __restrict__ qkv, const __half* __restrict__ q_weight, const __half* __restrict__ k_weight,
    const float* __restrict__ cos_sin, const int32_t* __restrict__ positions, __half* __restrict__ q_out,
    __half* __restrict__ k_out, int64_t q_heads, int64_t kv_heads, int64_t head_dim, float eps) {
    __shared__ float scratch[qkr::kMaxWarps];
    const int64_t t = blockIdx.x;
    const int64_t h = blockIdx.y;
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
        const float2 r = qkr::rotate_neox(__half2float(x[j]) * inv_rms * __half2float(w[j]),
                                          __half2float(x[j + half]) * inv_rms * __half2float(w[j + half]), cs[j],
                                          cs[j + half]);
        out[j] = __float2half_rn(r.x);
        out[j + half] = __float2half_rn(r.y);
    }
}

}  // namespace

extern "C" int qk_norm_rope_fused(const __half* qkv, const __half* q_weight, const __half* k_weight,
                                  const float* cos_sin_cache, const int32_t* positions, __half* q_out,
                                  __half* k_out, int64_t tokens, int64_t q_heads, int64_t kv_heads,
                                  int64_t head_dim, float eps, hipStream_t stream) {
    if (tokens <= 0) return (int)hipSuccess;
    const int64_t items = tokens * (q_heads + kv_heads);
    if (head_dim % 4 == 0 && head_dim <= 512) {
        // pairs of pairs per lane with a 32-wide warp (fewer with a wider one)
        const int64_t its = (head_dim / 4 + 31) / 32;
        int64_t blocks = (items + kHeadsPerBlockNv - 1) / kHeadsPerBlockNv;
        if (blocks > 2147483647LL) blocks = 2147483647LL;
        const dim3 grid((unsigned int)blocks);
        if (its <= 1)
            hipLaunchKernelGGL(warp_per_head<1>, grid, dim3(kThreads), 0, stream, qkv, q_weight, k_weight,
                               cos_sin_cache, positions, q_out, k_out, items, q_heads, kv_heads, head_dim, eps);
        else if (its <= 2)
            hipLaunchKernelGGL(warp_per_head<2>, grid, dim3(kThreads), 0, stream, qkv, q_weight, k_weight,
                               cos_sin_cache, positions, q_out, k_out, items, q_heads, kv_heads, head_dim, eps);
        else
            hipLaunchKernelGGL(warp_per_head<4>, grid, dim3(kThreads), 0, stream, qkv, q_weight, k_weight,
                               cos_sin_cache, positions, q_out, k_out, items, q_heads, kv_heads, head_dim, eps);
    } else {
        hipLaunchKernelGGL(block_per_head, dim3((unsigned int)tokens, (unsigned int)(q_heads + kv_heads)), dim3(128),
                           0, stream, qkv, q_weight, k_weight, cos_sin_cache, positions, q_out, k_out, q_heads,
                           kv_heads, head_dim, eps);
    }
    return (int)hipGetLastError();
}

// Device helpers shared by the kernels of this task (every candidate is built with this
// header beside it: #include "qk_norm_rope_utils.h").
//
// - warp and block sums written for any warp width (warpSize lanes);
// - 4-byte loads / stores of two halves, 8-byte loads of two floats;
// - the NeoX rotation of one (first half, second half) pair.

#pragma once

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

namespace qkr {

constexpr int kMaxWarps = 32;   // 1024 threads / the narrowest warp (32)

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// Every thread of the block gets the sum. All threads must call it; blockDim.x a multiple of
// warpSize; scratch holds kMaxWarps floats of shared memory. Safe to call again right away.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < nwarps; ++w) total += scratch[w];
    return total;
}

// two halves at p (4-byte aligned) <-> two floats
__device__ __forceinline__ float2 load_half2(const __half* p) {
    return __half22float2(*reinterpret_cast<const __half2*>(p));
}
__device__ __forceinline__ void store_half2(__half* p, float a, float b) {
    *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
}
// two floats at p (8-byte aligned)
__device__ __forceinline__ float2 load_float2(const float* p) { return *reinterpret_cast<const float2*>(p); }

// NeoX rotary embedding of the pair (x1 = element i, x2 = element i + D/2) by the angle with
// cosine c and sine s: returns (x1 c - x2 s, x2 c + x1 s).
__device__ __forceinline__ float2 rotate_neox(float x1, float x2, float c, float s) {
    return make_float2(x1 * c - x2 * s, x2 * c + x1 * s);
}

}  // namespace qkr

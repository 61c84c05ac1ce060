// Device helpers shared by the kernels of this task (every candidate is built with this
// header beside it: #include "norm_quant_utils.h").
//
// - warp and block reductions written for any warp width (warpSize lanes, log2(warpSize)
//   shuffle steps);
// - 16-byte vector loads of 8 halves and 8-byte stores of 8 bytes;
// - float -> float8_e4m3fn encoding in software (saturating, round to nearest even,
//   subnormals included), so the kernels need no vendor fp8 type.

#pragma once

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

namespace nq {

constexpr float kFp8Max = 448.0f;                    // largest finite e4m3fn value
constexpr float kMinScale = 1.0f / (448.0f * 512.0f);  // scale floor (an all-zero row)
constexpr int kMaxWarps = 32;                         // 1024 threads / the narrowest warp (32)

// ---- reductions ------------------------------------------------------------------------
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor(v, offset));
    return v;
}

// Every thread of the block gets the result. All threads must call it; blockDim.x a
// multiple of warpSize; scratch holds kMaxWarps floats of shared memory. It may be called
// again with the same scratch right away (the first barrier protects the last call's reads).
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

__device__ __forceinline__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float m = scratch[0];
    for (int w = 1; w < nwarps; ++w) m = fmaxf(m, scratch[w]);
    return m;
}

// ---- vector access ---------------------------------------------------------------------
// 8 halves at p (16-byte aligned) -> 8 floats.
__device__ __forceinline__ void load_half8(const __half* p, float (&f)[8]) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    const unsigned int w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __half2float(__ushort_as_half((unsigned short)(w[i] & 0xffffu)));
        f[2 * i + 1] = __half2float(__ushort_as_half((unsigned short)(w[i] >> 16)));
    }
}

// 8 bytes to p (8-byte aligned).
__device__ __forceinline__ void store_byte8(uint8_t* p, const uint8_t (&b)[8]) {
    uint2 u;
    u.x = (unsigned int)b[0] | ((unsigned int)b[1] << 8) | ((unsigned int)b[2] << 16) | ((unsigned int)b[3] << 24);
    u.y = (unsigned int)b[4] | ((unsigned int)b[5] << 8) | ((unsigned int)b[6] << 16) | ((unsigned int)b[7] << 24);
    *reinterpret_cast<uint2*>(p) = u;
}

// ---- fp8 -------------------------------------------------------------------------------
// float -> float8_e4m3fn bits (1 sign, 4 exponent bits of bias 7, 3 mantissa bits, no
// infinities): |v| saturates at 448, then rounds to the nearest e4m3 value, ties to even.
__device__ __forceinline__ uint8_t float_to_e4m3fn(float v) {
    const unsigned int sign = (__float_as_uint(v) >> 24) & 0x80u;
    const float a = fminf(fabsf(v), kFp8Max);
    unsigned int code;
    if (a < 0.015625f) {                       // below 2^-6, the smallest normal: steps of 2^-9
        code = (unsigned int)rintf(a * 512.0f);  // 0 .. 8 (8 is 2^-6's own code)
    } else {
        unsigned int bits = __float_as_uint(a);
        bits += 0x7FFFFu + ((bits >> 20) & 1u);  // keep 3 mantissa bits, ties to even
        code = (bits >> 20) - (120u << 3);       // exponent bias 127 -> 7
    }
    return (uint8_t)(sign | code);
}

}  // namespace nq

// Depthwise causal conv1d (width 4) + SiLU, fp16: a SPECIALISED kernel, tuned on the seen
// shapes and wrong elsewhere.
//
// Deliberately flawed (the harness must catch it). Every seen seqlen is a multiple of 8,
// so a 16-byte chunk of 8 time steps never straddles two sequences: this kernel decodes
// (sequence, t) once per chunk, takes one channel's weights for all 8 outputs and zeroes
// the causal history only when the chunk starts a sequence (t = 0), with no per-element
// checks. When seqlen % 8 != 0 (e.g. 1500, 4099) chunks do straddle sequences: outputs
// after a sequence boundary use the previous channel's weights and bias, and the first
// steps of a sequence see the end of the previous one as history. Every access stays in
// bounds (same loads and stores as the general solution: flat 16-byte chunks, a scalar
// last chunk, a scalar kernel for unaligned pointers).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define CC_THREADS 256

static __device__ __forceinline__ float cc_lo(unsigned int u) {
    return __half2float(__ushort_as_half((unsigned short)(u & 0xffffu)));
}
static __device__ __forceinline__ float cc_hi(unsigned int u) {
    return __half2float(__ushort_as_half((unsigned short)(u >> 16)));
}
static __device__ __forceinline__ unsigned int cc_pack(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}
// SiLU with the fast exp and division (~2 ulp, far below the fp16 rounding of y); for
// z < -87, exp(-z) is inf and the result is -0 (the exact value rounds to -0 in fp16 too).
static __device__ __forceinline__ float cc_silu(float z) { return __fdividef(z, 1.0f + __expf(-z)); }

__global__ void __launch_bounds__(CC_THREADS)
conv1d_causal_chunk_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                           const __half* __restrict__ bias, __half* __restrict__ y, int64_t total, int64_t dim,
                           int64_t seqlen) {
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;  // chunk index
    const int64_t e0 = j * 8;
    const int64_t nfull = total / 8;  // chunks lying entirely inside the tensor
    const bool active = e0 < total;

    // This chunk's 8 values (zeros past the end).
    float v[8];
    uint4 cur = make_uint4(0u, 0u, 0u, 0u);
    if (j < nfull) {
        cur = reinterpret_cast<const uint4*>(x)[j];
    } else if (active) {
        unsigned short hs[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) hs[i] = e0 + i < total ? __half_as_ushort(x[e0 + i]) : (unsigned short)0;
        cur.x = hs[0] | ((unsigned int)hs[1] << 16);
        cur.y = hs[2] | ((unsigned int)hs[3] << 16);
        cur.z = hs[4] | ((unsigned int)hs[5] << 16);
        cur.w = hs[6] | ((unsigned int)hs[7] << 16);
    }
    v[0] = cc_lo(cur.x); v[1] = cc_hi(cur.x);
    v[2] = cc_lo(cur.y); v[3] = cc_hi(cur.y);
    v[4] = cc_lo(cur.z); v[5] = cc_hi(cur.z);
    v[6] = cc_lo(cur.w); v[7] = cc_hi(cur.w);

    // The previous chunk's last three values: from lane - 1, or loaded by lane 0.
    unsigned int pz = __shfl_up(cur.z, 1);
    unsigned int pw = __shfl_up(cur.w, 1);
    if (threadIdx.x % warpSize == 0 && active && j > 0) {
        const uint4 prev = reinterpret_cast<const uint4*>(x)[j - 1];  // j - 1 < nfull
        pz = prev.z;
        pw = prev.w;
    }
    if (!active) return;  // after the shuffles
    const float h[3] = {cc_hi(pz), cc_lo(pw), cc_hi(pw)};  // x[e0 - 3], x[e0 - 2], x[e0 - 1]

    const int64_t row = e0 / seqlen;
    const int64_t t0 = e0 - row * seqlen;
    const int64_t d = row % dim;
    const float w0 = __half2float(weight[d * 4 + 0]), w1 = __half2float(weight[d * 4 + 1]);
    const float w2 = __half2float(weight[d * 4 + 2]), w3 = __half2float(weight[d * 4 + 3]);
    const float b = __half2float(bias[d]);
    // BUG, kept on purpose: right only when the chunk starts a sequence or lies inside one.
    const bool start = t0 == 0;
    const float xs[11] = {start ? 0.0f : h[0], start ? 0.0f : h[1], start ? 0.0f : h[2],
                          v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
    float out[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = cc_silu(b + w0 * xs[i] + w1 * xs[i + 1] + w2 * xs[i + 2] + w3 * xs[i + 3]);
    if (j < nfull) {
        uint4 o;
        o.x = cc_pack(out[0], out[1]);
        o.y = cc_pack(out[2], out[3]);
        o.z = cc_pack(out[4], out[5]);
        o.w = cc_pack(out[6], out[7]);
        reinterpret_cast<uint4*>(y)[j] = o;
    } else {
#pragma unroll
        for (int i = 0; i < 8; ++i)
            if (e0 + i < total) y[e0 + i] = __float2half_rn(out[i]);
    }
}

// Unaligned x or y: one output per thread, coalesced scalar accesses.
__global__ void conv1d_causal_scalar_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                            const __half* __restrict__ bias, __half* __restrict__ y, int64_t total,
                                            int64_t dim, int64_t seqlen) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= total) return;
    const int64_t row = e / seqlen;
    const int64_t t = e - row * seqlen;
    const int64_t d = row % dim;
    float z = __half2float(bias[d]);
#pragma unroll
    for (int k = 0; k < 4; ++k)
        if (t - 3 + k >= 0) z += __half2float(weight[d * 4 + k]) * __half2float(x[e - 3 + k]);
    y[e] = __float2half_rn(cc_silu(z));
}

extern "C" int conv1d_causal(const __half* x, const __half* weight, const __half* bias, __half* y, int64_t batch,
                             int64_t dim, int64_t seqlen, hipStream_t stream) {
    const int64_t total = batch * dim * seqlen;
    if (total <= 0) return (int)hipSuccess;
    const bool aligned = (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 == 0;
    if (aligned) {
        const int64_t chunks = (total + 7) / 8;
        const int64_t blocks = (chunks + CC_THREADS - 1) / CC_THREADS;
        hipLaunchKernelGGL(conv1d_causal_chunk_kernel, dim3((unsigned int)blocks), dim3(CC_THREADS), 0, stream, x,
                           weight, bias, y, total, dim, seqlen);
    } else {
        const int64_t blocks = (total + CC_THREADS - 1) / CC_THREADS;
        hipLaunchKernelGGL(conv1d_causal_scalar_kernel, dim3((unsigned int)blocks), dim3(CC_THREADS), 0, stream, x,
                           weight, bias, y, total, dim, seqlen);
    }
    return (int)hipGetLastError();
}

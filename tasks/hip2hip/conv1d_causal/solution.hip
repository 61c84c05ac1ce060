// Depthwise causal conv1d (width 4) + SiLU, fp16: a general, portable solution.
//
// * The tensor is processed as one flat array of batch * dim * seqlen values in chunks of
//   8 (16 bytes): thread j loads chunk j with one uint4 load, computes 8 outputs and
//   stores them with one uint4 store. Consecutive threads take consecutive chunks, so
//   loads and stores are fully coalesced whatever seqlen is.
// * The 3 values before a chunk (the causal history) come from the neighbouring lane,
//   which holds the previous chunk, through two __shfl_up of 32-bit words; lane 0 of each
//   warp (32 or 64 lanes) loads them itself. Every thread of the warp takes part in the
//   shuffles (threads past the end hold zeros and store nothing).
// * A chunk may straddle sequences (seqlen need not be a multiple of 8, sequences may be
//   shorter than 8): the position t inside the sequence is tracked per element; at t = 0
//   the channel's weights are reloaded and the history before t is zero (causal padding).
// * A scalar kernel (one output per thread, coalesced) handles x or y not 16-byte
//   aligned. fp32 arithmetic, SiLU as z / (1 + exp(-z)) with the fast exp and
//   division, one rounding to fp16.

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

    int64_t row = e0 / seqlen;
    int64_t t = e0 - row * seqlen;
    int64_t d = row % dim;
    float w0 = __half2float(weight[d * 4 + 0]), w1 = __half2float(weight[d * 4 + 1]);
    float w2 = __half2float(weight[d * 4 + 2]), w3 = __half2float(weight[d * 4 + 3]);
    float b = __half2float(bias[d]);
    float out[8];
    if (t >= 3 && t + 8 <= seqlen) {
        // Common case: the chunk lies inside one sequence, past its first 3 steps.
        const float xs[11] = {h[0], h[1], h[2], v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
#pragma unroll
        for (int i = 0; i < 8; ++i) out[i] = cc_silu(b + w0 * xs[i] + w1 * xs[i + 1] + w2 * xs[i + 2] + w3 * xs[i + 3]);
    } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            if (t == seqlen) {  // next sequence
                t = 0;
                ++row;
                d = row % dim;
                w0 = __half2float(weight[d * 4 + 0]);
                w1 = __half2float(weight[d * 4 + 1]);
                w2 = __half2float(weight[d * 4 + 2]);
                w3 = __half2float(weight[d * 4 + 3]);
                b = __half2float(bias[d]);
            }
            // x[e - k] for k = 1..3 inside this sequence, else 0 (causal padding).
            const float xm1 = t >= 1 ? (i >= 1 ? v[i - 1] : h[2 + i]) : 0.0f;
            const float xm2 = t >= 2 ? (i >= 2 ? v[i - 2] : h[1 + i]) : 0.0f;
            const float xm3 = t >= 3 ? (i >= 3 ? v[i - 3] : h[i]) : 0.0f;
            out[i] = cc_silu(b + w0 * xm3 + w1 * xm2 + w2 * xm1 + w3 * v[i]);
            ++t;
        }
    }
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

// MoE router top-k with renormalised softmax weights: a general, portable solution.
//
// * A token is handled by a group of G lanes (G = 1, 2, 4, 8 or 16, a power of two chosen
//   so that each lane holds at most VPL = 16 logits in registers: one thread per token
//   for up to 16 experts, 16 lanes for 256). Lane g of a group owns the contiguous experts
//   g * VPL .. g * VPL + VPL - 1 (missing ones are -inf padding) and loads them as 16-byte
//   vectors when experts % 8 == 0 and the logits are 16-byte aligned, else scalar.
// * The row is read from memory once. Rank j is found from the registers: each lane
//   keeps its best candidate ranked after rank j - 1 in the order (logit descending,
//   index ascending), then a butterfly of __shfl_xor over the G lanes (offsets < G, so it
//   stays inside the group) picks the group's best, ties to the lower index. Every lane
//   ends with all topk (logit, index) pairs, so the renormalised weights
//   exp(l_j - l_0) / sum need no further communication; lane g stores ranks j = g, g + G, ...
// * Groups never span warps (G <= 16 <= warpSize); a warp covers warpSize / G tokens per
//   iteration of a grid-stride loop whose bound depends on the warp only, so whole warps
//   reach the shuffles (groups past the last token compute on padding and store nothing).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define MOE_THREADS 256
#define MOE_MAX_TOPK 8
#define MOE_MAX_GRID 2147483647LL
#define MOE_NO_INDEX 0x7fffffff

// (v, i) is ranked before (bv, bi): larger logit, or equal logit and lower index.
static __device__ __forceinline__ bool moe_before(float v, int i, float bv, int bi) {
    return v > bv || (v == bv && i < bi);
}

template <int G, int VPL, bool VEC>
__global__ void __launch_bounds__(MOE_THREADS)
moe_topk_group_kernel(const __half* __restrict__ logits, float* __restrict__ weights, int32_t* __restrict__ ids,
                      int64_t tokens, int64_t experts, int64_t topk) {
    const int lane = threadIdx.x % warpSize;
    const int g = lane % G;  // lane within the group
    const int64_t tokens_per_warp = warpSize / G;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t warp = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t nwarps = (int64_t)gridDim.x * warps_per_block;
    const int e0 = g * VPL;  // first expert of this lane
    const int kk = (int)topk;

    for (int64_t base = warp * tokens_per_warp; base < tokens; base += nwarps * tokens_per_warp) {
        const int64_t t = base + lane / G;
        const bool valid = t < tokens;
        const __half* __restrict__ row = logits + t * experts;

        float v[VPL];
#pragma unroll
        for (int q = 0; q < VPL; ++q) v[q] = -INFINITY;
        if (valid) {
            if (VEC) {  // experts % 8 == 0 and VPL % 8 == 0: each uint4 is wholly inside or outside the row
#pragma unroll
                for (int h = 0; h < VPL / 8; ++h) {
                    if (e0 + 8 * h < experts) {
                        const uint4 u = *reinterpret_cast<const uint4*>(row + e0 + 8 * h);
                        const unsigned int words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
                        for (int p = 0; p < 4; ++p) {
                            v[8 * h + 2 * p] = __half2float(__ushort_as_half((unsigned short)(words[p] & 0xffffu)));
                            v[8 * h + 2 * p + 1] = __half2float(__ushort_as_half((unsigned short)(words[p] >> 16)));
                        }
                    }
                }
            } else {
#pragma unroll
                for (int q = 0; q < VPL; ++q)
                    if (e0 + q < experts) v[q] = __half2float(row[e0 + q]);
            }
        }

        float val[MOE_MAX_TOPK];
        int idx[MOE_MAX_TOPK];
        float pv = INFINITY;
        int pi = -1;
#pragma unroll
        for (int j = 0; j < MOE_MAX_TOPK; ++j) {
            if (j < kk) {  // kk is the same for every lane: whole groups shuffle together
                float bv = -INFINITY;
                int bi = MOE_NO_INDEX;
#pragma unroll
                for (int q = 0; q < VPL; ++q) {
                    const int e = e0 + q;
                    const bool after = v[q] < pv || (v[q] == pv && e > pi);  // ranked after rank j - 1
                    if (after && moe_before(v[q], e, bv, bi)) {
                        bv = v[q];
                        bi = e;
                    }
                }
#pragma unroll
                for (int off = G / 2; off > 0; off /= 2) {
                    const float ov = __shfl_xor(bv, off);
                    const int oi = __shfl_xor(bi, off);
                    if (moe_before(ov, oi, bv, bi)) {
                        bv = ov;
                        bi = oi;
                    }
                }
                val[j] = bv;
                idx[j] = bi;
                pv = bv;
                pi = bi;
            } else {
                val[j] = -INFINITY;
                idx[j] = 0;
            }
        }

        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < MOE_MAX_TOPK; ++j)
            if (j < kk) sum += expf(val[j] - val[0]);
        const float inv = 1.0f / sum;
        if (valid) {
#pragma unroll
            for (int j = 0; j < MOE_MAX_TOPK; ++j) {
                if (j < kk && j % G == g) {
                    weights[t * topk + j] = expf(val[j] - val[0]) * inv;
                    ids[t * topk + j] = idx[j];
                }
            }
        }
    }
}

template <int G, int VPL>
static void moe_launch(const __half* logits, float* weights, int32_t* ids, int64_t tokens, int64_t experts,
                       int64_t topk, hipStream_t stream) {
    const int64_t tokens_per_block = MOE_THREADS / G;  // whole groups per block for 32 and 64 lanes
    int64_t blocks = (tokens + tokens_per_block - 1) / tokens_per_block;
    if (blocks > MOE_MAX_GRID) blocks = MOE_MAX_GRID;
    const bool vec = experts % 8 == 0 && reinterpret_cast<uintptr_t>(logits) % 16 == 0;
    if (vec)
        hipLaunchKernelGGL((moe_topk_group_kernel<G, VPL, true>), dim3((unsigned int)blocks), dim3(MOE_THREADS), 0,
                           stream, logits, weights, ids, tokens, experts, topk);
    else
        hipLaunchKernelGGL((moe_topk_group_kernel<G, VPL, false>), dim3((unsigned int)blocks), dim3(MOE_THREADS), 0,
                           stream, logits, weights, ids, tokens, experts, topk);
}

extern "C" int moe_topk_routing(const __half* logits, float* weights, int32_t* ids, int64_t tokens, int64_t experts,
                                int64_t topk, hipStream_t stream) {
    if (topk < 1 || topk > MOE_MAX_TOPK || topk > experts || experts > 256) return (int)hipErrorInvalidValue;
    if (tokens <= 0) return (int)hipSuccess;
    if (experts <= 8)
        moe_launch<1, 8>(logits, weights, ids, tokens, experts, topk, stream);
    else if (experts <= 16)
        moe_launch<1, 16>(logits, weights, ids, tokens, experts, topk, stream);
    else if (experts <= 32)
        moe_launch<2, 16>(logits, weights, ids, tokens, experts, topk, stream);
    else if (experts <= 64)
        moe_launch<4, 16>(logits, weights, ids, tokens, experts, topk, stream);
    else if (experts <= 128)
        moe_launch<8, 16>(logits, weights, ids, tokens, experts, topk, stream);
    else
        moe_launch<16, 16>(logits, weights, ids, tokens, experts, topk, stream);
    return (int)hipGetLastError();
}

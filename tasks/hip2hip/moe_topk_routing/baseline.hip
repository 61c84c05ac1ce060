// MoE router top-k with renormalised softmax weights: the starting kernel.
//
// One thread per token. Rank j is found by a full pass over the token's logits that keeps
// the best expert ranked after rank j - 1 in the order (logit descending, index
// ascending), so topk passes in all; then the weights exp(l_j - l_0) / sum are computed
// from the kept logits. Correct for every shape (topk <= 8), but each token's row is read
// topk times with scalar 2-byte loads, and neighbouring threads read rows `experts`
// halves apart.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define MOE_MAX_TOPK 8

__global__ void moe_topk_token_per_thread_kernel(const __half* __restrict__ logits, float* __restrict__ weights,
                                                 int32_t* __restrict__ ids, int64_t tokens, int64_t experts,
                                                 int64_t topk) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= tokens) return;
    const __half* row = logits + t * experts;
    float val[MOE_MAX_TOPK];
    int idx[MOE_MAX_TOPK];
    float prev_v = 0.0f;
    int prev_i = -1;
    for (int j = 0; j < topk; ++j) {
        float best_v = 0.0f;
        int best_i = -1;
        for (int e = 0; e < experts; ++e) {
            const float v = __half2float(row[e]);
            // only experts ranked after the previous pick: smaller logit, or equal and larger index
            if (prev_i >= 0 && !(v < prev_v || (v == prev_v && e > prev_i))) continue;
            if (best_i < 0 || v > best_v) {  // strict: of equal logits the lower index stays
                best_v = v;
                best_i = e;
            }
        }
        val[j] = best_v;
        idx[j] = best_i;
        prev_v = best_v;
        prev_i = best_i;
    }
    float sum = 0.0f;
    for (int j = 0; j < topk; ++j) sum += expf(val[j] - val[0]);
    for (int j = 0; j < topk; ++j) {
        weights[t * topk + j] = expf(val[j] - val[0]) / sum;
        ids[t * topk + j] = idx[j];
    }
}

extern "C" int moe_topk_routing(const __half* logits, float* weights, int32_t* ids, int64_t tokens, int64_t experts,
                                int64_t topk, hipStream_t stream) {
    if (topk < 1 || topk > MOE_MAX_TOPK || topk > experts) return (int)hipErrorInvalidValue;
    if (tokens <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (tokens + threads - 1) / threads;
    hipLaunchKernelGGL(moe_topk_token_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, logits,
                       weights, ids, tokens, experts, topk);
    return (int)hipGetLastError();
}

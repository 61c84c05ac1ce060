// MoE weighted combine / unpermute of expert outputs: the starting kernel.
//
// One thread per output element out[t, c] (threads of a block along c, so every load of
// a gathered row is coalesced): a loop over the topk slots loads dst_index[t, j] and
// topk_weights[t, j] (the same address for a whole warp) and one 2-byte half of
// expert_out, accumulating in fp32. Correct for every shape; every access is a scalar
// load, and the indices and weights are re-read for each output element.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void moe_combine_elementwise_kernel(const __half* __restrict__ expert_out,
                                               const int32_t* __restrict__ dst_index,
                                               const float* __restrict__ topk_weights, __half* __restrict__ out,
                                               int64_t topk, int64_t hidden) {
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t t = blockIdx.y;
    if (c >= hidden) return;
    float acc = 0.0f;
    for (int64_t j = 0; j < topk; ++j) {
        const int64_t row = dst_index[t * topk + j];
        acc += topk_weights[t * topk + j] * __half2float(expert_out[row * hidden + c]);
    }
    out[t * hidden + c] = __float2half_rn(acc);
}

extern "C" int moe_unpermute_combine(const __half* expert_out, const int32_t* dst_index, const float* topk_weights,
                                     __half* out, int64_t tokens, int64_t topk, int64_t hidden, hipStream_t stream) {
    if (tokens <= 0 || hidden <= 0) return (int)hipSuccess;
    if (tokens > 65535) return (int)hipErrorInvalidValue;
    const int threads = 256;
    const dim3 grid((unsigned int)((hidden + threads - 1) / threads), (unsigned int)tokens);
    hipLaunchKernelGGL(moe_combine_elementwise_kernel, grid, dim3(threads), 0, stream, expert_out, dst_index,
                       topk_weights, out, topk, hidden);
    return (int)hipGetLastError();
}

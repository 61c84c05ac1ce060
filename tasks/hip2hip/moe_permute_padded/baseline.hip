// MoE token permutation into block-padded expert segments: the starting kernel.
//
// Two kernels. (1) One thread per expert e walks all tokens * topk copies in order and
// appends every copy routed to e at expert_offsets[e] + (copies of e seen so far) - the
// stable order by construction - then marks the rest of its segment as padding (-1); the
// thread of expert 0 also marks the tail after the last segment. Each thread is a
// sequential loop over the whole routing table (the threads of a warp read the same id: a
// broadcast), so its length, not the GPU's width, sets the time. (2) One block per row p
// of the buffer copies row src_index[p] // topk of x, or writes zeros for a padding row,
// one 2-byte half per thread and step.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void moe_permute_rank_sequential_kernel(const int32_t* __restrict__ topk_ids,
                                                   const int32_t* __restrict__ expert_offsets,
                                                   int32_t* __restrict__ src_index, int64_t copies, int64_t experts,
                                                   int64_t rows) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= experts) return;
    int64_t pos = expert_offsets[e];
    for (int64_t i = 0; i < copies; ++i)
        if (topk_ids[i] == e) src_index[pos++] = (int32_t)i;
    const int64_t end = expert_offsets[e + 1];
    for (; pos < end; ++pos) src_index[pos] = -1;
    if (e == 0)
        for (int64_t p = expert_offsets[experts]; p < rows; ++p) src_index[p] = -1;
}

__global__ void moe_permute_copy_rows_kernel(const __half* __restrict__ x, const int32_t* __restrict__ src_index,
                                             __half* __restrict__ x_sorted, int64_t topk, int64_t hidden) {
    const int64_t p = blockIdx.x;
    const int32_t s = src_index[p];
    if (s < 0) {
        for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) x_sorted[p * hidden + c] = __float2half(0.0f);
    } else {
        const int64_t t = s / topk;
        for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) x_sorted[p * hidden + c] = x[t * hidden + c];
    }
}

extern "C" int moe_permute_padded(const __half* x, const int32_t* topk_ids, const int32_t* expert_offsets,
                                  __half* x_sorted, int32_t* src_index, int64_t tokens, int64_t topk, int64_t experts,
                                  int64_t hidden, hipStream_t stream) {
    const int64_t copies = tokens * topk;
    const int64_t rows = copies + 15 * experts;
    if (rows <= 0) return (int)hipSuccess;
    const int threads = 256;
    hipLaunchKernelGGL(moe_permute_rank_sequential_kernel, dim3((unsigned int)((experts + threads - 1) / threads)),
                       dim3(threads), 0, stream, topk_ids, expert_offsets, src_index, copies, experts, rows);
    hipLaunchKernelGGL(moe_permute_copy_rows_kernel, dim3((unsigned int)rows), dim3(threads), 0, stream, x, src_index,
                       x_sorted, topk, hidden);
    return (int)hipGetLastError();
}

// MoE token permutation into block-padded expert segments: a general, portable solution.
//
// Three kernels, in stream order:
// A. Ranks, one block per chunk of 1024 copies (i in [i0, i0 + 1024)): a shared-memory
//    histogram of the experts of all copies before the chunk (i < i0), counted by the
//    whole block with shared-memory atomics - the number of earlier copies of each
//    expert, so no second pass or workspace is needed; then the chunk in 4 rounds of 256
//    copies, in order: each thread ranks its copy among the earlier copies of the same
//    expert in the round (a loop over the round's ids in shared memory), writes
//    src_index[expert_offsets[e] + hist[e] + rank] = i, and the round's copies are added
//    to hist. This is the stable order, computed in parallel.
// B. Padding, one block per expert: counts the expert's copies (a block-wide scan of the
//    ids) and writes -1 over the padding of its segment; block 0 also covers the rows
//    after the last segment.
// C. Rows, one warp per row p of the buffer (all rows in parallel): copies row
//    src_index[p] // topk of x, or writes zeros for a padding row, lanes striding over
//    the row with 16-byte vectors (8 halves) when hidden % 8 == 0 and the bases are
//    aligned, else halves.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define MP_THREADS 256
#define MP_ROUNDS 4
#define MP_CHUNK (MP_THREADS * MP_ROUNDS)
#define MP_MAX_EXPERTS 256

template <bool VEC>
static __device__ __forceinline__ void mp_copy_row(const __half* __restrict__ src, __half* __restrict__ dst,
                                                   int64_t hidden, int lane) {
    if (VEC) {
        const uint4* __restrict__ s4 = reinterpret_cast<const uint4*>(src);
        uint4* __restrict__ d4 = reinterpret_cast<uint4*>(dst);
        for (int64_t c = lane; c < hidden / 8; c += warpSize) d4[c] = s4[c];
    } else {
        for (int64_t c = lane; c < hidden; c += warpSize) dst[c] = src[c];
    }
}

template <bool VEC>
static __device__ __forceinline__ void mp_zero_row(__half* __restrict__ dst, int64_t hidden, int lane) {
    if (VEC) {
        uint4* __restrict__ d4 = reinterpret_cast<uint4*>(dst);
        for (int64_t c = lane; c < hidden / 8; c += warpSize) d4[c] = make_uint4(0u, 0u, 0u, 0u);
    } else {
        for (int64_t c = lane; c < hidden; c += warpSize) dst[c] = __float2half(0.0f);
    }
}

__global__ void __launch_bounds__(MP_THREADS)
moe_permute_rank_kernel(const int32_t* __restrict__ topk_ids, const int32_t* __restrict__ expert_offsets,
                        int32_t* __restrict__ src_index, int64_t copies, int64_t experts) {
    __shared__ int hist[MP_MAX_EXPERTS];
    __shared__ int ids_s[MP_THREADS];
    const int tid = threadIdx.x;
    const int64_t i0 = (int64_t)blockIdx.x * MP_CHUNK;

    for (int e = tid; e < experts; e += MP_THREADS) hist[e] = 0;
    __syncthreads();
    for (int64_t j = tid; j < i0; j += MP_THREADS) atomicAdd(&hist[topk_ids[j]], 1);
    __syncthreads();

    for (int round = 0; round < MP_ROUNDS; ++round) {
        const int u = round * MP_THREADS + tid;
        const int64_t i = i0 + u;
        const int e = i < copies ? topk_ids[i] : -1;
        ids_s[tid] = e;
        __syncthreads();
        if (e >= 0) {
            int rank = 0;
            for (int v = 0; v < tid; ++v) rank += ids_s[v] == e;
            src_index[expert_offsets[e] + hist[e] + rank] = (int32_t)i;
        }
        __syncthreads();  // every thread has read hist and ids_s
        if (e >= 0) atomicAdd(&hist[e], 1);
        __syncthreads();
    }
}

__global__ void __launch_bounds__(MP_THREADS)
moe_permute_padding_kernel(const int32_t* __restrict__ topk_ids, const int32_t* __restrict__ expert_offsets,
                           int32_t* __restrict__ src_index, int64_t copies, int64_t experts, int64_t rows) {
    __shared__ int count;
    const int e = blockIdx.x;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    int mine = 0;
    for (int64_t j = threadIdx.x; j < copies; j += blockDim.x) mine += topk_ids[j] == e;
    if (mine) atomicAdd(&count, mine);
    __syncthreads();
    const int64_t end = expert_offsets[e + 1];
    for (int64_t p = (int64_t)expert_offsets[e] + count + threadIdx.x; p < end; p += blockDim.x) src_index[p] = -1;
    if (e == 0)
        for (int64_t p = (int64_t)expert_offsets[experts] + threadIdx.x; p < rows; p += blockDim.x) src_index[p] = -1;
}

template <bool VEC>
__global__ void __launch_bounds__(MP_THREADS)
moe_permute_rows_kernel(const __half* __restrict__ x, const int32_t* __restrict__ src_index,
                        __half* __restrict__ x_sorted, int64_t topk, int64_t hidden, int64_t rows) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t nwarps = (int64_t)gridDim.x * warps_per_block;
    for (int64_t p = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize; p < rows; p += nwarps) {
        const int32_t s = src_index[p];  // the same for the whole warp
        if (s < 0)
            mp_zero_row<VEC>(x_sorted + p * hidden, hidden, lane);
        else
            mp_copy_row<VEC>(x + (int64_t)(s / topk) * hidden, x_sorted + p * hidden, hidden, lane);
    }
}

extern "C" int moe_permute_padded(const __half* x, const int32_t* topk_ids, const int32_t* expert_offsets,
                                  __half* x_sorted, int32_t* src_index, int64_t tokens, int64_t topk, int64_t experts,
                                  int64_t hidden, hipStream_t stream) {
    const int64_t copies = tokens * topk;
    const int64_t rows = copies + 15 * experts;
    if (experts > MP_MAX_EXPERTS || experts <= 0) return (int)hipErrorInvalidValue;
    if (rows <= 0) return (int)hipSuccess;
    const bool vec = hidden % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(x_sorted) % 16 == 0;
    const int64_t chunks = (copies + MP_CHUNK - 1) / MP_CHUNK;
    if (chunks > 0)
        hipLaunchKernelGGL(moe_permute_rank_kernel, dim3((unsigned int)chunks), dim3(MP_THREADS), 0, stream, topk_ids,
                           expert_offsets, src_index, copies, experts);
    hipLaunchKernelGGL(moe_permute_padding_kernel, dim3((unsigned int)experts), dim3(MP_THREADS), 0, stream, topk_ids,
                       expert_offsets, src_index, copies, experts, rows);
    int64_t blocks = (rows + (MP_THREADS / 32) - 1) / (MP_THREADS / 32);  // a row per 32-lane warp
    if (blocks > 1048576) blocks = 1048576;
    if (vec)
        hipLaunchKernelGGL(moe_permute_rows_kernel<true>, dim3((unsigned int)blocks), dim3(MP_THREADS), 0, stream, x,
                           src_index, x_sorted, topk, hidden, rows);
    else
        hipLaunchKernelGGL(moe_permute_rows_kernel<false>, dim3((unsigned int)blocks), dim3(MP_THREADS), 0, stream, x,
                           src_index, x_sorted, topk, hidden, rows);
    return (int)hipGetLastError();
}

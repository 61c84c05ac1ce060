// Causal prefill attention, GQA, fp16: the starting kernel.
//
// One block of 128 threads per query row (b, h, i). The block computes the whole score
// row: each thread takes keys j = t, t + 128, ... <= i and forms the dot product of q
// (staged in shared memory as fp32) with k[j] by a serial loop over head_dim; the scores
// go to a shared-memory row of seq floats. A block max, the exponentials and a block sum
// follow, then each thread owns output dimensions d = t, t + 128, ... and sums p_j v[j][d]
// over the i + 1 keys serially. Correct for every shape, but every query row reads its
// keys and values again (no reuse of K/V tiles across the query rows of a head or across
// the query heads of a GQA group), the dot products are serial per thread, and nothing
// uses tensor cores.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define CP_THREADS 128
#define CP_MAX_WARPS 32  // enough for any warp size >= 4 at 128 threads
#define CP_MAX_HEAD_DIM 256

__device__ __forceinline__ float cp_block_max(float v, float* red) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = (blockDim.x + warpSize - 1) / warpSize;
    for (int off = warpSize / 2; off > 0; off /= 2) v = fmaxf(v, __shfl_xor(v, off));
    __syncthreads();  // red may still be read from a previous reduction
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < nwarps; ++w) r = fmaxf(r, red[w]);
    return r;
}

__device__ __forceinline__ float cp_block_sum(float v, float* red) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = (blockDim.x + warpSize - 1) / warpSize;
    for (int off = warpSize / 2; off > 0; off /= 2) v += __shfl_xor(v, off);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float r = 0.0f;
    for (int w = 0; w < nwarps; ++w) r += red[w];
    return r;
}

__global__ void causal_prefill_rowwise_kernel(const __half* __restrict__ q, const __half* __restrict__ k,
                                              const __half* __restrict__ v, __half* __restrict__ out,
                                              int64_t heads, int64_t kv_heads, int64_t seq, int64_t head_dim,
                                              float scale) {
    extern __shared__ float scores[];  // seq floats
    __shared__ float qs[CP_MAX_HEAD_DIM];
    __shared__ float red[CP_MAX_WARPS];

    const int64_t row = blockIdx.x;  // ((b * heads) + h) * seq + i
    const int64_t i = row % seq;
    const int64_t bh = row / seq;
    const int64_t b = bh / heads;
    const int64_t h = bh % heads;
    const int64_t g = h / (heads / kv_heads);
    const int t = threadIdx.x;

    const __half* qrow = q + row * head_dim;
    const __half* kb = k + (b * kv_heads + g) * seq * head_dim;
    const __half* vb = v + (b * kv_heads + g) * seq * head_dim;

    for (int64_t d = t; d < head_dim; d += blockDim.x) qs[d] = __half2float(qrow[d]);
    __syncthreads();

    float local_max = -INFINITY;
    for (int64_t j = t; j <= i; j += blockDim.x) {
        const __half* krow = kb + j * head_dim;
        float s = 0.0f;
        for (int64_t d = 0; d < head_dim; ++d) s += qs[d] * __half2float(krow[d]);
        s *= scale;
        scores[j] = s;
        local_max = fmaxf(local_max, s);
    }
    const float m = cp_block_max(local_max, red);  // key 0 always exists: m is finite

    float local_sum = 0.0f;
    for (int64_t j = t; j <= i; j += blockDim.x) {
        const float p = expf(scores[j] - m);
        scores[j] = p;
        local_sum += p;
    }
    const float l = cp_block_sum(local_sum, red);  // its barriers also publish scores[]
    const float inv = 1.0f / l;

    for (int64_t d = t; d < head_dim; d += blockDim.x) {
        float acc = 0.0f;
        for (int64_t j = 0; j <= i; ++j) acc += scores[j] * __half2float(vb[j * head_dim + d]);
        out[row * head_dim + d] = __float2half_rn(acc * inv);
    }
}

extern "C" int causal_prefill_attention(const __half* q, const __half* k, const __half* v, __half* out,
                                        int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq,
                                        int64_t head_dim, float scale, hipStream_t stream) {
    const int64_t rows = batch * heads * seq;
    if (rows <= 0 || head_dim <= 0) return (int)hipSuccess;
    const size_t smem = (size_t)seq * sizeof(float);
    hipLaunchKernelGGL(causal_prefill_rowwise_kernel, dim3((unsigned int)rows), dim3(CP_THREADS), smem, stream,
                       q, k, v, out, heads, kv_heads, seq, head_dim, scale);
    return (int)hipGetLastError();
}

// Paged-KV decode attention with a block table (GQA, fp16): the starting kernel.
//
// One block of 128 threads per (sequence, query head), three phases with the scores of
// the sequence in shared memory (max_context <= 8192):
//   1. each thread takes positions t = tid, tid + 128, ...: it looks up the token's pool
//      block in the block table and computes the dot product of q (scaled, in shared
//      memory) with the key, element by element; the block reduces the maximum;
//   2. exp(score - max) in place, and the block reduces the sum;
//   3. each thread takes one element d of the output and walks all positions in order,
//      accumulating p_t * v[t, d] (a row of v is read coalesced by the block).
// Correct for every shape, but the key reads are scalar and every thread walks its own
// key row (32 rows per warp access), phase 3 is a serial loop over the context with one
// value in flight per thread, the query heads of a GQA group each read the shared KV head
// again, and a single long sequence gets only q_heads blocks.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define PA_THREADS 128
#define PA_MAX_CTX 8192
#define PA_MAX_DIM 256

// Block-wide max (op = 0) or sum (op = 1) of v over PA_THREADS threads, through shared memory.
static __device__ float pa_block_reduce(float v, float* red, int op) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = PA_THREADS / 2; s > 0; s /= 2) {
        if ((int)threadIdx.x < s) red[threadIdx.x] = op == 0 ? fmaxf(red[threadIdx.x], red[threadIdx.x + s])
                                                             : red[threadIdx.x] + red[threadIdx.x + s];
        __syncthreads();
    }
    const float r = red[0];
    __syncthreads();  // red is reused by the next reduction
    return r;
}

__global__ void __launch_bounds__(PA_THREADS)
paged_attention_naive_kernel(const __half* __restrict__ q, const __half* __restrict__ k_cache,
                             const __half* __restrict__ v_cache, const int32_t* __restrict__ block_tables,
                             const int32_t* __restrict__ context_lens, __half* __restrict__ out, int64_t q_heads,
                             int64_t kv_heads, int64_t head_dim, int64_t block_size, int64_t max_blocks,
                             float scale) {
    __shared__ float qs[PA_MAX_DIM];
    __shared__ float sc[PA_MAX_CTX];
    __shared__ float red[PA_THREADS];
    const int64_t bh = blockIdx.x;  // seq * q_heads + h
    const int64_t seq = bh / q_heads;
    const int64_t h = bh % q_heads;
    const int64_t kvh = h / (q_heads / kv_heads);
    const int tid = threadIdx.x;
    const int64_t len = context_lens[seq];
    const int32_t* table = block_tables + seq * max_blocks;

    for (int64_t i = tid; i < head_dim; i += PA_THREADS) qs[i] = __half2float(q[bh * head_dim + i]) * scale;
    __syncthreads();

    float mx = -INFINITY;
    for (int64_t t = tid; t < len; t += PA_THREADS) {
        const int64_t blk = table[t / block_size];
        const __half* kp = k_cache + ((blk * block_size + t % block_size) * kv_heads + kvh) * head_dim;
        float s = 0.0f;
        for (int64_t i = 0; i < head_dim; ++i) s += qs[i] * __half2float(kp[i]);
        sc[t] = s;
        mx = fmaxf(mx, s);
    }
    mx = pa_block_reduce(mx, red, 0);

    float sum = 0.0f;
    for (int64_t t = tid; t < len; t += PA_THREADS) {
        const float e = expf(sc[t] - mx);
        sc[t] = e;
        sum += e;
    }
    sum = pa_block_reduce(sum, red, 1);  // its barriers also publish sc

    for (int64_t i = tid; i < head_dim; i += PA_THREADS) {
        float acc = 0.0f;
        for (int64_t t = 0; t < len; ++t) {
            const int64_t blk = table[t / block_size];
            acc += sc[t] * __half2float(v_cache[((blk * block_size + t % block_size) * kv_heads + kvh) * head_dim + i]);
        }
        out[bh * head_dim + i] = __float2half_rn(acc / sum);
    }
}

extern "C" int paged_kv_decode_attention(const __half* q, const __half* k_cache, const __half* v_cache,
                                         const int32_t* block_tables, const int32_t* context_lens, __half* out,
                                         int64_t num_seqs, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                         int64_t block_size, int64_t max_context, int64_t max_blocks, float scale,
                                         hipStream_t stream) {
    if (num_seqs <= 0 || q_heads <= 0 || head_dim <= 0) return (int)hipSuccess;
    if (max_context > PA_MAX_CTX || head_dim > PA_MAX_DIM || q_heads % kv_heads != 0) return (int)hipErrorInvalidValue;
    hipLaunchKernelGGL(paged_attention_naive_kernel, dim3((unsigned int)(num_seqs * q_heads)), dim3(PA_THREADS), 0,
                       stream, q, k_cache, v_cache, block_tables, context_lens, out, q_heads, kv_heads, head_dim,
                       block_size, max_blocks, scale);
    return (int)hipGetLastError();
}

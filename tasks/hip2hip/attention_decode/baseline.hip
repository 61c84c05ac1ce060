// Single-query (decode) attention over a KV cache, GQA, fp16: the starting kernel.
//
// One block per (sequence, query head), one thread per head dimension (the block is
// rounded up to a multiple of 64 threads; the extra threads hold zeros). The block walks
// the kv_len keys one at a time: each thread multiplies its q and k elements, the dot
// product is summed over the block (warp shuffles, then shared memory and two barriers
// per key), and an online softmax updates the running max, the running sum and each
// thread's element of the output. Correct for every shape, but the loop over the keys is
// serial and latency-bound (one key in flight per block), each query head of a GQA group
// reads the shared KV head again, and with few sequences only a few blocks run.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define AD_MAX_WARPS 32  // 1024 threads / 32 lanes

__global__ void attention_decode_serial_kernel(const __half* __restrict__ q, const __half* __restrict__ k_cache,
                                               const __half* __restrict__ v_cache, __half* __restrict__ out,
                                               int64_t heads, int64_t kv_heads, int64_t kv_len, int64_t head_dim,
                                               float scale) {
    __shared__ float partial[AD_MAX_WARPS];
    const int64_t bh = blockIdx.x;  // b * heads + h
    const int64_t b = bh / heads;
    const int64_t h = bh % heads;
    const int64_t kvh = h / (heads / kv_heads);
    const int t = threadIdx.x;
    const int lane = t % warpSize;
    const int warp = t / warpSize;
    const int nwarps = blockDim.x / warpSize;
    const bool active = t < head_dim;

    const float qt = active ? __half2float(q[bh * head_dim + t]) : 0.0f;
    const __half* kb = k_cache + (b * kv_heads + kvh) * kv_len * head_dim;
    const __half* vb = v_cache + (b * kv_heads + kvh) * kv_len * head_dim;

    float m = -INFINITY;  // running max of the scores
    float l = 0.0f;       // running sum of exp(score - m)
    float acc = 0.0f;     // running sum of exp(score - m) * v[t]
    for (int64_t j = 0; j < kv_len; ++j) {
        const float kt = active ? __half2float(kb[j * head_dim + t]) : 0.0f;
        const float vt = active ? __half2float(vb[j * head_dim + t]) : 0.0f;
        float s = qt * kt;
        for (int offset = warpSize / 2; offset > 0; offset /= 2) s += __shfl_xor(s, offset);
        if (lane == 0) partial[warp] = s;
        __syncthreads();
        float score = 0.0f;
        for (int w = 0; w < nwarps; ++w) score += partial[w];
        __syncthreads();  // partial is rewritten for the next key
        score *= scale;
        const float m_new = fmaxf(m, score);
        const float corr = expf(m - m_new);  // 0 for the first key (m = -inf)
        const float p = expf(score - m_new);
        l = l * corr + p;
        acc = acc * corr + p * vt;
        m = m_new;
    }
    if (active) out[bh * head_dim + t] = __float2half_rn(acc / l);
}

extern "C" int attention_decode(const __half* q, const __half* k_cache, const __half* v_cache, __half* out,
                                int64_t batch, int64_t heads, int64_t kv_heads, int64_t kv_len, int64_t head_dim,
                                float scale, hipStream_t stream) {
    const int64_t pairs = batch * heads;
    if (pairs <= 0 || head_dim <= 0 || kv_len <= 0) return (int)hipSuccess;
    // A multiple of 64 threads: whole warps for 32- and 64-lane hardware.
    const int64_t threads = (head_dim + 63) / 64 * 64;
    hipLaunchKernelGGL(attention_decode_serial_kernel, dim3((unsigned int)pairs), dim3((unsigned int)threads), 0, stream,
                       q, k_cache, v_cache, out, heads, kv_heads, kv_len, head_dim, scale);
    return (int)hipGetLastError();
}

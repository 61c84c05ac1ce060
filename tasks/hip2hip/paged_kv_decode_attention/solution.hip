// Paged-KV decode attention with a block table (GQA, fp16): a general, portable solution.
//
// Split-KV ("flash-decoding") with the query heads of a GQA group processed together:
// * Kernel 1, one block of 256 threads per (sequence, kv head, partition of 256 tokens);
//   partitions past the sequence's end exit at once. The block holds the G = q_heads /
//   kv_heads query rows of its kv head in shared memory (fp32, pre-scaled), so each key
//   and value is read once for the whole group instead of once per query head.
//   - scores: one token per thread; the key row is loaded as 16-byte vectors (the pool
//     block is looked up once per token) and dotted with the G query rows (broadcast
//     shared-memory reads); the G x 256 scores stay in shared memory;
//   - softmax statistics: one warp per query head, max and sum of exp over the partition
//     with __shfl_xor butterflies (warpSize lanes, 32 or 64);
//   - values: thread (head g, 8-wide slice of head_dim, token subset) accumulates
//     p[g, t] * v[t, slice] over its tokens with 16-byte loads of v; the token subsets are
//     summed through shared memory. Output: the unnormalised partial sum with its max
//     and sum of exp, in an fp32 workspace (allocated once, grown when needed, reused
//     across calls: the split-KV partials have to live somewhere).
// * Kernel 2, one block per (sequence, query head): rescales the partitions' partial sums
//   to their common max and divides by the total sum; out rounded to fp16 once.
// Requires head_dim % 8 == 0 (64, 80, 128: the task's head sizes, at most 128) and
// groups of at most 16 query heads.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define PK_THREADS 256
#define PK_PART 256       // tokens per partition (one per thread in the score phase)
#define PK_MAX_G 16
#define PK_MAX_DIM 128
#define PK_MAX_VEC (PK_MAX_DIM / 8)

static __device__ __forceinline__ float pk_warp_max(float v) {
    for (int o = warpSize / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor(v, o));
    return v;
}
static __device__ __forceinline__ float pk_warp_sum(float v) {
    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_xor(v, o);
    return v;
}

static __device__ __forceinline__ void pk_unpack8(const uint4& u, float* f) {
    const unsigned int words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        f[2 * p] = __half2float(__ushort_as_half((unsigned short)(words[p] & 0xffffu)));
        f[2 * p + 1] = __half2float(__ushort_as_half((unsigned short)(words[p] >> 16)));
    }
}

__global__ void __launch_bounds__(PK_THREADS)
paged_attn_partition_kernel(const __half* __restrict__ q, const __half* __restrict__ k_cache,
                            const __half* __restrict__ v_cache, const int32_t* __restrict__ block_tables,
                            const int32_t* __restrict__ context_lens, float* __restrict__ ws_acc,
                            float* __restrict__ ws_ml, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                            int64_t block_size, int64_t max_blocks, int64_t max_parts, float scale) {
    __shared__ float qs[PK_MAX_G * PK_MAX_DIM];
    __shared__ float sc[PK_MAX_G * PK_PART];
    __shared__ float red[PK_THREADS * 8];
    __shared__ float stat_m[PK_MAX_G];
    __shared__ float stat_l[PK_MAX_G];

    const int64_t seq = blockIdx.x;
    const int64_t kvh = blockIdx.y;
    const int64_t part = blockIdx.z;
    const int64_t len = context_lens[seq];
    const int64_t p0 = part * PK_PART;
    if (p0 >= len) return;  // block-uniform
    const int n = (int)(len - p0 < PK_PART ? len - p0 : PK_PART);
    const int G = (int)(q_heads / kv_heads);
    const int nvec = (int)(head_dim / 8);
    const int tid = threadIdx.x;
    const int32_t* __restrict__ table = block_tables + seq * max_blocks;

    // The group's query rows, scaled.
    const __half* __restrict__ qg = q + (seq * q_heads + kvh * G) * head_dim;
    for (int i = tid; i < G * head_dim; i += PK_THREADS) qs[i] = __half2float(qg[i]) * scale;
    __syncthreads();

    // Scores: one token per thread.
    if (tid < n) {
        const int64_t t = p0 + tid;
        const int64_t blk = table[t / block_size];
        const uint4* __restrict__ kr =
            reinterpret_cast<const uint4*>(k_cache + ((blk * block_size + t % block_size) * kv_heads + kvh) * head_dim);
        uint4 kv[PK_MAX_VEC];
#pragma unroll
        for (int c = 0; c < PK_MAX_VEC; ++c)
            if (c < nvec) kv[c] = kr[c];
        for (int g = 0; g < G; ++g) {
            const float* __restrict__ qrow = qs + g * head_dim;
            float s = 0.0f;
#pragma unroll
            for (int c = 0; c < PK_MAX_VEC; ++c) {
                if (c < nvec) {
                    float f[8];
                    pk_unpack8(kv[c], f);
#pragma unroll
                    for (int e = 0; e < 8; ++e) s = fmaf(qrow[8 * c + e], f[e], s);
                }
            }
            sc[g * PK_PART + tid] = s;
        }
    }
    __syncthreads();

    // Softmax statistics of the partition: one warp per query head.
    const int lane = tid % warpSize;
    const int wid = tid / warpSize;
    const int warps = PK_THREADS / warpSize;
    for (int g = wid; g < G; g += warps) {
        float m = -INFINITY;
        for (int t = lane; t < n; t += warpSize) m = fmaxf(m, sc[g * PK_PART + t]);
        m = pk_warp_max(m);
        float l = 0.0f;
        for (int t = lane; t < n; t += warpSize) {
            const float e = expf(sc[g * PK_PART + t] - m);
            sc[g * PK_PART + t] = e;
            l += e;
        }
        l = pk_warp_sum(l);
        if (lane == 0) {
            stat_m[g] = m;
            stat_l[g] = l;
        }
    }
    __syncthreads();

    // Values: thread = (pair = (g, slice), token subset ts).
    const int pairs = G * nvec;           // <= 16 * 16 = 256
    const int subsets = PK_THREADS / pairs;
    float acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = 0.0f;
    const int pair = tid % pairs;
    const int ts = tid / pairs;
    if (ts < subsets) {
        const int g = pair / nvec;
        const int c = pair % nvec;
        for (int t = ts; t < n; t += subsets) {
            const int64_t tok = p0 + t;
            const int64_t blk = table[tok / block_size];
            const uint4 u = reinterpret_cast<const uint4*>(
                v_cache + ((blk * block_size + tok % block_size) * kv_heads + kvh) * head_dim)[c];
            float f[8];
            pk_unpack8(u, f);
            const float p = sc[g * PK_PART + t];
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[e] = fmaf(p, f[e], acc[e]);
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) red[(ts * pairs + pair) * 8 + e] = acc[e];
    }
    __syncthreads();
    if (tid < pairs) {
        const int g = tid / nvec;
        const int c = tid % nvec;
        float s[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) s[e] = 0.0f;
        for (int u = 0; u < subsets; ++u)
#pragma unroll
            for (int e = 0; e < 8; ++e) s[e] += red[(u * pairs + tid) * 8 + e];
        const int64_t h = kvh * G + g;
        float* __restrict__ dst = ws_acc + ((seq * q_heads + h) * max_parts + part) * head_dim + 8 * c;
#pragma unroll
        for (int e = 0; e < 8; ++e) dst[e] = s[e];
        if (c == 0) {
            ws_ml[((seq * q_heads + h) * max_parts + part) * 2] = stat_m[g];
            ws_ml[((seq * q_heads + h) * max_parts + part) * 2 + 1] = stat_l[g];
        }
    }
}

__global__ void __launch_bounds__(PK_MAX_DIM)
paged_attn_combine_kernel(const float* __restrict__ ws_acc, const float* __restrict__ ws_ml,
                          const int32_t* __restrict__ context_lens, __half* __restrict__ out, int64_t q_heads,
                          int64_t head_dim, int64_t max_parts) {
    const int64_t sh = blockIdx.x;  // seq * q_heads + h
    const int64_t seq = sh / q_heads;
    const int64_t parts = (context_lens[seq] + PK_PART - 1) / PK_PART;
    const float* __restrict__ ml = ws_ml + sh * max_parts * 2;
    float m = -INFINITY;
    for (int64_t p = 0; p < parts; ++p) m = fmaxf(m, ml[2 * p]);
    float l = 0.0f;
    for (int64_t p = 0; p < parts; ++p) l += expf(ml[2 * p] - m) * ml[2 * p + 1];
    for (int64_t d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float a = 0.0f;
        for (int64_t p = 0; p < parts; ++p) a += expf(ml[2 * p] - m) * ws_acc[(sh * max_parts + p) * head_dim + d];
        out[sh * head_dim + d] = __float2half_rn(a / l);
    }
}

static float* g_pk_ws = nullptr;
static size_t g_pk_ws_bytes = 0;

extern "C" int paged_kv_decode_attention(const __half* q, const __half* k_cache, const __half* v_cache,
                                         const int32_t* block_tables, const int32_t* context_lens, __half* out,
                                         int64_t num_seqs, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                         int64_t block_size, int64_t max_context, int64_t max_blocks, float scale,
                                         hipStream_t stream) {
    if (num_seqs <= 0 || q_heads <= 0 || head_dim <= 0) return (int)hipSuccess;
    if (kv_heads <= 0 || q_heads % kv_heads != 0 || q_heads / kv_heads > PK_MAX_G || head_dim % 8 != 0 ||
        head_dim > PK_MAX_DIM || num_seqs > 65535 || kv_heads > 65535)
        return (int)hipErrorInvalidValue;
    if (reinterpret_cast<uintptr_t>(k_cache) % 16 != 0 || reinterpret_cast<uintptr_t>(v_cache) % 16 != 0)
        return (int)hipErrorInvalidValue;
    const int64_t max_parts = (max_context + PK_PART - 1) / PK_PART;
    const size_t acc_floats = (size_t)(num_seqs * q_heads * max_parts * head_dim);
    const size_t need = (acc_floats + (size_t)(num_seqs * q_heads * max_parts * 2)) * sizeof(float);
    if (need > g_pk_ws_bytes) {
        if (g_pk_ws != nullptr) {
            (void)hipFree(g_pk_ws);  // synchronises the device: no kernel still uses it
            g_pk_ws = nullptr;
            g_pk_ws_bytes = 0;
        }
        const hipError_t e = hipMalloc((void**)&g_pk_ws, need);
        if (e != hipSuccess) {
            g_pk_ws = nullptr;
            return (int)e;
        }
        g_pk_ws_bytes = need;
    }
    float* ws_acc = g_pk_ws;
    float* ws_ml = g_pk_ws + acc_floats;
    const dim3 grid1((unsigned int)num_seqs, (unsigned int)kv_heads, (unsigned int)max_parts);
    hipLaunchKernelGGL(paged_attn_partition_kernel, grid1, dim3(PK_THREADS), 0, stream, q, k_cache, v_cache,
                       block_tables, context_lens, ws_acc, ws_ml, q_heads, kv_heads, head_dim, block_size, max_blocks,
                       max_parts, scale);
    hipLaunchKernelGGL(paged_attn_combine_kernel, dim3((unsigned int)(num_seqs * q_heads)), dim3(PK_MAX_DIM), 0,
                       stream, ws_acc, ws_ml, context_lens, out, q_heads, head_dim, max_parts);
    return (int)hipGetLastError();
}

// Single-query (decode) attention over a KV cache, GQA, fp16: a general, portable
// solution (split-KV, "flash-decoding").
//
// * Split-KV: the keys of each (sequence, KV head) are cut into `splits` chunks (grid x),
//   so that ~8 blocks per SM run even for one sequence; a second kernel merges the
//   chunks' partial results (running max m, sum l and the normalised output row) with
//   the usual log-sum-exp rescaling. With enough (sequence, head) pairs to fill the GPU,
//   one chunk is used and the first kernel writes the output directly.
// * One block serves all the query heads of a GQA group (up to 4 at a time, more groups in
//   grid y): the K and V rows are read from memory once for the whole group, not once per
//   query head.
// * Warp-level dot products: a key row of head_dim halves is split over LPK lanes (8, 16
//   or 32: 8 halves, one 16-byte load per lane), so a warp of warpSize lanes (32 or 64)
//   handles warpSize / LPK keys at once; the partial dot products are summed with
//   __shfl_xor inside the LPK-lane group (offsets < LPK, so the same code works for both
//   warp sizes). Each lane group keeps its own online softmax (running max, sum and 8
//   output elements per head, rescaled only when the max grows); the groups of a warp
//   are merged with shuffles at the end, the warps of a block through shared memory.
// * Two key slots are loaded per lane before any is used (4 independent 16-byte loads in
//   flight), scores are kept in the log2 domain (q pre-scaled by scale * log2(e); exp2).
// * The partial results live in a static device buffer (no allocation per call); the
//   number of chunks is capped so that they fit. Shapes the fast path does not cover
//   (head_dim not a multiple of 8 or above 256, unaligned pointers) take a plain
//   block-per-head kernel.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define AD_THREADS 128
#define AD_MAX_WARPS 4                // warps of a block with 32-lane warps (2 with 64 lanes)
#define AD_GB_MAX 4                   // query heads per block
#define AD_DMAX 256                   // largest head_dim of the fast path
#define AD_MIN_CHUNK 128              // keys per chunk, at least
#define AD_MAX_SPLITS 256
#define AD_BLOCKS_PER_SM 8
#define AD_SCRATCH_FLOATS (4 << 20)   // 16 MB for the partial results
#define AD_LOG2E 1.4426950408889634f

__device__ float ad_scratch[AD_SCRATCH_FLOATS];

static __device__ __forceinline__ void ad_unpack8(const uint4& u, float* f) {
    const unsigned int w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __half2float(__ushort_as_half((unsigned short)(w[i] & 0xffffu)));
        f[2 * i + 1] = __half2float(__ushort_as_half((unsigned short)(w[i] >> 16)));
    }
}

// Record layout in ad_scratch for S = splits: acc[(bh * S + s) * head_dim + d] (the
// chunk's normalised output), then at offset pairs * S * head_dim: ml[(bh * S + s) * 2 +
// {0, 1}] = (max, sum) of the chunk, in the log2 domain.
template <int LPK, int GB>
__global__ void __launch_bounds__(AD_THREADS)
attention_split_kernel(const __half* __restrict__ q, const __half* __restrict__ k_cache,
                       const __half* __restrict__ v_cache, __half* __restrict__ out, int heads, int kv_heads,
                       int64_t kv_len, int head_dim, int group, int zgroups, int splits, int64_t chunk,
                       float qscale, int64_t ml_offset) {
    __shared__ float sm_acc[AD_MAX_WARPS][GB][AD_DMAX];
    __shared__ float sm_m[AD_MAX_WARPS][GB];
    __shared__ float sm_l[AD_MAX_WARPS][GB];

    const int s = blockIdx.x;
    const int z = blockIdx.y % zgroups;
    const int64_t bk = blockIdx.y / zgroups;  // b * kv_heads + kv head
    const int64_t b = bk / kv_heads;
    const int kvh = (int)(bk % kv_heads);
    const int h0 = kvh * group + z * GB;       // first query head of this block
    const int gcount = min(GB, group - z * GB);

    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    const int sub = lane % LPK;  // position inside the lane group of a key
    const int grp = lane / LPK;  // which key of the warp
    const int kpw = warpSize / LPK;
    const bool dim_ok = sub * 8 < head_dim;

    float qv[GB][8];
#pragma unroll
    for (int g = 0; g < GB; ++g) {
        if (g < gcount && dim_ok) {
            const uint4 u = *reinterpret_cast<const uint4*>(q + (b * heads + h0 + g) * head_dim + sub * 8);
            ad_unpack8(u, qv[g]);
#pragma unroll
            for (int i = 0; i < 8; ++i) qv[g][i] *= qscale;
        } else {
#pragma unroll
            for (int i = 0; i < 8; ++i) qv[g][i] = 0.0f;
        }
    }
    float m[GB], l[GB], acc[GB][8];
#pragma unroll
    for (int g = 0; g < GB; ++g) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[g][i] = 0.0f;
    }

    const int64_t kbeg = (int64_t)s * chunk;
    const int64_t kend = min(kv_len, kbeg + chunk);
    const __half* kb = k_cache + bk * kv_len * head_dim + sub * 8;
    const __half* vb = v_cache + bk * kv_len * head_dim + sub * 8;
    const int64_t step = (int64_t)nwarps * kpw;
    // The loop bounds depend on the warp only: whole warps reach the shuffles.
    for (int64_t key0 = kbeg + (int64_t)warp * kpw; key0 < kend; key0 += 2 * step) {
        uint4 ku[2], vu[2];
        bool kok[2];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
            const int64_t key = key0 + u * step + grp;
            kok[u] = key < kend;
            ku[u] = make_uint4(0u, 0u, 0u, 0u);
            vu[u] = make_uint4(0u, 0u, 0u, 0u);
            if (kok[u] && dim_ok) {
                ku[u] = *reinterpret_cast<const uint4*>(kb + key * head_dim);
                vu[u] = *reinterpret_cast<const uint4*>(vb + key * head_dim);
            }
        }
#pragma unroll
        for (int u = 0; u < 2; ++u) {
            float kf[8];
            ad_unpack8(ku[u], kf);
            float sc[GB];
#pragma unroll
            for (int g = 0; g < GB; ++g) {
                float d = 0.0f;
#pragma unroll
                for (int i = 0; i < 8; ++i) d = fmaf(qv[g][i], kf[i], d);
#pragma unroll
                for (int off = LPK / 2; off > 0; off /= 2) d += __shfl_xor(d, off);
                sc[g] = d;
            }
            if (kok[u]) {
                float vf[8];
                ad_unpack8(vu[u], vf);
#pragma unroll
                for (int g = 0; g < GB; ++g) {
                    if (sc[g] > m[g]) {  // new max: rescale (exp2(-inf) = 0 on the first key)
                        const float c = exp2f(m[g] - sc[g]);
                        l[g] *= c;
#pragma unroll
                        for (int i = 0; i < 8; ++i) acc[g][i] *= c;
                        m[g] = sc[g];
                    }
                    const float p = exp2f(sc[g] - m[g]);
                    l[g] += p;
#pragma unroll
                    for (int i = 0; i < 8; ++i) acc[g][i] = fmaf(p, vf[i], acc[g][i]);
                }
            }
        }
    }

    // Merge the warp's lane groups (lanes LPK, 2 * LPK, ... apart).
    for (int off = LPK; off < warpSize; off *= 2) {
#pragma unroll
        for (int g = 0; g < GB; ++g) {
            const float om = __shfl_xor(m[g], off);
            const float ol = __shfl_xor(l[g], off);
            float oa[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) oa[i] = __shfl_xor(acc[g][i], off);
            const float mm = fmaxf(m[g], om);
            if (mm != -INFINITY) {
                const float ca = exp2f(m[g] - mm);
                const float cb = exp2f(om - mm);
                l[g] = l[g] * ca + ol * cb;
#pragma unroll
                for (int i = 0; i < 8; ++i) acc[g][i] = acc[g][i] * ca + oa[i] * cb;
                m[g] = mm;
            }
        }
    }
    if (grp == 0 && dim_ok) {
#pragma unroll
        for (int g = 0; g < GB; ++g)
#pragma unroll
            for (int i = 0; i < 8; ++i) sm_acc[warp][g][sub * 8 + i] = acc[g][i];
    }
    if (lane == 0) {
#pragma unroll
        for (int g = 0; g < GB; ++g) {
            sm_m[warp][g] = m[g];
            sm_l[warp][g] = l[g];
        }
    }
    __syncthreads();

    // Merge the warps; every chunk holds at least one key, so the max is finite.
    for (int idx = threadIdx.x; idx < gcount * head_dim; idx += blockDim.x) {
        const int g = idx / head_dim;
        const int d = idx - g * head_dim;
        float mm = -INFINITY;
        for (int w = 0; w < nwarps; ++w) mm = fmaxf(mm, sm_m[w][g]);
        float lsum = 0.0f, a = 0.0f;
        for (int w = 0; w < nwarps; ++w) {
            if (sm_m[w][g] != -INFINITY) {
                const float c = exp2f(sm_m[w][g] - mm);
                lsum += sm_l[w][g] * c;
                a += sm_acc[w][g][d] * c;
            }
        }
        const int64_t bh = b * heads + h0 + g;
        if (splits == 1) {
            out[bh * head_dim + d] = __float2half_rn(a / lsum);
        } else {
            const int64_t rec = bh * splits + s;
            ad_scratch[rec * head_dim + d] = a / lsum;
            if (d == 0) {
                ad_scratch[ml_offset + rec * 2] = mm;
                ad_scratch[ml_offset + rec * 2 + 1] = lsum;
            }
        }
    }
}

// One block per (sequence, query head): merges the splits' partial results.
__global__ void __launch_bounds__(AD_THREADS)
attention_combine_kernel(__half* __restrict__ out, int splits, int head_dim, int64_t ml_offset) {
    __shared__ float weight[AD_MAX_SPLITS];
    __shared__ float total;
    const int64_t bh = blockIdx.x;
    const float* ml = ad_scratch + ml_offset + bh * splits * 2;
    float mm = -INFINITY;
    for (int s = 0; s < splits; ++s) mm = fmaxf(mm, ml[2 * s]);
    for (int s = threadIdx.x; s < splits; s += blockDim.x) weight[s] = ml[2 * s + 1] * exp2f(ml[2 * s] - mm);
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int s = 0; s < splits; ++s) t += weight[s];
        total = t;
    }
    __syncthreads();
    const float inv = 1.0f / total;
    const float* acc = ad_scratch + bh * splits * head_dim;
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float a = 0.0f;
        for (int s = 0; s < splits; ++s) a = fmaf(weight[s], acc[(int64_t)s * head_dim + d], a);
        out[bh * head_dim + d] = __float2half_rn(a * inv);
    }
}

// Fallback for shapes outside the fast path: one block per (sequence, query head), a
// serial loop over the keys (block size a multiple of 64, extra threads hold zeros).
__global__ void attention_fallback_kernel(const __half* __restrict__ q, const __half* __restrict__ k_cache,
                                          const __half* __restrict__ v_cache, __half* __restrict__ out,
                                          int64_t heads, int64_t kv_heads, int64_t kv_len, int64_t head_dim,
                                          float scale) {
    __shared__ float partial[2][32];
    const int64_t bh = blockIdx.x;
    const int64_t b = bh / heads;
    const int64_t kvh = (bh % heads) / (heads / kv_heads);
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    const __half* kb = k_cache + (b * kv_heads + kvh) * kv_len * head_dim;
    const __half* vb = v_cache + (b * kv_heads + kvh) * kv_len * head_dim;
    float m = -INFINITY, l = 0.0f;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // dims threadIdx.x + i * blockDim.x (head_dim <= 4 * blockDim.x)
    float qd[4];
    for (int i = 0; i < 4; ++i) {
        const int64_t d = threadIdx.x + (int64_t)i * blockDim.x;
        qd[i] = d < head_dim ? __half2float(q[bh * head_dim + d]) * scale : 0.0f;
    }
    for (int64_t j = 0; j < kv_len; ++j) {
        float sdot = 0.0f;
        for (int i = 0; i < 4; ++i) {
            const int64_t d = threadIdx.x + (int64_t)i * blockDim.x;
            if (d < head_dim) sdot += qd[i] * __half2float(kb[j * head_dim + d]);
        }
        for (int off = warpSize / 2; off > 0; off /= 2) sdot += __shfl_xor(sdot, off);
        if (lane == 0) partial[j & 1][warp] = sdot;
        __syncthreads();  // one barrier per key: partial is double-buffered
        float sc = 0.0f;
        for (int w = 0; w < nwarps; ++w) sc += partial[j & 1][w];
        const float mn = fmaxf(m, sc);
        const float c = expf(m - mn);
        const float p = expf(sc - mn);
        l = l * c + p;
        for (int i = 0; i < 4; ++i) {
            const int64_t d = threadIdx.x + (int64_t)i * blockDim.x;
            const float vd = d < head_dim ? __half2float(vb[j * head_dim + d]) : 0.0f;
            acc[i] = acc[i] * c + p * vd;
        }
        m = mn;
    }
    for (int i = 0; i < 4; ++i) {
        const int64_t d = threadIdx.x + (int64_t)i * blockDim.x;
        if (d < head_dim) out[bh * head_dim + d] = __float2half_rn(acc[i] / l);
    }
}

static int ad_sm_count() {
    static int cached = 0;
    if (cached == 0) {
        int dev = 0;
        int n = 0;
        if (hipGetDevice(&dev) != hipSuccess ||
            hipDeviceGetAttribute(&n, hipDeviceAttributeMultiprocessorCount, dev) != hipSuccess || n <= 0)
            n = 128;
        cached = n;
    }
    return cached;
}

template <int LPK, int GB>
static void ad_launch_split(dim3 grid, const __half* q, const __half* k, const __half* v, __half* out, int heads,
                            int kv_heads, int64_t kv_len, int head_dim, int group, int zgroups, int splits,
                            int64_t chunk, float qscale, int64_t ml_offset, hipStream_t stream) {
    hipLaunchKernelGGL((attention_split_kernel<LPK, GB>), grid, dim3(AD_THREADS), 0, stream, q, k, v, out, heads,
                       kv_heads, kv_len, head_dim, group, zgroups, splits, chunk, qscale, ml_offset);
}

template <int LPK>
static void ad_launch_gb(int gb, dim3 grid, const __half* q, const __half* k, const __half* v, __half* out, int heads,
                         int kv_heads, int64_t kv_len, int head_dim, int group, int zgroups, int splits,
                         int64_t chunk, float qscale, int64_t ml_offset, hipStream_t stream) {
    if (gb == 1)
        ad_launch_split<LPK, 1>(grid, q, k, v, out, heads, kv_heads, kv_len, head_dim, group, zgroups, splits, chunk,
                                qscale, ml_offset, stream);
    else if (gb == 2)
        ad_launch_split<LPK, 2>(grid, q, k, v, out, heads, kv_heads, kv_len, head_dim, group, zgroups, splits, chunk,
                                qscale, ml_offset, stream);
    else
        ad_launch_split<LPK, 4>(grid, q, k, v, out, heads, kv_heads, kv_len, head_dim, group, zgroups, splits, chunk,
                                qscale, ml_offset, stream);
}

extern "C" int attention_decode(const __half* q, const __half* k_cache, const __half* v_cache, __half* out,
                                int64_t batch, int64_t heads, int64_t kv_heads, int64_t kv_len, int64_t head_dim,
                                float scale, hipStream_t stream) {
    const int64_t pairs = batch * heads;
    if (pairs <= 0 || head_dim <= 0 || kv_len <= 0) return (int)hipSuccess;
    const bool aligned = (reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(k_cache) |
                          reinterpret_cast<uintptr_t>(v_cache)) % 16 == 0;
    if (!aligned || head_dim % 8 != 0 || head_dim > AD_DMAX || kv_heads <= 0 || heads % kv_heads != 0) {
        const int64_t threads = head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : 256;  // head_dim <= 4 * threads
        if (head_dim > 4 * 256) return (int)hipErrorInvalidValue;
        hipLaunchKernelGGL(attention_fallback_kernel, dim3((unsigned int)pairs), dim3((unsigned int)threads), 0,
                           stream, q, k_cache, v_cache, out, heads, kv_heads, kv_len, head_dim, scale);
        return (int)hipGetLastError();
    }
    const int group = (int)(heads / kv_heads);
    const int gb = group >= 3 ? 4 : group;  // query heads per block
    const int zgroups = (group + gb - 1) / gb;
    const int lpk = head_dim <= 64 ? 8 : head_dim <= 128 ? 16 : 32;
    const int64_t base = batch * kv_heads * zgroups;  // blocks per split

    // Chunks: enough blocks for ~8 per SM, at least AD_MIN_CHUNK keys each, results fitting
    // the scratch buffer.
    const int64_t target = (int64_t)ad_sm_count() * AD_BLOCKS_PER_SM;
    int64_t splits = (target + base - 1) / base;
    const int64_t by_len = (kv_len + AD_MIN_CHUNK - 1) / AD_MIN_CHUNK;
    if (splits > by_len) splits = by_len;
    if (splits > AD_MAX_SPLITS) splits = AD_MAX_SPLITS;
    const int64_t fit = AD_SCRATCH_FLOATS / (pairs * (head_dim + 2));
    if (splits > fit) splits = fit;
    if (splits < 1) splits = 1;
    const int64_t chunk = (kv_len + splits - 1) / splits;
    splits = (kv_len + chunk - 1) / chunk;  // every chunk non-empty
    const int64_t ml_offset = pairs * splits * head_dim;

    const dim3 grid((unsigned int)splits, (unsigned int)(base));
    const float qscale = scale * AD_LOG2E;
    if (lpk == 8)
        ad_launch_gb<8>(gb, grid, q, k_cache, v_cache, out, (int)heads, (int)kv_heads, kv_len, (int)head_dim, group,
                        zgroups, (int)splits, chunk, qscale, ml_offset, stream);
    else if (lpk == 16)
        ad_launch_gb<16>(gb, grid, q, k_cache, v_cache, out, (int)heads, (int)kv_heads, kv_len, (int)head_dim, group,
                         zgroups, (int)splits, chunk, qscale, ml_offset, stream);
    else
        ad_launch_gb<32>(gb, grid, q, k_cache, v_cache, out, (int)heads, (int)kv_heads, kv_len, (int)head_dim, group,
                         zgroups, (int)splits, chunk, qscale, ml_offset, stream);
    if (splits > 1)
        hipLaunchKernelGGL(attention_combine_kernel, dim3((unsigned int)pairs), dim3(AD_THREADS), 0, stream, out,
                           (int)splits, (int)head_dim, ml_offset);
    return (int)hipGetLastError();
}

// Per-head RMSNorm of the query and key heads of a packed QKV tensor, fp16: a general,
// portable solution.
//
// * A group of L lanes per head row, L = the power of two >= head_dim / V (at most a
//   warp), so one warp normalises warpSize / L heads at once (2 heads of 128 with 32-lane
//   warps), reading consecutive heads: the warp's accesses are contiguous.
// * Vector width by shape and alignment: 8 halves (16-byte uint4) when head_dim % 8 == 0
//   and all pointers are 16-byte aligned; 2 halves when head_dim is even; else scalar.
// * The head is read once: its vectors stay in registers between the sum of squares
//   (reduced with xor shuffles inside the lane group) and the write.
// * The row loop runs per warp (uniform trip count), so every lane reaches the shuffles.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define QKN_THREADS 256
#define QKN_MAX_GRID 2147483647LL

static __device__ __forceinline__ void qkn_unpack2(unsigned int bits, float* f) {
    f[0] = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    f[1] = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}
static __device__ __forceinline__ unsigned int qkn_pack2(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

template <int V>
static __device__ __forceinline__ void qkn_load(const __half* __restrict__ p, int64_t i, float* f) {
    if constexpr (V == 8) {
        const uint4 u = reinterpret_cast<const uint4*>(p)[i];
        qkn_unpack2(u.x, f);
        qkn_unpack2(u.y, f + 2);
        qkn_unpack2(u.z, f + 4);
        qkn_unpack2(u.w, f + 6);
    } else if constexpr (V == 2) {
        qkn_unpack2(reinterpret_cast<const unsigned int*>(p)[i], f);
    } else {
        f[0] = __half2float(p[i]);
    }
}
template <int V>
static __device__ __forceinline__ void qkn_store(__half* __restrict__ p, int64_t i, const float* f) {
    if constexpr (V == 8) {
        uint4 u;
        u.x = qkn_pack2(f[0], f[1]);
        u.y = qkn_pack2(f[2], f[3]);
        u.z = qkn_pack2(f[4], f[5]);
        u.w = qkn_pack2(f[6], f[7]);
        reinterpret_cast<uint4*>(p)[i] = u;
    } else if constexpr (V == 2) {
        reinterpret_cast<unsigned int*>(p)[i] = qkn_pack2(f[0], f[1]);
    } else {
        p[i] = __float2half_rn(f[0]);
    }
}

// Requires head_dim % V == 0 and the matching alignment of every pointer.
template <int V, int MAXV>
__global__ void __launch_bounds__(QKN_THREADS)
qk_rms_norm_heads_kernel(const __half* __restrict__ qkv, const __half* __restrict__ q_weight,
                         const __half* __restrict__ k_weight, __half* __restrict__ q, __half* __restrict__ k,
                         int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim, float eps) {
    const int64_t nvec = head_dim / V;
    int L = 1;  // lanes per head row: a power of two, at most a warp
    while (L < nvec && L < warpSize) L *= 2;
    const int groups_per_warp = warpSize / L;
    const int lane = threadIdx.x % warpSize;
    const int g = lane / L;
    const int t = lane % L;
    const int64_t warp_id = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    const int64_t total_warps = (int64_t)gridDim.x * (blockDim.x / warpSize);
    const int64_t heads = q_heads + kv_heads;
    const int64_t rows = tokens * heads;
    const int64_t qkv_stride = (q_heads + 2 * kv_heads) * head_dim;
    const float inv_hd = 1.0f / (float)head_dim;

    // base is the same for the whole warp: every lane runs the same iterations and shuffles.
    for (int64_t base = warp_id * groups_per_warp; base < rows; base += total_warps * groups_per_warp) {
        const int64_t row = base + g;
        const bool valid = row < rows;
        const int64_t tok = valid ? row / heads : 0;
        const int64_t h = valid ? row % heads : 0;
        const __half* src = qkv + tok * qkv_stride + h * head_dim;
        __half* dst;
        const __half* w;
        if (h < q_heads) {
            dst = q + (tok * q_heads + h) * head_dim;
            w = q_weight;
        } else {
            dst = k + (tok * kv_heads + (h - q_heads)) * head_dim;
            w = k_weight;
        }
        float cache[MAXV][V];
        float sum_sq = 0.0f;
#pragma unroll
        for (int m = 0; m < MAXV; ++m) {
            const int64_t i = t + (int64_t)m * L;
            if (valid && i < nvec) {
                qkn_load<V>(src, i, cache[m]);
#pragma unroll
                for (int e = 0; e < V; ++e) sum_sq += cache[m][e] * cache[m][e];
            }
        }
        for (int64_t i = t + (int64_t)MAXV * L; valid && i < nvec; i += L) {
            float f[V];
            qkn_load<V>(src, i, f);
#pragma unroll
            for (int e = 0; e < V; ++e) sum_sq += f[e] * f[e];
        }
        // xor offsets below L stay inside the aligned group of L lanes.
        for (int offset = L / 2; offset > 0; offset /= 2) sum_sq += __shfl_xor(sum_sq, offset);
        const float inv_rms = rsqrtf(sum_sq * inv_hd + eps);
#pragma unroll
        for (int m = 0; m < MAXV; ++m) {
            const int64_t i = t + (int64_t)m * L;
            if (valid && i < nvec) {
                float wv[V];
                qkn_load<V>(w, i, wv);
#pragma unroll
                for (int e = 0; e < V; ++e) wv[e] = cache[m][e] * inv_rms * wv[e];
                qkn_store<V>(dst, i, wv);
            }
        }
        for (int64_t i = t + (int64_t)MAXV * L; valid && i < nvec; i += L) {
            float f[V], wv[V];
            qkn_load<V>(src, i, f);
            qkn_load<V>(w, i, wv);
#pragma unroll
            for (int e = 0; e < V; ++e) f[e] = f[e] * inv_rms * wv[e];
            qkn_store<V>(dst, i, f);
        }
    }
}

template <int V>
static void qkn_launch(const __half* qkv, const __half* q_weight, const __half* k_weight, __half* q, __half* k,
                       int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim, float eps,
                       hipStream_t stream) {
    constexpr int MAXV = V == 8 ? 2 : 4;
    const int64_t nvec = head_dim / V;
    // Grid sized for 32-lane warps; with 64-lane warps the grid-stride loop covers the rest.
    int64_t lanes = 1;
    while (lanes < nvec && lanes < 32) lanes *= 2;
    const int64_t rows = tokens * (q_heads + kv_heads);
    const int64_t rows_per_block = (QKN_THREADS / 32) * (32 / lanes);
    int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
    if (blocks > QKN_MAX_GRID) blocks = QKN_MAX_GRID;
    hipLaunchKernelGGL((qk_rms_norm_heads_kernel<V, MAXV>), dim3((unsigned int)blocks), dim3(QKN_THREADS), 0, stream,
                       qkv, q_weight, k_weight, q, k, tokens, q_heads, kv_heads, head_dim, eps);
}

extern "C" int qk_rms_norm_heads(const __half* qkv, const __half* q_weight, const __half* k_weight, __half* q,
                                 __half* k, int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                 float eps, hipStream_t stream) {
    if (tokens * (q_heads + kv_heads) <= 0 || head_dim <= 0) return (int)hipSuccess;
    const uintptr_t any = reinterpret_cast<uintptr_t>(qkv) | reinterpret_cast<uintptr_t>(q_weight) |
                          reinterpret_cast<uintptr_t>(k_weight) | reinterpret_cast<uintptr_t>(q) |
                          reinterpret_cast<uintptr_t>(k);
    if (head_dim % 8 == 0 && any % 16 == 0)
        qkn_launch<8>(qkv, q_weight, k_weight, q, k, tokens, q_heads, kv_heads, head_dim, eps, stream);
    else if (head_dim % 2 == 0 && any % 4 == 0)
        qkn_launch<2>(qkv, q_weight, k_weight, q, k, tokens, q_heads, kv_heads, head_dim, eps, stream);
    else
        qkn_launch<1>(qkv, q_weight, k_weight, q, k, tokens, q_heads, kv_heads, head_dim, eps, stream);
    return (int)hipGetLastError();
}

// GroupNorm over NCHW, 32 groups, with affine, fp32: a general, portable solution.
//
// A (sample, group) is a contiguous run of (channels / groups) * height * width values, and
// there are only batch * 32 of them, so one block per group leaves most of the GPU idle.
// Two kernels instead:
// 1. Statistics: each group is split into S chunks (about 1024 blocks in all, chunks of at
//    least 4096 values); a 256-thread block sums (x - K) and (x - K)^2 over its chunk in
//    fp32, where K = the mean of the group's first 32 values (a shift that keeps the
//    one-pass variance well conditioned, computed identically by every block), with 16-byte loads (scalar head up to the first 16-byte boundary,
//    float4 body with four loads in flight, scalar tail: any size and alignment), a
//    __shfl_xor butterfly over warpSize lanes and shared memory across warps. The S pairs
//    go to a static device buffer (no allocation per call).
// 2. Normalisation: one block per contiguous chunk of a group (at most 8192 values, fewer
//    so that there are about 1024 blocks, equal sizes), spanning as many channel planes as
//    it covers: a block per plane would leave small planes (24x24 = 576 values) with a
//    block each that mostly waits on its prologue. One warp merges the group's S pairs and
//    folds mean, rstd, weight and bias into a scale and shift per channel of the chunk (in
//    shared memory); y = x * scale + shift with float4 loads and stores (same head / body /
//    tail split), the channel of each float4 found with one 32-bit division (a float4
//    straddles at most one plane boundary). Blocks run in reverse order, so the first ones
//    read what the statistics pass read last, which is still in L2.
// x is read twice and y written once (the starting kernel reads x three times). x and y on
// different 16-byte phases (never the harness's case) take a scalar block-per-plane kernel.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define GN_THREADS 256
#define GN_MAX_WARPS 32            // 1024 threads / 32 lanes
#define GN_MAX_PARTIALS 65536      // batch * groups * S
#define GN_MIN_CHUNK 4096          // values per statistics block at least
#define GN_TARGET_BLOCKS 1024
#define GN_APPLY_CHUNK 8192        // values per normalisation block at most
#define GN_APPLY_MIN_CHUNK 2048    // ... and at least, when splitting further for more blocks
#define GN_APPLY_MIN_BLOCKS 1024   // about 8 resident 256-thread blocks on each of 132 SMs
#define GN_MAX_CPG 256             // channels per group of the fast normalisation kernel
#define GN_MAX_GRID 2147483647LL

__device__ float2 gn_partials[GN_MAX_PARTIALS];

static __device__ __forceinline__ float gn_warp_sum(float v) {
    for (int off = warpSize / 2; off > 0; off /= 2) v += __shfl_xor(v, off);
    return v;
}

// K: the mean of the group's first min(32, gs) values. Called by all lanes of one warp;
// every lane gets the same value, computed the same way by every block of both kernels.
static __device__ __forceinline__ float gn_shift(const float* __restrict__ xg, int64_t gs, int lane) {
    const int64_t n = gs < 32 ? gs : 32;
    const float v = lane < n ? xg[lane] : 0.0f;
    return gn_warp_sum(v) / (float)n;
}

// Merges the group's chunk sums into y = x * scale + shift coefficients. Called by all
// lanes of one warp; lane 0 writes coef[0..1].
static __device__ __forceinline__ void gn_coefs(const float* __restrict__ xg, const float* __restrict__ weight,
                                                const float* __restrict__ bias, int64_t ng, int64_t ch, int64_t gs,
                                                int64_t nchunks, float eps, int lane, float* coef) {
    float a = 0.0f, b = 0.0f;
    for (int64_t c = lane; c < nchunks; c += warpSize) {
        const float2 q = gn_partials[ng * nchunks + c];
        a += q.x;
        b += q.y;
    }
    a = gn_warp_sum(a);
    b = gn_warp_sum(b);
    const float k0 = gn_shift(xg, gs, lane);
    if (lane == 0) {
        const float inv = 1.0f / (float)gs;
        const float dm = a * inv;  // mean - K
        const float var = fmaxf(b * inv - dm * dm, 0.0f);
        const float scale = (1.0f / sqrtf(var + eps)) * weight[ch];
        coef[0] = scale;
        coef[1] = bias[ch] - (k0 + dm) * scale;
    }
}

// The run p[0 .. len): a scalar head up to the first 16-byte boundary, float4 body, scalar tail.
struct GnSplit {
    int64_t head;
    int64_t nvec;
};
static __device__ __forceinline__ GnSplit gn_split(const float* p, int64_t len) {
    GnSplit sp;
    const int64_t past = (int64_t)((reinterpret_cast<uintptr_t>(p) / sizeof(float)) % 4);
    sp.head = past == 0 ? 0 : 4 - past;
    if (sp.head > len) sp.head = len;
    sp.nvec = (len - sp.head) / 4;
    return sp;
}

__global__ void __launch_bounds__(GN_THREADS)
group_norm_stats_kernel(const float* __restrict__ x, int64_t ngroups_total, int64_t gs, int64_t nchunks,
                        int64_t chunk) {
    __shared__ float red1[GN_MAX_WARPS];
    __shared__ float red2[GN_MAX_WARPS];
    __shared__ float shift_k;
    const int t = threadIdx.x;
    const int nt = blockDim.x;
    const int lane = t % warpSize;
    const int warp = t / warpSize;
    const int nwarps = nt / warpSize;
    for (int64_t blk = blockIdx.x; blk < ngroups_total * nchunks; blk += gridDim.x) {
        const int64_t ng = blk / nchunks;
        const int64_t c = blk % nchunks;
        const float* __restrict__ xg = x + ng * gs;
        if (warp == 0) {
            const float k = gn_shift(xg, gs, lane);
            if (lane == 0) shift_k = k;
        }
        __syncthreads();
        const float k0 = shift_k;
        const int64_t begin = c * chunk;
        const int64_t end = begin + chunk < gs ? begin + chunk : gs;
        const int64_t len = end > begin ? end - begin : 0;
        const float* __restrict__ p = xg + begin;
        const GnSplit sp = gn_split(p, len);

        float s1 = 0.0f, s2 = 0.0f;
        for (int64_t j = t; j < sp.head; j += nt) {
            const float d = p[j] - k0;
            s1 += d;
            s2 = fmaf(d, d, s2);
        }
        const float4* __restrict__ pv = reinterpret_cast<const float4*>(p + sp.head);
        int64_t i = t;
        for (; i + 3 * nt < sp.nvec; i += 4 * nt) {
            float4 v[4] = {pv[i], pv[i + nt], pv[i + 2 * nt], pv[i + 3 * nt]};
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const float a = v[u].x - k0, b = v[u].y - k0, cc = v[u].z - k0, d = v[u].w - k0;
                s1 += (a + b) + (cc + d);
                s2 = fmaf(a, a, s2);
                s2 = fmaf(b, b, s2);
                s2 = fmaf(cc, cc, s2);
                s2 = fmaf(d, d, s2);
            }
        }
        for (; i < sp.nvec; i += nt) {
            const float4 v = pv[i];
            const float a = v.x - k0, b = v.y - k0, cc = v.z - k0, d = v.w - k0;
            s1 += (a + b) + (cc + d);
            s2 = fmaf(a, a, s2);
            s2 = fmaf(b, b, s2);
            s2 = fmaf(cc, cc, s2);
            s2 = fmaf(d, d, s2);
        }
        for (int64_t j = sp.head + 4 * sp.nvec + t; j < len; j += nt) {
            const float d = p[j] - k0;
            s1 += d;
            s2 = fmaf(d, d, s2);
        }

        s1 = gn_warp_sum(s1);
        s2 = gn_warp_sum(s2);
        if (lane == 0) {
            red1[warp] = s1;
            red2[warp] = s2;
        }
        __syncthreads();
        if (t == 0) {
            float a = 0.0f, b = 0.0f;
            for (int w = 0; w < nwarps; ++w) {
                a += red1[w];
                b += red2[w];
            }
            gn_partials[blk] = make_float2(a, b);
        }
        __syncthreads();  // red* are reused by the next chunk
    }
}

// Merges the group's chunk sums and writes, for the nspan channels lc0 .. lc0 + nspan - 1
// of the group (local indices), sc[k] = rstd * weight and sh[k] = bias - mean * sc[k], so
// that y = x * sc[k] + sh[k]. Called by all lanes of one warp; the loads of partials, of
// the shift values and of weight / bias are all issued before the first shuffle (one
// round trip). Each lane only rereads the sc / sh entries it wrote itself.
static __device__ __forceinline__ void gn_range_coefs(const float* __restrict__ xg, const float* __restrict__ weight,
                                                      const float* __restrict__ bias, int64_t ng, int64_t ch0,
                                                      int64_t nspan, int64_t gs, int64_t nchunks, float eps,
                                                      int lane, float* sc, float* sh) {
    float a = 0.0f, b = 0.0f;
    for (int64_t c = lane; c < nchunks; c += warpSize) {
        const float2 q = gn_partials[ng * nchunks + c];
        a += q.x;
        b += q.y;
    }
    for (int64_t k = lane; k < nspan; k += warpSize) {
        sc[k] = weight[ch0 + k];
        sh[k] = bias[ch0 + k];
    }
    a = gn_warp_sum(a);
    b = gn_warp_sum(b);
    const float k0 = gn_shift(xg, gs, lane);
    const float inv = 1.0f / (float)gs;
    const float dm = a * inv;  // mean - K
    const float var = fmaxf(b * inv - dm * dm, 0.0f);
    const float rstd = 1.0f / sqrtf(var + eps);
    const float mean = k0 + dm;
    for (int64_t k = lane; k < nspan; k += warpSize) {
        const float s = rstd * sc[k];
        sc[k] = s;
        sh[k] = sh[k] - mean * s;
    }
}

// Normalisation: one block per contiguous chunk of achunk values of one group (chunks may
// span several channel planes, so small planes such as 24x24 do not cost a block each).
// The element at offset e of its group belongs to the group's channel e / hw; a float4
// (hw >= 16 > 4) straddles at most one plane boundary, so one 32-bit division per float4
// gives the channel k of its first value and the rest use k or k + 1. Blocks run in
// reverse order so the first ones read the data the statistics pass read last (in L2).
__global__ void __launch_bounds__(GN_THREADS)
group_norm_apply_kernel(const float* __restrict__ x, const float* __restrict__ weight, const float* __restrict__ bias,
                        float* __restrict__ y, int64_t ngroups_total, int64_t groups, int64_t cpg, int64_t hw,
                        int64_t gs, int64_t nchunks, int64_t achunk, int64_t anchunks, float eps) {
    __shared__ float sc[GN_MAX_CPG + 1];  // + 1: the k + 1 entry is read (unused) for the last channel
    __shared__ float sh[GN_MAX_CPG + 1];
    const int t = threadIdx.x;
    const int nt = blockDim.x;
    const int64_t nblk = ngroups_total * anchunks;
    const uint32_t uhw = (uint32_t)hw;
    for (int64_t it = blockIdx.x; it < nblk; it += gridDim.x) {
        const int64_t blk = nblk - 1 - it;
        const int64_t ng = blk / anchunks;
        const int64_t c = blk % anchunks;
        const int64_t begin = c * achunk;  // < gs
        const int64_t end = begin + achunk < gs ? begin + achunk : gs;
        const int64_t len = end - begin;  // >= 1
        const int64_t lc0 = begin / hw;   // first channel of the chunk, local to the group
        const int64_t nspan = (end - 1) / hw - lc0 + 1;
        const float* __restrict__ xg = x + ng * gs;
        if (t < warpSize)
            gn_range_coefs(xg, weight, bias, ng, (ng % groups) * cpg + lc0, nspan, gs, nchunks, eps, t, sc, sh);
        __syncthreads();
        const float* __restrict__ p = xg + begin;
        float* __restrict__ q = y + ng * gs + begin;
        const uint32_t ubase = (uint32_t)(begin - lc0 * hw);  // offset of p inside plane lc0, < hw
        // x and y share their offset from a 16-byte boundary (checked on the host)
        const GnSplit sp = gn_split(p, len);
        for (int64_t j = t; j < sp.head; j += nt) {
            const uint32_t k = (ubase + (uint32_t)j) / uhw;
            q[j] = fmaf(p[j], sc[k], sh[k]);
        }
        const float4* __restrict__ pv = reinterpret_cast<const float4*>(p + sp.head);
        float4* __restrict__ qv = reinterpret_cast<float4*>(q + sp.head);
        const uint32_t vbase = ubase + (uint32_t)sp.head;  // plane offset of pv[0].x
        int64_t i = t;
        for (; i + 3 * nt < sp.nvec; i += 4 * nt) {
            float4 v[4] = {pv[i], pv[i + nt], pv[i + 2 * nt], pv[i + 3 * nt]};
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const uint32_t e = vbase + 4u * (uint32_t)(i + u * nt);
                const uint32_t k = e / uhw;
                const uint32_t r = e - k * uhw;  // r + 3 < 2 * hw
                const float s0 = sc[k], h0 = sh[k], s1 = sc[k + 1], h1 = sh[k + 1];
                const bool b1 = r + 1 < uhw, b2 = r + 2 < uhw, b3 = r + 3 < uhw;
                v[u] = make_float4(fmaf(v[u].x, s0, h0), fmaf(v[u].y, b1 ? s0 : s1, b1 ? h0 : h1),
                                   fmaf(v[u].z, b2 ? s0 : s1, b2 ? h0 : h1), fmaf(v[u].w, b3 ? s0 : s1, b3 ? h0 : h1));
            }
            qv[i] = v[0];
            qv[i + nt] = v[1];
            qv[i + 2 * nt] = v[2];
            qv[i + 3 * nt] = v[3];
        }
        for (; i < sp.nvec; i += nt) {
            const float4 v = pv[i];
            const uint32_t e = vbase + 4u * (uint32_t)i;
            const uint32_t k = e / uhw;
            const uint32_t r = e - k * uhw;
            const float s0 = sc[k], h0 = sh[k], s1 = sc[k + 1], h1 = sh[k + 1];
            const bool b1 = r + 1 < uhw, b2 = r + 2 < uhw, b3 = r + 3 < uhw;
            qv[i] = make_float4(fmaf(v.x, s0, h0), fmaf(v.y, b1 ? s0 : s1, b1 ? h0 : h1),
                                fmaf(v.z, b2 ? s0 : s1, b2 ? h0 : h1), fmaf(v.w, b3 ? s0 : s1, b3 ? h0 : h1));
        }
        for (int64_t j = sp.head + 4 * sp.nvec + t; j < len; j += nt) {
            const uint32_t k = (ubase + (uint32_t)j) / uhw;
            q[j] = fmaf(p[j], sc[k], sh[k]);
        }
        __syncthreads();  // sc / sh are rewritten by the next block-iteration
    }
}

// The apply kernel for x and y on different 16-byte phases: one block per plane, scalar.
__global__ void __launch_bounds__(GN_THREADS)
group_norm_apply_scalar_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                               const float* __restrict__ bias, float* __restrict__ y, int64_t planes,
                               int64_t channels, int64_t hw, int64_t cpg, int64_t gs, int64_t nchunks, float eps) {
    __shared__ float coef[2];
    for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
        const int64_t ch = plane % channels;
        const int64_t ng = (plane / channels) * (channels / cpg) + ch / cpg;
        if ((int)threadIdx.x < warpSize) gn_coefs(x + ng * gs, weight, bias, ng, ch, gs, nchunks, eps, threadIdx.x, coef);
        __syncthreads();
        for (int64_t j = threadIdx.x; j < hw; j += blockDim.x) y[plane * hw + j] = fmaf(x[plane * hw + j], coef[0], coef[1]);
        __syncthreads();
    }
}

extern "C" int group_norm(const float* x, const float* weight, const float* bias, float* y, int64_t batch,
                          int64_t channels, int64_t height, int64_t width, int64_t groups, float eps,
                          hipStream_t stream) {
    if (groups <= 0 || channels % groups != 0) return (int)hipErrorInvalidValue;
    const int64_t hw = height * width;
    if (batch <= 0 || channels <= 0 || hw <= 0) return (int)hipSuccess;
    const int64_t ngroups_total = batch * groups;
    if (ngroups_total > GN_MAX_PARTIALS) return (int)hipErrorInvalidValue;
    const int64_t cpg = channels / groups;
    const int64_t gs = cpg * hw;

    int64_t nchunks = (GN_TARGET_BLOCKS + ngroups_total - 1) / ngroups_total;
    const int64_t most = (gs + GN_MIN_CHUNK - 1) / GN_MIN_CHUNK;
    if (nchunks > most) nchunks = most;
    if (nchunks > GN_MAX_PARTIALS / ngroups_total) nchunks = GN_MAX_PARTIALS / ngroups_total;
    if (nchunks < 1) nchunks = 1;
    int64_t chunk = (gs + nchunks - 1) / nchunks;
    chunk = (chunk + 3) / 4 * 4;  // chunks of a group share its 16-byte phase
    nchunks = (gs + chunk - 1) / chunk;

    int64_t blocks = ngroups_total * nchunks;
    if (blocks > GN_MAX_GRID) blocks = GN_MAX_GRID;
    hipLaunchKernelGGL(group_norm_stats_kernel, dim3((unsigned int)blocks), dim3(GN_THREADS), 0, stream, x,
                       ngroups_total, gs, nchunks, chunk);

    const int64_t planes = batch * channels;
    const bool same_phase = reinterpret_cast<uintptr_t>(x) % 16 == reinterpret_cast<uintptr_t>(y) % 16;
    if (same_phase && hw >= 4 && cpg <= GN_MAX_CPG && gs + GN_APPLY_CHUNK < 2147483648LL) {
        // chunks of at most GN_APPLY_CHUNK values; more (down to GN_APPLY_MIN_CHUNK values)
        // while that leaves fewer than GN_APPLY_MIN_BLOCKS blocks; equal sizes, multiples of 4
        int64_t anchunks = (gs + GN_APPLY_CHUNK - 1) / GN_APPLY_CHUNK;
        if (ngroups_total * anchunks < GN_APPLY_MIN_BLOCKS) {
            anchunks = (GN_APPLY_MIN_BLOCKS + ngroups_total - 1) / ngroups_total;
            const int64_t most_a = (gs + GN_APPLY_MIN_CHUNK - 1) / GN_APPLY_MIN_CHUNK;
            if (anchunks > most_a) anchunks = most_a;
        }
        int64_t achunk = (gs + anchunks - 1) / anchunks;
        achunk = (achunk + 3) / 4 * 4;
        anchunks = (gs + achunk - 1) / achunk;
        int64_t ablocks = ngroups_total * anchunks;
        if (ablocks > GN_MAX_GRID) ablocks = GN_MAX_GRID;
        hipLaunchKernelGGL(group_norm_apply_kernel, dim3((unsigned int)ablocks), dim3(GN_THREADS), 0, stream, x,
                           weight, bias, y, ngroups_total, groups, cpg, hw, gs, nchunks, achunk, anchunks, eps);
    } else {
        const int64_t ablocks = planes < GN_MAX_GRID ? planes : GN_MAX_GRID;
        hipLaunchKernelGGL(group_norm_apply_scalar_kernel, dim3((unsigned int)ablocks), dim3(GN_THREADS), 0, stream,
                           x, weight, bias, y, planes, channels, hw, cpg, gs, nchunks, eps);
    }
    return (int)hipGetLastError();
}

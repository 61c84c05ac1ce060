// GroupNorm over NCHW, 32 groups, fp32: a SPECIALISED kernel, tuned on the seen shapes
// and wrong elsewhere.
//
// Deliberately flawed (the harness must catch it). Every seen plane (64x64, 128x128,
// 32x32, 256x256) holds a multiple of 1024 values, so the fast path normalises each plane
// with floor(hw / 1024) blocks of 256 threads, one float4 per thread, and no bounds
// checks; the statistics use 16 equal chunks of floor(gs / 64) * 4 values per group.
// When hw is a multiple of 4 and >= 1024 but not a multiple of 1024 (e.g. 48 x 80 = 3840)
// the last hw % 1024 values of every plane are never written, and a group size that is
// not a multiple of 64 leaves values out of the statistics. Every access stays inside
// the tensors, so it never faults. Other shapes (hw % 4 != 0, hw < 1024, unaligned
// pointers) go to a plain, correct block-per-group kernel.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define SPEC_THREADS 256
#define SPEC_MAX_WARPS 32
#define SPEC_CHUNKS 16
#define SPEC_MAX_GROUPS 4096
#define SPEC_MAX_GRID 2147483647LL

__device__ float2 spec_partials[SPEC_MAX_GROUPS * SPEC_CHUNKS];

static __device__ __forceinline__ float spec_block_sum(float v, float* red) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    for (int off = warpSize / 2; off > 0; off /= 2) v += __shfl_xor(v, off);
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < nwarps; ++w) total += red[w];
    __syncthreads();
    return total;
}

// The mean of a group's first 32 values (gs >= 1024 on the fast path), in a fixed order.
static __device__ __forceinline__ float spec_shift(const float* xg) {
    float k = 0.0f;
    for (int j = 0; j < 32; ++j) k += xg[j];
    return k * (1.0f / 32.0f);
}

// One block per (group, chunk): shifted sums over floor(gs / 64) float4 (the bug: the rest is dropped).
__global__ void spec_stats_kernel(const float* __restrict__ x, int64_t ngroups_total, int64_t gs) {
    __shared__ float red[SPEC_MAX_WARPS];
    const int64_t nv = gs / (4 * SPEC_CHUNKS);  // float4 per chunk
    for (int64_t blk = blockIdx.x; blk < ngroups_total * SPEC_CHUNKS; blk += gridDim.x) {
        const int64_t ng = blk / SPEC_CHUNKS;
        const int64_t c = blk % SPEC_CHUNKS;
        const float* xg = x + ng * gs;
        const float k0 = spec_shift(xg);
        const float4* p = reinterpret_cast<const float4*>(xg) + c * nv;
        float s1 = 0.0f, s2 = 0.0f;
        for (int64_t i = threadIdx.x; i < nv; i += blockDim.x) {
            const float4 v = p[i];
            const float a = v.x - k0, b = v.y - k0, cc = v.z - k0, d = v.w - k0;
            s1 += (a + b) + (cc + d);
            s2 += a * a + b * b + cc * cc + d * d;
        }
        s1 = spec_block_sum(s1, red);
        s2 = spec_block_sum(s2, red);
        if (threadIdx.x == 0) spec_partials[blk] = make_float2(s1, s2);
    }
}

// floor(hw / 1024) blocks per plane, one float4 per thread, no bounds checks.
__global__ void spec_apply_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                  const float* __restrict__ bias, float* __restrict__ y, int64_t planes,
                                  int64_t channels, int64_t hw, int64_t cpg, int64_t gs, float eps) {
    const int64_t per_plane = hw / 1024;
    const float inv = 1.0f / (float)gs;
    for (int64_t blk = blockIdx.x; blk < planes * per_plane; blk += gridDim.x) {
        const int64_t plane = blk / per_plane;
        const int64_t part = blk % per_plane;
        const int64_t ch = plane % channels;
        const int64_t ng = (plane / channels) * (channels / cpg) + ch / cpg;
        float a = 0.0f, b = 0.0f;
        for (int c = 0; c < SPEC_CHUNKS; ++c) {
            a += spec_partials[ng * SPEC_CHUNKS + c].x;
            b += spec_partials[ng * SPEC_CHUNKS + c].y;
        }
        const float dm = a * inv;
        const float rstd = 1.0f / sqrtf(fmaxf(b * inv - dm * dm, 0.0f) + eps);
        const float scale = rstd * weight[ch];
        const float shift = bias[ch] - (spec_shift(x + ng * gs) + dm) * scale;
        const int64_t off = plane * hw + part * 1024 + 4 * threadIdx.x;
        const float4 v = *reinterpret_cast<const float4*>(x + off);
        *reinterpret_cast<float4*>(y + off) = make_float4(v.x * scale + shift, v.y * scale + shift,
                                                          v.z * scale + shift, v.w * scale + shift);
    }
}

// Fallback: correct for every shape, one block per (sample, group), two-pass statistics.
__global__ void spec_fallback_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                     const float* __restrict__ bias, float* __restrict__ y, int64_t ngroups_total,
                                     int64_t groups, int64_t hw, int64_t cpg, float eps) {
    __shared__ float red[SPEC_MAX_WARPS];
    const int64_t gs = cpg * hw;
    for (int64_t ng = blockIdx.x; ng < ngroups_total; ng += gridDim.x) {
        const int64_t g = ng % groups;
        const float* xg = x + ng * gs;
        float* yg = y + ng * gs;
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < gs; j += blockDim.x) s += xg[j];
        const float mean = spec_block_sum(s, red) / (float)gs;
        float q = 0.0f;
        for (int64_t j = threadIdx.x; j < gs; j += blockDim.x) q += (xg[j] - mean) * (xg[j] - mean);
        const float rstd = 1.0f / sqrtf(spec_block_sum(q, red) / (float)gs + eps);
        for (int64_t j = threadIdx.x; j < gs; j += blockDim.x) {
            const int64_t ch = g * cpg + j / hw;
            yg[j] = (xg[j] - mean) * rstd * weight[ch] + bias[ch];
        }
    }
}

extern "C" int group_norm(const float* x, const float* weight, const float* bias, float* y, int64_t batch,
                          int64_t channels, int64_t height, int64_t width, int64_t groups, float eps,
                          hipStream_t stream) {
    if (groups <= 0 || channels % groups != 0) return (int)hipErrorInvalidValue;
    const int64_t hw = height * width;
    if (batch <= 0 || channels <= 0 || hw <= 0) return (int)hipSuccess;
    const int64_t ngroups_total = batch * groups;
    const int64_t cpg = channels / groups;
    const bool aligned = (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 == 0;
    if (aligned && hw % 4 == 0 && hw >= 1024 && ngroups_total <= SPEC_MAX_GROUPS) {
        int64_t sblocks = ngroups_total * SPEC_CHUNKS;
        hipLaunchKernelGGL(spec_stats_kernel, dim3((unsigned int)sblocks), dim3(SPEC_THREADS), 0, stream, x,
                           ngroups_total, cpg * hw);
        int64_t ablocks = batch * channels * (hw / 1024);
        if (ablocks > SPEC_MAX_GRID) ablocks = SPEC_MAX_GRID;
        hipLaunchKernelGGL(spec_apply_kernel, dim3((unsigned int)ablocks), dim3(SPEC_THREADS), 0, stream, x, weight,
                           bias, y, batch * channels, channels, hw, cpg, cpg * hw, eps);
    } else {
        const int64_t blocks = ngroups_total < SPEC_MAX_GRID ? ngroups_total : SPEC_MAX_GRID;
        hipLaunchKernelGGL(spec_fallback_kernel, dim3((unsigned int)blocks), dim3(1024), 0, stream, x, weight, bias,
                           y, ngroups_total, groups, hw, cpg, eps);
    }
    return (int)hipGetLastError();
}

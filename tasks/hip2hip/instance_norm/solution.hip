// InstanceNorm2d with affine over NCHW, fp32: a general, portable solution.
//
// Planes of at most 16384 values (height * width): one kernel, x read once.
//   in_fused_kernel<G, VEC>: a group of G threads (a power of two, 32 .. 1024; several
//   groups per 256-thread block) per plane holds the whole plane in registers (8 float4 or
//   16 floats per thread, all loads in flight at once), reduces the mean over the group,
//   then the variance around it from the registers, and writes y. The starting kernel's
//   block per plane also reads x once from DRAM (its second and third passes hit cache),
//   so the old three-kernel path below, which reads x twice, lost to it on thousands of
//   small planes (64x64, 32x32): the fused kernel moves the minimum and keeps 8 loads per
//   thread in flight where the starting kernel keeps one.
// Larger planes (few of them: the split is needed to use the whole GPU): three kernels,
// x read twice in all (statistics, then normalisation):
// 1. in_partial_kernel, grid (planes, splits): each block reduces a contiguous share of
//    one plane to fp32 sums of (x - K) and (x - K)^2, K = the plane's first value (shifted
//    sums: no cancellation when |mean| >> std). splits is chosen so that about a thousand
//    blocks work whether there are 32 huge planes or 8192 small ones.
// 2. in_finalize_kernel: one thread per plane combines its partials in double and stores
//    scale = weight / sqrt(var + eps), shift = bias - mean * scale.
// 3. in_apply_kernel: y = x * scale + shift, grid-stride over the tensor.
// 16-byte float4 accesses when height * width % 4 == 0 and x, y are 16-byte aligned.
// Partials and scale / shift live in fixed __device__ buffers (no allocation per call;
// calls on one stream are ordered, so two calls never share them at once).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define IN_THREADS 256
#define IN_MAX_WARPS 32
#define IN_MAX_PARTIALS (1 << 20)  // planes * splits
#define IN_MAX_PLANES (1 << 20)
#define IN_TARGET_BLOCKS 1024
#define IN_MIN_VECS_PER_BLOCK 2048

__device__ float2 g_in_partials[IN_MAX_PARTIALS];
__device__ float2 g_in_scale_shift[IN_MAX_PLANES];

template <int VEC> struct InVec;
template <> struct InVec<4> { typedef float4 T; };
template <> struct InVec<1> { typedef float T; };

static __device__ __forceinline__ void in_acc(float v, float k, float& s, float& ss) {
    const float d = v - k;
    s += d;
    ss += d * d;
}
static __device__ __forceinline__ void in_acc(const float4& v, float k, float& s, float& ss) {
    in_acc(v.x, k, s, ss);
    in_acc(v.y, k, s, ss);
    in_acc(v.z, k, s, ss);
    in_acc(v.w, k, s, ss);
}

// Block-wide sums of (a, b), valid in thread 0; every thread calls it.
static __device__ __forceinline__ void in_block_sum2(float& a, float& b, float* pa, float* pb) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        a += __shfl_xor(a, offset);
        b += __shfl_xor(b, offset);
    }
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    if (lane == 0) {
        pa[warp] = a;
        pb[warp] = b;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        a = 0.0f;
        b = 0.0f;
        for (int w = 0; w < (int)(blockDim.x / warpSize); ++w) {
            a += pa[w];
            b += pb[w];
        }
    }
}

// Block (plane, k) reduces vectors [k * chunk, (k + 1) * chunk) of the plane.
template <int VEC>
__global__ void __launch_bounds__(IN_THREADS)
in_partial_kernel(const float* __restrict__ x, int64_t hw, int64_t chunk) {
    typedef typename InVec<VEC>::T T;
    __shared__ float pa[IN_MAX_WARPS];
    __shared__ float pb[IN_MAX_WARPS];
    const int64_t plane = blockIdx.x;
    const int64_t k = blockIdx.y;
    const int64_t hwv = hw / VEC;
    const int64_t start = k * chunk;
    const int64_t end = start + chunk < hwv ? start + chunk : hwv;
    const float shift = x[plane * hw];
    const T* xv = reinterpret_cast<const T*>(x + plane * hw);
    float s = 0.0f, ss = 0.0f;
    int64_t i = start + threadIdx.x;
    // Two independent loads in flight per iteration.
    for (; i + IN_THREADS < end; i += 2 * IN_THREADS) {
        const T a = xv[i];
        const T b = xv[i + IN_THREADS];
        in_acc(a, shift, s, ss);
        in_acc(b, shift, s, ss);
    }
    if (i < end) in_acc(xv[i], shift, s, ss);
    in_block_sum2(s, ss, pa, pb);
    if (threadIdx.x == 0) g_in_partials[plane * gridDim.y + k] = make_float2(s, ss);
}

__global__ void in_finalize_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                   const float* __restrict__ bias, int64_t planes, int64_t channels, int64_t hw,
                                   int64_t splits, float eps) {
    const int64_t plane = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (plane >= planes) return;
    double s = 0.0, ss = 0.0;
    for (int64_t k = 0; k < splits; ++k) {
        const float2 p = g_in_partials[plane * splits + k];
        s += (double)p.x;
        ss += (double)p.y;
    }
    const double dm = s / (double)hw;
    double var = ss / (double)hw - dm * dm;
    if (var < 0.0) var = 0.0;
    const double mean = (double)x[plane * hw] + dm;
    const int64_t c = plane % channels;
    const double scale = (double)weight[c] / sqrt(var + (double)eps);
    g_in_scale_shift[plane] = make_float2((float)scale, (float)((double)bias[c] - mean * scale));
}

static __device__ __forceinline__ float in_fma(float v, float2 ab) { return v * ab.x + ab.y; }
static __device__ __forceinline__ float4 in_fma(const float4& v, float2 ab) {
    return make_float4(v.x * ab.x + ab.y, v.y * ab.x + ab.y, v.z * ab.x + ab.y, v.w * ab.x + ab.y);
}

// I: the index type (32-bit divisions when the tensor has < 2**31 vectors).
template <int VEC, typename I>
__global__ void __launch_bounds__(IN_THREADS)
in_apply_kernel(const float* __restrict__ x, float* __restrict__ y, I hwv, I total) {
    typedef typename InVec<VEC>::T T;
    const T* xv = reinterpret_cast<const T*>(x);
    T* yv = reinterpret_cast<T*>(y);
    const I stride = (I)gridDim.x * IN_THREADS;
    for (I i = (I)blockIdx.x * IN_THREADS + threadIdx.x; i < total; i += stride)
        yv[i] = in_fma(xv[i], g_in_scale_shift[i / hwv]);
}

// ---- small planes: one group of G threads per plane, the plane held in registers ----

// Sum over the aligned group of G threads (G a power of two >= 32) that threadIdx.x is in;
// every thread of the block calls it and gets its group's total. Within a warp a __shfl_xor
// butterfly over min(G, warpSize) lanes (aligned lane groups, so it also works for G <
// warpSize), across the G / warpSize warps of a larger group through shared memory.
template <int G>
static __device__ __forceinline__ float in_group_sum(float v, float* red) {
    const int ws = warpSize;
    const int lim = G < ws ? G : ws;
    for (int off = lim / 2; off > 0; off /= 2) v += __shfl_xor(v, off);
    if (G > ws) {
        if ((int)threadIdx.x % ws == 0) red[threadIdx.x / ws] = v;
        __syncthreads();
        const int per = G / ws;
        const int first = ((int)threadIdx.x / G) * per;
        float s = 0.0f;
        for (int k = 0; k < per; ++k) s += red[first + k];
        __syncthreads();  // red is reused by the next sum
        v = s;
    }
    return v;
}

static __device__ __forceinline__ float in_hsum(float v) { return v; }
static __device__ __forceinline__ float in_hsum(const float4& v) { return (v.x + v.y) + (v.z + v.w); }
static __device__ __forceinline__ float in_sqdev(float v, float m) {
    const float d = v - m;
    return d * d;
}
static __device__ __forceinline__ float in_sqdev(const float4& v, float m) {
    return (in_sqdev(v.x, m) + in_sqdev(v.y, m)) + (in_sqdev(v.z, m) + in_sqdev(v.w, m));
}
template <typename T> static __device__ __forceinline__ T in_zero();
template <> __device__ __forceinline__ float in_zero<float>() { return 0.0f; }
template <> __device__ __forceinline__ float4 in_zero<float4>() { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }

// Block of max(G, IN_THREADS) threads = blockDim.x / G planes. Thread gt of a plane's group
// holds vectors gt, gt + G, ..., gt + (R - 1) * G of it (all loads in flight at once), so
// x is read once: mean, then the variance around it from the registers (two passes, no
// cancellation), then y. The host picks G with G * R * VEC >= height * width.
template <int G, int VEC>
__global__ void __launch_bounds__(G > IN_THREADS ? G : IN_THREADS, 2048 / (G > IN_THREADS ? G : IN_THREADS) / 2)
in_fused_kernel(const float* __restrict__ x, const float* __restrict__ weight, const float* __restrict__ bias,
                float* __restrict__ y, int64_t planes, int64_t channels, int64_t hw, float eps) {
    typedef typename InVec<VEC>::T T;
    constexpr int R = VEC == 4 ? 8 : 16;  // 32 or 16 floats per thread (more spill)
    __shared__ float red[IN_MAX_WARPS];
    const int gt = (int)threadIdx.x % G;
    const int64_t plane = (int64_t)blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
    const bool valid = plane < planes;  // invalid groups still take part in the barriers
    const int n = valid ? (int)(hw / VEC) : 0;
    const int64_t base = valid ? plane * hw : 0;
    const T* __restrict__ xv = reinterpret_cast<const T*>(x + base) + gt;  // item k: xv[k * G]
    T* __restrict__ yv = reinterpret_cast<T*>(y + base) + gt;
    const int m = n - gt;  // item k is in the plane iff k * G < m
    const int64_t c = valid ? plane % channels : 0;
    const float wc = weight[c];
    const float bc = bias[c];
    T v[R];
#pragma unroll
    for (int k = 0; k < R; ++k) v[k] = k * G < m ? xv[k * G] : in_zero<T>();
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < R; ++k) s += in_hsum(v[k]);
    const float mean = in_group_sum<G>(s, red) / (float)hw;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < R; ++k)
        if (k * G < m) q += in_sqdev(v[k], mean);
    const float var = in_group_sum<G>(q, red) / (float)hw;
    const float scale = wc / sqrtf(var + eps);
    const float2 ab = make_float2(scale, bc - mean * scale);
#pragma unroll
    for (int k = 0; k < R; ++k)
        if (k * G < m) yv[k * G] = in_fma(v[k], ab);
}

#define IN_FUSED_MAX_HW 16384  // 512 threads * 8 float4, 1024 threads * 16 floats

template <int VEC>
static void in_launch_fused(const float* x, const float* weight, const float* bias, float* y, int64_t planes,
                            int64_t channels, int64_t hw, float eps, hipStream_t stream) {
    const int64_t n = hw / VEC;
    const int64_t r = VEC == 4 ? 8 : 16;
    int64_t g = 32;
    while (g * r < n) g *= 2;  // <= 512 (VEC 4) or 1024 (VEC 1) for hw <= IN_FUSED_MAX_HW
    const int64_t block = g > IN_THREADS ? g : IN_THREADS;
    const int64_t grid = (planes + block / g - 1) / (block / g);
    const dim3 gd((unsigned int)grid), bd((unsigned int)block);
    switch (g) {
        case 32: hipLaunchKernelGGL((in_fused_kernel<32, VEC>), gd, bd, 0, stream, x, weight, bias, y, planes, channels, hw, eps); break;
        case 64: hipLaunchKernelGGL((in_fused_kernel<64, VEC>), gd, bd, 0, stream, x, weight, bias, y, planes, channels, hw, eps); break;
        case 128: hipLaunchKernelGGL((in_fused_kernel<128, VEC>), gd, bd, 0, stream, x, weight, bias, y, planes, channels, hw, eps); break;
        case 256: hipLaunchKernelGGL((in_fused_kernel<256, VEC>), gd, bd, 0, stream, x, weight, bias, y, planes, channels, hw, eps); break;
        case 512: hipLaunchKernelGGL((in_fused_kernel<512, VEC>), gd, bd, 0, stream, x, weight, bias, y, planes, channels, hw, eps); break;
        default: hipLaunchKernelGGL((in_fused_kernel<1024, VEC>), gd, bd, 0, stream, x, weight, bias, y, planes, channels, hw, eps); break;
    }
}

template <int VEC>
static void in_launch(const float* x, const float* weight, const float* bias, float* y, int64_t planes,
                      int64_t channels, int64_t hw, float eps, hipStream_t stream) {
    const int64_t hwv = hw / VEC;
    int64_t splits = (IN_TARGET_BLOCKS + planes - 1) / planes;
    const int64_t by_size = (hwv + IN_MIN_VECS_PER_BLOCK - 1) / IN_MIN_VECS_PER_BLOCK;
    if (splits > by_size) splits = by_size;
    if (splits > IN_MAX_PARTIALS / planes) splits = IN_MAX_PARTIALS / planes;
    if (splits > 65535) splits = 65535;
    if (splits < 1) splits = 1;
    const int64_t chunk = (hwv + splits - 1) / splits;
    hipLaunchKernelGGL(in_partial_kernel<VEC>, dim3((unsigned int)planes, (unsigned int)splits), dim3(IN_THREADS), 0,
                       stream, x, hw, chunk);
    hipLaunchKernelGGL(in_finalize_kernel, dim3((unsigned int)((planes + 255) / 256)), dim3(256), 0, stream, x, weight,
                       bias, planes, channels, hw, splits, eps);
    const int64_t total = planes * hwv;
    int64_t blocks = (total + IN_THREADS - 1) / IN_THREADS;
    if (blocks > 132 * 64) blocks = 132 * 64;  // grid-stride beyond a few waves
    if (total < (int64_t)1 << 31)
        hipLaunchKernelGGL((in_apply_kernel<VEC, uint32_t>), dim3((unsigned int)blocks), dim3(IN_THREADS), 0, stream,
                           x, y, (uint32_t)hwv, (uint32_t)total);
    else
        hipLaunchKernelGGL((in_apply_kernel<VEC, int64_t>), dim3((unsigned int)blocks), dim3(IN_THREADS), 0, stream, x,
                           y, hwv, total);
}

extern "C" int instance_norm(const float* x, const float* weight, const float* bias, float* y, int64_t batch,
                             int64_t channels, int64_t height, int64_t width, float eps, hipStream_t stream) {
    const int64_t planes = batch * channels;
    const int64_t hw = height * width;
    if (planes <= 0 || hw <= 0) return (int)hipSuccess;
    if (planes > IN_MAX_PLANES) return (int)hipErrorInvalidValue;
    const uintptr_t any = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
    const bool vec4 = hw % 4 == 0 && any % 16 == 0;
    if (hw <= IN_FUSED_MAX_HW) {
        if (vec4)
            in_launch_fused<4>(x, weight, bias, y, planes, channels, hw, eps, stream);
        else
            in_launch_fused<1>(x, weight, bias, y, planes, channels, hw, eps, stream);
    } else if (vec4)
        in_launch<4>(x, weight, bias, y, planes, channels, hw, eps, stream);
    else
        in_launch<1>(x, weight, bias, y, planes, channels, hw, eps, stream);
    return (int)hipGetLastError();
}

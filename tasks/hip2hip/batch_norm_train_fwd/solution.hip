// BatchNorm2d training-mode forward over NCHW, fp32: a general, portable solution.
//
// Three kernels, x read twice in all (statistics, then normalisation):
// 1. bn_partial_kernel, grid (splits, channels): each block reduces a contiguous share of
//    one channel's batch * hw values (walking across plane boundaries without a division
//    per element) to fp32 sums of (x - K) and (x - K)^2, K = the channel's first value
//    (shifted sums: no cancellation when |mean| >> std). splits is chosen so that about
//    a thousand blocks work whatever the number of channels.
// 2. bn_finalize_kernel: one thread per channel combines its partials in double, writes
//    mean and invstd, and the per-channel scale = invstd * weight, shift = bias - mean * scale.
// 3. bn_apply_kernel: y = x * scale + shift over the whole tensor, grid-stride.
// 16-byte float4 accesses when height * width % 4 == 0 and x, y are 16-byte aligned.
// The partials and the scale / shift live in fixed __device__ buffers (no allocation per
// call; calls on one stream are ordered, so the buffers are never shared by two calls at once).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define BN_THREADS 256
#define BN_MAX_WARPS 32
#define BN_MAX_PARTIALS (1 << 17)   // channels * splits
#define BN_MAX_CHANNELS (1 << 17)
#define BN_TARGET_BLOCKS 1024
#define BN_MIN_VECS_PER_BLOCK 2048

__device__ float2 g_bn_partials[BN_MAX_PARTIALS];
__device__ float2 g_bn_scale_shift[BN_MAX_CHANNELS];

template <int VEC> struct BnVec;
template <> struct BnVec<4> { typedef float4 T; };
template <> struct BnVec<1> { typedef float T; };

static __device__ __forceinline__ void bn_acc(float v, float k, float& s, float& ss) {
    const float d = v - k;
    s += d;
    ss += d * d;
}
static __device__ __forceinline__ void bn_acc(const float4& v, float k, float& s, float& ss) {
    bn_acc(v.x, k, s, ss);
    bn_acc(v.y, k, s, ss);
    bn_acc(v.z, k, s, ss);
    bn_acc(v.w, k, s, ss);
}

// Block-wide sums of (a, b), valid in thread 0; blockDim.x == BN_THREADS.
static __device__ __forceinline__ void bn_block_sum2(float& a, float& b, float* pa, float* pb) {
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

// Block (k, c) reduces vectors [k * chunk, (k + 1) * chunk) of channel c's batch * hwv vectors.
template <int VEC>
__global__ void __launch_bounds__(BN_THREADS)
bn_partial_kernel(const float* __restrict__ x, int64_t batch, int64_t channels, int64_t hw, int64_t chunk) {
    typedef typename BnVec<VEC>::T T;
    __shared__ float pa[BN_MAX_WARPS];
    __shared__ float pb[BN_MAX_WARPS];
    const int64_t c = blockIdx.y;
    const int64_t k = blockIdx.x;
    const int64_t hwv = hw / VEC;
    const int64_t total = batch * hwv;
    const int64_t start = k * chunk;
    const int64_t end = start + chunk < total ? start + chunk : total;
    const float shift = x[c * hw];  // x[0, c, 0, 0]
    float s = 0.0f, ss = 0.0f;
    int64_t v = start + threadIdx.x;
    if (v < end) {
        int64_t n = v / hwv;   // one division per thread, then carried along
        int64_t p = v - n * hwv;
        const T* xv = reinterpret_cast<const T*>(x);
        while (v < end) {
            bn_acc(xv[(n * channels + c) * hwv + p], shift, s, ss);
            v += BN_THREADS;
            p += BN_THREADS;
            while (p >= hwv) {
                p -= hwv;
                ++n;
            }
        }
    }
    bn_block_sum2(s, ss, pa, pb);
    if (threadIdx.x == 0) g_bn_partials[c * gridDim.x + k] = make_float2(s, ss);
}

__global__ void bn_finalize_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                   const float* __restrict__ bias, float* __restrict__ mean_out,
                                   float* __restrict__ invstd_out, int64_t batch, int64_t channels, int64_t hw,
                                   int64_t splits, float eps) {
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= channels) return;
    double s = 0.0, ss = 0.0;
    for (int64_t k = 0; k < splits; ++k) {
        const float2 p = g_bn_partials[c * splits + k];
        s += (double)p.x;
        ss += (double)p.y;
    }
    const double count = (double)batch * (double)hw;
    const double dm = s / count;  // mean of x - K
    double var = ss / count - dm * dm;
    if (var < 0.0) var = 0.0;
    const float mean = (float)((double)x[c * hw] + dm);
    const float invstd = (float)(1.0 / sqrt(var + (double)eps));
    mean_out[c] = mean;
    invstd_out[c] = invstd;
    const float scale = invstd * weight[c];
    g_bn_scale_shift[c] = make_float2(scale, bias[c] - mean * scale);
}

static __device__ __forceinline__ float bn_fma(float v, float2 ab) { return v * ab.x + ab.y; }
static __device__ __forceinline__ float4 bn_fma(const float4& v, float2 ab) {
    return make_float4(v.x * ab.x + ab.y, v.y * ab.x + ab.y, v.z * ab.x + ab.y, v.w * ab.x + ab.y);
}

// I: the index type (32-bit divisions when the tensor has < 2**31 vectors).
template <int VEC, typename I>
__global__ void __launch_bounds__(BN_THREADS)
bn_apply_kernel(const float* __restrict__ x, float* __restrict__ y, I channels, I hwv, I total) {
    typedef typename BnVec<VEC>::T T;
    const T* xv = reinterpret_cast<const T*>(x);
    T* yv = reinterpret_cast<T*>(y);
    const I stride = (I)gridDim.x * BN_THREADS;
    for (I i = (I)blockIdx.x * BN_THREADS + threadIdx.x; i < total; i += stride) {
        const I c = (i / hwv) % channels;
        yv[i] = bn_fma(xv[i], g_bn_scale_shift[c]);
    }
}

template <int VEC>
static void bn_launch(const float* x, const float* weight, const float* bias, float* y, float* mean, float* invstd,
                      int64_t batch, int64_t channels, int64_t hw, float eps, hipStream_t stream) {
    const int64_t hwv = hw / VEC;
    const int64_t per_channel = batch * hwv;
    int64_t splits = (BN_TARGET_BLOCKS + channels - 1) / channels;
    const int64_t by_size = (per_channel + BN_MIN_VECS_PER_BLOCK - 1) / BN_MIN_VECS_PER_BLOCK;
    if (splits > by_size) splits = by_size;
    if (splits > BN_MAX_PARTIALS / channels) splits = BN_MAX_PARTIALS / channels;
    if (splits > 65535) splits = 65535;
    if (splits < 1) splits = 1;
    const int64_t chunk = (per_channel + splits - 1) / splits;
    hipLaunchKernelGGL(bn_partial_kernel<VEC>, dim3((unsigned int)splits, (unsigned int)channels), dim3(BN_THREADS), 0,
                       stream, x, batch, channels, hw, chunk);
    hipLaunchKernelGGL(bn_finalize_kernel, dim3((unsigned int)((channels + 255) / 256)), dim3(256), 0, stream, x,
                       weight, bias, mean, invstd, batch, channels, hw, splits, eps);
    const int64_t total = batch * channels * hwv;
    int64_t blocks = (total + BN_THREADS - 1) / BN_THREADS;
    if (blocks > 132 * 64) blocks = 132 * 64;  // grid-stride beyond a few waves
    if (total < (int64_t)1 << 31)
        hipLaunchKernelGGL((bn_apply_kernel<VEC, uint32_t>), dim3((unsigned int)blocks), dim3(BN_THREADS), 0, stream,
                           x, y, (uint32_t)channels, (uint32_t)hwv, (uint32_t)total);
    else
        hipLaunchKernelGGL((bn_apply_kernel<VEC, int64_t>), dim3((unsigned int)blocks), dim3(BN_THREADS), 0, stream, x,
                           y, channels, hwv, total);
}

extern "C" int batch_norm_train_fwd(const float* x, const float* weight, const float* bias, float* y, float* mean,
                                    float* invstd, int64_t batch, int64_t channels, int64_t height, int64_t width,
                                    float eps, hipStream_t stream) {
    const int64_t hw = height * width;
    if (batch <= 0 || channels <= 0 || hw <= 0) return (int)hipSuccess;
    if (channels > BN_MAX_CHANNELS || channels > 65535) return (int)hipErrorInvalidValue;
    const uintptr_t any = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
    if (hw % 4 == 0 && any % 16 == 0)
        bn_launch<4>(x, weight, bias, y, mean, invstd, batch, channels, hw, eps, stream);
    else
        bn_launch<1>(x, weight, bias, y, mean, invstd, batch, channels, hw, eps, stream);
    return (int)hipGetLastError();
}

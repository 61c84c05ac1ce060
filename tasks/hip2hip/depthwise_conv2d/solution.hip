// Depthwise k x k convolution + bias, stride 1, same padding, NCHW fp16: a general,
// portable solution.
//
// * Register blocking along the height: each thread computes a vertical strip of R = 8
//   outputs of one column (rows s*R .. s*R+7 of one (image, channel) plane). It walks the
//   R + k - 1 input rows that the strip touches once, loads the k pixels of each row into
//   registers, and adds them into every output of the strip that uses that row. An input
//   pixel is loaded k * (R + k - 1) / R times per output instead of k * k times (12 instead
//   of 49 loads per output for 7 x 7, 3.75 instead of 9 for 3 x 3).
// * The k * k weights and the bias of the thread's channel are loaded once per strip and
//   kept in fp32 registers.
// * k is a template parameter (3, 5, 7), so the tap loops unroll completely and all the
//   register arrays are indexed with constants; another odd k takes a generic
//   one-output-per-thread kernel.
// * Threads are numbered (plane, strip, column) with the column fastest: a warp's loads
//   and stores are consecutive columns of a row (coalesced), for any h and w (odd, small
//   planes such as 7 x 7 simply share a warp between strips). fp32 accumulation, one
//   rounding to fp16. Nothing depends on the warp size.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define DW_THREADS 256
#define DW_R 8  // outputs per thread (a vertical strip)

template <int K, int R>
__global__ void __launch_bounds__(DW_THREADS)
depthwise_strip_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                       const __half* __restrict__ bias, __half* __restrict__ y, int64_t total, int c, int h,
                       int w, int strips) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total) return;
    const int ow = (int)(t % w);
    const int64_t q = t / w;
    const int s = (int)(q % strips);
    const int64_t plane = q / strips;  // b * c + ch
    const int ch = (int)(plane % c);
    constexpr int P = K / 2;

    float wk[K * K];
#pragma unroll
    for (int i = 0; i < K * K; ++i) wk[i] = __half2float(weight[(int64_t)ch * (K * K) + i]);
    const float b = __half2float(bias[ch]);
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = b;

    const int64_t plane_off = plane * (int64_t)h * w;
    const __half* xp = x + plane_off;
    const int oh0 = s * R;
#pragma unroll
    for (int i = 0; i < R + K - 1; ++i) {
        const int ih = oh0 - P + i;
        if (ih < 0 || ih >= h) continue;
        const __half* xr = xp + (int64_t)ih * w;
        float xv[K];
#pragma unroll
        for (int kw = 0; kw < K; ++kw) {
            const int iw = ow - P + kw;
            xv[kw] = (iw >= 0 && iw < w) ? __half2float(xr[iw]) : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int kh = i - r;  // compile-time after unrolling
            if (kh >= 0 && kh < K) {
#pragma unroll
                for (int kw = 0; kw < K; ++kw) acc[r] = fmaf(wk[kh * K + kw], xv[kw], acc[r]);
            }
        }
    }
    __half* yp = y + plane_off + ow;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int oh = oh0 + r;
        if (oh < h) yp[(int64_t)oh * w] = __float2half_rn(acc[r]);
    }
}

// Any other filter size: one output per thread, runtime taps.
__global__ void depthwise_generic_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                         const __half* __restrict__ bias, __half* __restrict__ y, int64_t total,
                                         int c, int h, int w, int k) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    const int ow = (int)(idx % w);
    const int64_t q = idx / w;
    const int oh = (int)(q % h);
    const int64_t plane = q / h;
    const int ch = (int)(plane % c);
    const int p = k / 2;
    const __half* xp = x + plane * (int64_t)h * w;
    const __half* wp = weight + (int64_t)ch * k * k;
    float acc = __half2float(bias[ch]);
    for (int kh = 0; kh < k; ++kh) {
        const int ih = oh + kh - p;
        if (ih < 0 || ih >= h) continue;
        for (int kw = 0; kw < k; ++kw) {
            const int iw = ow + kw - p;
            if (iw < 0 || iw >= w) continue;
            acc = fmaf(__half2float(xp[(int64_t)ih * w + iw]), __half2float(wp[kh * k + kw]), acc);
        }
    }
    y[idx] = __float2half_rn(acc);
}

template <int K>
static void dw_launch(const __half* x, const __half* weight, const __half* bias, __half* y, int64_t n, int64_t c,
                      int64_t h, int64_t w, hipStream_t stream) {
    const int64_t strips = (h + DW_R - 1) / DW_R;
    const int64_t total = n * c * strips * w;
    const int64_t blocks = (total + DW_THREADS - 1) / DW_THREADS;
    hipLaunchKernelGGL((depthwise_strip_kernel<K, DW_R>), dim3((unsigned int)blocks), dim3(DW_THREADS), 0, stream, x,
                       weight, bias, y, total, (int)c, (int)h, (int)w, (int)strips);
}

extern "C" int depthwise_conv2d(const __half* x, const __half* weight, const __half* bias, __half* y, int64_t n,
                                int64_t c, int64_t h, int64_t w, int64_t ksize, hipStream_t stream) {
    const int64_t total = n * c * h * w;
    if (total <= 0) return (int)hipSuccess;
    // h, w, c and a plane offset's factors fit in int; element offsets are 64-bit.
    switch (ksize) {
        case 3: dw_launch<3>(x, weight, bias, y, n, c, h, w, stream); break;
        case 5: dw_launch<5>(x, weight, bias, y, n, c, h, w, stream); break;
        case 7: dw_launch<7>(x, weight, bias, y, n, c, h, w, stream); break;
        default: {
            const int64_t blocks = (total + DW_THREADS - 1) / DW_THREADS;
            hipLaunchKernelGGL(depthwise_generic_kernel, dim3((unsigned int)blocks), dim3(DW_THREADS), 0, stream, x,
                               weight, bias, y, total, (int)c, (int)h, (int)w, (int)ksize);
        }
    }
    return (int)hipGetLastError();
}

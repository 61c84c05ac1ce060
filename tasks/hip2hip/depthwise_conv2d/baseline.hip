// Depthwise k x k convolution + bias, stride 1, same padding, NCHW fp16: the starting kernel.
//
// One thread per output element (neighbouring threads take neighbouring columns, so the
// accesses are coalesced). Each thread reads its k * k input pixels and k * k weights
// from global memory, scalar 2-byte loads, with a bounds check per tap: every input pixel
// is loaded k * k times (by the k * k outputs that use it), nothing is kept in registers
// or shared memory between outputs.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void depthwise_conv2d_naive_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                              const __half* __restrict__ bias, __half* __restrict__ y, int64_t n,
                                              int64_t c, int64_t h, int64_t w, int64_t ksize) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t total = n * c * h * w;
    if (idx >= total) return;
    const int64_t ow = idx % w;
    int64_t t = idx / w;
    const int64_t oh = t % h;
    const int64_t plane = t / h;  // b * c + ch
    const int64_t ch = plane % c;
    const int64_t pad = ksize / 2;

    const __half* xp = x + plane * h * w;
    const __half* wp = weight + ch * ksize * ksize;
    float acc = __half2float(bias[ch]);
    for (int64_t kh = 0; kh < ksize; ++kh) {
        const int64_t ih = oh + kh - pad;
        if (ih < 0 || ih >= h) continue;
        for (int64_t kw = 0; kw < ksize; ++kw) {
            const int64_t iw = ow + kw - pad;
            if (iw < 0 || iw >= w) continue;
            acc += __half2float(xp[ih * w + iw]) * __half2float(wp[kh * ksize + kw]);
        }
    }
    y[idx] = __float2half_rn(acc);
}

extern "C" int depthwise_conv2d(const __half* x, const __half* weight, const __half* bias, __half* y, int64_t n,
                                int64_t c, int64_t h, int64_t w, int64_t ksize, hipStream_t stream) {
    const int64_t total = n * c * h * w;
    if (total <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (total + threads - 1) / threads;
    hipLaunchKernelGGL(depthwise_conv2d_naive_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, weight,
                       bias, y, n, c, h, w, ksize);
    return (int)hipGetLastError();
}

// Direct 3x3 convolution, stride 1, padding 1, NCHW fp32: the starting kernel.
//
// One thread per output element (neighbouring threads take neighbouring output columns,
// so the loads of x are coalesced). Each thread loops over the cin * 9 taps, reading the
// input pixel and the weight from global memory for every multiply-add: two loads per
// FMA, no reuse through shared memory or registers, one output per thread.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void conv2d_3x3_naive_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                        float* __restrict__ y, int64_t n, int64_t cin, int64_t cout, int64_t h,
                                        int64_t w) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t total = n * cout * h * w;
    if (idx >= total) return;
    const int64_t ow = idx % w;
    int64_t t = idx / w;
    const int64_t oh = t % h;
    t /= h;
    const int64_t co = t % cout;
    const int64_t b = t / cout;

    const float* xb = x + b * cin * h * w;
    const float* wc = weight + co * cin * 9;
    float acc = 0.0f;
    for (int64_t ci = 0; ci < cin; ++ci) {
        const float* xp = xb + ci * h * w;
        const float* wp = wc + ci * 9;
        for (int kh = 0; kh < 3; ++kh) {
            const int64_t ih = oh + kh - 1;
            if (ih < 0 || ih >= h) continue;
            for (int kw = 0; kw < 3; ++kw) {
                const int64_t iw = ow + kw - 1;
                if (iw < 0 || iw >= w) continue;
                acc += xp[ih * w + iw] * wp[kh * 3 + kw];
            }
        }
    }
    y[idx] = acc;
}

extern "C" int conv2d_3x3(const float* x, const float* weight, float* y, int64_t n, int64_t cin, int64_t cout,
                          int64_t h, int64_t w, hipStream_t stream) {
    const int64_t total = n * cout * h * w;
    if (total <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (total + threads - 1) / threads;
    hipLaunchKernelGGL(conv2d_3x3_naive_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, weight, y,
                       n, cin, cout, h, w);
    return (int)hipGetLastError();
}

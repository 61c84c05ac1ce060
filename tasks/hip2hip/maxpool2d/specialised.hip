// 3x3 max pooling, stride 2, padding 1, NCHW fp32: a SPECIALISED kernel, tuned on the
// seen shapes and wrong elsewhere.
//
// Deliberately flawed (the harness must catch it). Every seen input has an even height
// and width (112 x 112, 56 x 56), so this kernel takes ho = h / 2 and wo = w / 2 and drops
// the bottom and right border checks (a window of an even-sized input never reaches past
// them): each thread computes a strip of 4 output rows, loads the window's centre and
// right columns as one float2 (aligned because w is even) and the left column as a
// scalar. For an odd h or w the true output has one more row or column: the last one is
// never written and, for an odd w, every output row lands at the wrong offset. All reads
// stay inside x (ow < w / 2 keeps 2 * ow + 1 < w; likewise for rows) and all writes
// inside y. Odd widths take a scalar copy of the same kernel (float2 would be misaligned),
// with the same wrong sizes.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define SP_THREADS 256
#define SP_R 4

template <bool VEC2>
__global__ void __launch_bounds__(SP_THREADS)
maxpool2d_even_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t total, int h, int w, int ho, int wo,
                      int strips) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total) return;
    const int ow = (int)(t % wo);
    const int64_t q = t / wo;
    const int s = (int)(q % strips);
    const int64_t plane = q / strips;
    const float* xp = x + plane * (int64_t)h * w;
    float* yp = y + plane * (int64_t)ho * wo + ow;
    const bool left = ow > 0;
    const int oh0 = s * SP_R;
    float rmax[2 * SP_R + 1];
#pragma unroll
    for (int i = 0; i < 2 * SP_R + 1; ++i) {
        const int ih = 2 * oh0 - 1 + i;
        float m = -INFINITY;
        if (ih >= 0 && ih < 2 * ho) {  // BUG, kept on purpose: 2 * ho == h only for even h
            const float* xr = xp + (int64_t)ih * w + 2 * ow;
            if (VEC2) {
                const float2 v = *reinterpret_cast<const float2*>(xr);
                m = fmaxf(v.x, v.y);
            } else {
                m = fmaxf(xr[0], xr[1]);
            }
            if (left) m = fmaxf(m, xr[-1]);
        }
        rmax[i] = m;
    }
#pragma unroll
    for (int r = 0; r < SP_R; ++r) {
        const int oh = oh0 + r;
        if (oh < ho) yp[(int64_t)oh * wo] = fmaxf(fmaxf(rmax[2 * r], rmax[2 * r + 1]), rmax[2 * r + 2]);
    }
}

extern "C" int maxpool2d(const float* x, float* y, int64_t n, int64_t c, int64_t h, int64_t w, hipStream_t stream) {
    // BUG, kept on purpose: (h - 1) / 2 + 1 and (w - 1) / 2 + 1 equal these only for even sizes.
    const int64_t ho = h / 2;
    const int64_t wo = w / 2;
    const int64_t planes = n * c;
    if (planes <= 0 || ho <= 0 || wo <= 0) return (int)hipSuccess;
    const int64_t strips = (ho + SP_R - 1) / SP_R;
    const int64_t total = planes * strips * wo;
    const int64_t blocks = (total + SP_THREADS - 1) / SP_THREADS;
    if (w % 2 == 0 && reinterpret_cast<uintptr_t>(x) % 8 == 0)
        hipLaunchKernelGGL(maxpool2d_even_kernel<true>, dim3((unsigned int)blocks), dim3(SP_THREADS), 0, stream, x, y,
                           total, (int)h, (int)w, (int)ho, (int)wo, (int)strips);
    else
        hipLaunchKernelGGL(maxpool2d_even_kernel<false>, dim3((unsigned int)blocks), dim3(SP_THREADS), 0, stream, x, y,
                           total, (int)h, (int)w, (int)ho, (int)wo, (int)strips);
    return (int)hipGetLastError();
}

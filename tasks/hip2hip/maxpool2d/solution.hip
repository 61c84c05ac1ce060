// 3x3 max pooling, stride 2, padding 1, NCHW fp32: a general, portable solution.
//
// * One thread per output column of a strip of R = 4 output rows: threads are numbered
//   (plane, strip, output column) with the column fastest, so a warp reads input rows
//   contiguously (three stride-2 loads that share the same cache lines) and writes
//   output rows contiguously.
// * Vertical reuse: the strip's 4 outputs need input rows 2*oh0 - 1 .. 2*oh0 + 7 (9 rows,
//   not 12); each input row is reduced to its 3-column max once and that max feeds the
//   one or two windows containing the row. DRAM reads each input value once (the halo
//   row shared by two strips comes from L2), loads per output drop from 9 to ~7.
// * Padding: out-of-image rows and columns are skipped (never -inf in the max, since
//   every window holds at least one pixel). Any h, w >= 1, odd or even, and any number
//   of planes (64-bit offsets, grid on x). Nothing depends on the warp size.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define MP_THREADS 256
#define MP_R 4  // output rows per thread

__global__ void __launch_bounds__(MP_THREADS)
maxpool2d_strip_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t total, int h, int w, int ho, int wo,
                       int strips) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= total) return;
    const int ow = (int)(t % wo);
    const int64_t q = t / wo;
    const int s = (int)(q % strips);
    const int64_t plane = q / strips;
    const float* xp = x + plane * (int64_t)h * w;
    float* yp = y + plane * (int64_t)ho * wo + ow;

    const int iw0 = 2 * ow - 1;
    const bool left = iw0 >= 0;         // column 2*ow - 1 exists
    const bool right = iw0 + 2 < w;     // column 2*ow + 1 exists (2*ow < w always)
    const int oh0 = s * MP_R;
    const int ih0 = 2 * oh0 - 1;

    // rmax[i] = max over the window's columns of input row ih0 + i.
    float rmax[2 * MP_R + 1];
#pragma unroll
    for (int i = 0; i < 2 * MP_R + 1; ++i) {
        const int ih = ih0 + i;
        float m = -INFINITY;
        if (ih >= 0 && ih < h) {
            const float* xr = xp + (int64_t)ih * w + 2 * ow;  // the window's centre column
            m = xr[0];
            if (left) m = fmaxf(m, xr[-1]);
            if (right) m = fmaxf(m, xr[1]);
        }
        rmax[i] = m;
    }
#pragma unroll
    for (int r = 0; r < MP_R; ++r) {
        const int oh = oh0 + r;
        if (oh < ho) yp[(int64_t)oh * wo] = fmaxf(fmaxf(rmax[2 * r], rmax[2 * r + 1]), rmax[2 * r + 2]);
    }
}

extern "C" int maxpool2d(const float* x, float* y, int64_t n, int64_t c, int64_t h, int64_t w, hipStream_t stream) {
    const int64_t ho = (h - 1) / 2 + 1;
    const int64_t wo = (w - 1) / 2 + 1;
    const int64_t planes = n * c;
    if (planes <= 0 || h <= 0 || w <= 0) return (int)hipSuccess;
    const int64_t strips = (ho + MP_R - 1) / MP_R;
    const int64_t total = planes * strips * wo;
    const int64_t blocks = (total + MP_THREADS - 1) / MP_THREADS;
    hipLaunchKernelGGL(maxpool2d_strip_kernel, dim3((unsigned int)blocks), dim3(MP_THREADS), 0, stream, x, y, total,
                       (int)h, (int)w, (int)ho, (int)wo, (int)strips);
    return (int)hipGetLastError();
}

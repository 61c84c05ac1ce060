// 3x3 max pooling, stride 2, padding 1, NCHW fp32: the starting kernel.
//
// One thread per output row (image, channel, output row), walking along the row: for
// each output it reads the 3 x 3 window (bounds-checked) and keeps the max. Correct for
// every shape, but neighbouring threads read addresses two input rows apart
// (uncoalesced), and every input value is loaded by up to four windows.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void maxpool2d_row_per_thread_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                                                int64_t h, int64_t w, int64_t ho, int64_t wo) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;  // (b * c + ch) * ho + oh
    if (row >= rows) return;
    const int64_t oh = row % ho;
    const int64_t plane = row / ho;
    const float* xp = x + plane * h * w;
    float* yr = y + row * wo;
    for (int64_t ow = 0; ow < wo; ++ow) {
        float m = -INFINITY;
        for (int64_t kh = 0; kh < 3; ++kh) {
            const int64_t ih = 2 * oh - 1 + kh;
            if (ih < 0 || ih >= h) continue;
            for (int64_t kw = 0; kw < 3; ++kw) {
                const int64_t iw = 2 * ow - 1 + kw;
                if (iw < 0 || iw >= w) continue;
                m = fmaxf(m, xp[ih * w + iw]);
            }
        }
        yr[ow] = m;
    }
}

extern "C" int maxpool2d(const float* x, float* y, int64_t n, int64_t c, int64_t h, int64_t w, hipStream_t stream) {
    const int64_t ho = (h - 1) / 2 + 1;
    const int64_t wo = (w - 1) / 2 + 1;
    const int64_t rows = n * c * ho;
    if (rows <= 0 || w <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(maxpool2d_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, y,
                       rows, h, w, ho, wo);
    return (int)hipGetLastError();
}

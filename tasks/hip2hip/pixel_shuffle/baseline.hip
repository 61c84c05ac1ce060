// Pixel shuffle, fp32: the starting kernel.
//
// One thread per output element: the output coordinates, the sub-pixel offsets and the
// source channel come from seven 64-bit divisions and remainders per element, then one
// 4-byte load and one 4-byte store. Correct for every shape, but the integer work per
// element dwarfs the 8 bytes it moves.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void pixel_shuffle_naive_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t total,
                                           int64_t channels, int64_t height, int64_t width, int64_t r) {
    const int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= total) return;
    const int64_t wo_size = width * r;
    const int64_t ho_size = height * r;
    const int64_t wo = o % wo_size;
    const int64_t t = o / wo_size;
    const int64_t ho = t % ho_size;
    const int64_t t2 = t / ho_size;  // n * channels + c
    const int64_t c = t2 % channels;
    const int64_t n = t2 / channels;
    const int64_t i = ho % r, h = ho / r;
    const int64_t j = wo % r, w = wo / r;
    const int64_t ci = (c * r + i) * r + j;
    y[o] = x[((n * channels * r * r + ci) * height + h) * width + w];
}

extern "C" int pixel_shuffle(const float* x, float* y, int64_t batch, int64_t channels, int64_t height, int64_t width,
                             int64_t upscale, hipStream_t stream) {
    const int64_t total = batch * channels * upscale * upscale * height * width;
    if (total <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (total + threads - 1) / threads;  // < 2**31 for total < 2**39
    hipLaunchKernelGGL(pixel_shuffle_naive_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, y, total,
                       channels, height, width, upscale);
    return (int)hipGetLastError();
}

// Global average pooling, NCHW fp16 -> (N, C) fp32: the starting kernel.
//
// One thread per (image, channel) plane, summing its h * w values serially in fp32 and
// dividing by h * w. Correct for every shape, but neighbouring threads read addresses a
// whole plane apart (uncoalesced), loads are scalar 2-byte ones, and with few planes
// (large feature maps) only a few threads work.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void avgpool_global_plane_per_thread_kernel(const __half* __restrict__ x, float* __restrict__ y,
                                                       int64_t planes, int64_t hw) {
    const int64_t plane = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (plane >= planes) return;
    const __half* p = x + plane * hw;
    float s = 0.0f;
    for (int64_t j = 0; j < hw; ++j) s += __half2float(p[j]);
    y[plane] = s / (float)hw;
}

extern "C" int avgpool_global(const __half* x, float* y, int64_t n, int64_t c, int64_t h, int64_t w,
                              hipStream_t stream) {
    const int64_t planes = n * c;
    const int64_t hw = h * w;
    if (planes <= 0 || hw <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (planes + threads - 1) / threads;
    hipLaunchKernelGGL(avgpool_global_plane_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream,
                       x, y, planes, hw);
    return (int)hipGetLastError();
}

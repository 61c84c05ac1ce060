// 2-D reflection padding, fp16: the starting kernel.
//
// One thread per output element: the output row and column come from three 64-bit
// divisions and remainders, the source index from the reflection rule, then one scalar
// 2-byte load and one scalar 2-byte store. Correct for every shape (pad < height, width),
// but the integer work per element is large and each thread moves only 4 bytes.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

static __device__ __forceinline__ int64_t reflect_index(int64_t k, int64_t len) {
    if (k < 0) return -k;
    if (k >= len) return 2 * (len - 1) - k;
    return k;
}

__global__ void reflection_pad2d_naive_kernel(const __half* __restrict__ x, __half* __restrict__ y, int64_t total,
                                              int64_t height, int64_t width, int64_t pad) {
    const int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= total) return;
    const int64_t wo = width + 2 * pad;
    const int64_t ho = height + 2 * pad;
    const int64_t j = o % wo;
    const int64_t t = o / wo;
    const int64_t i = t % ho;
    const int64_t nc = t / ho;
    const int64_t si = reflect_index(i - pad, height);
    const int64_t sj = reflect_index(j - pad, width);
    y[o] = x[(nc * height + si) * width + sj];
}

extern "C" int reflection_pad2d(const __half* x, __half* y, int64_t batch, int64_t channels, int64_t height,
                                int64_t width, int64_t pad, hipStream_t stream) {
    const int64_t total = batch * channels * (height + 2 * pad) * (width + 2 * pad);
    if (total <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (total + threads - 1) / threads;  // < 2**31 for total < 2**39
    hipLaunchKernelGGL(reflection_pad2d_naive_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, y, total,
                       height, width, pad);
    return (int)hipGetLastError();
}

// C = A @ B, fp32, row-major: the starting kernel.
//
// One thread per output element with a loop over k. Threads of a warp take neighbouring
// columns, so the loads of B are coalesced and A is broadcast, but every value of A and B
// is fetched from the memory hierarchy again for every output that uses it (no tiling,
// no register reuse): one load per multiply-add. Correct for every shape.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void gemm_naive_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                  int64_t m, int64_t n, int64_t k) {
    const int64_t col = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= n) return;
    for (int64_t row = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; row < m; row += (int64_t)gridDim.y * blockDim.y) {
        const float* ar = a + row * k;
        float acc = 0.0f;
        for (int64_t p = 0; p < k; ++p) acc += ar[p] * b[p * n + col];
        c[row * n + col] = acc;
    }
}

extern "C" int gemm_fp32(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
                         hipStream_t stream) {
    if (m <= 0 || n <= 0) return (int)hipSuccess;
    const dim3 block(32, 8);
    const int64_t gx = (n + 31) / 32;
    int64_t gy = (m + 7) / 8;
    if (gy > 65535) gy = 65535;
    hipLaunchKernelGGL(gemm_naive_kernel, dim3((unsigned int)gx, (unsigned int)gy), block, 0, stream, a, b, c, m, n, k);
    return (int)hipGetLastError();
}

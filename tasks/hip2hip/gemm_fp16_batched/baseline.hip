// Batched GEMM c[i] = a[i] @ b[i], fp16 in/out, fp32 accumulation: the starting kernel.
//
// One thread per output element with a loop over k; the batch index is the z grid
// dimension. Threads of a warp take neighbouring columns, so the loads of b are coalesced
// and a is broadcast, but every value of a and b is fetched from the memory hierarchy
// again for every output that uses it (no tiling, no register reuse): two scalar 2-byte
// loads per multiply-add. Correct for every shape.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void bgemm_naive_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ c,
                                   int64_t m, int64_t n, int64_t k) {
    const int64_t col = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t row = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (col >= n || row >= m) return;
    const int64_t i = blockIdx.z;
    const __half* ar = a + (i * m + row) * k;
    const __half* bi = b + i * k * n;
    float acc = 0.0f;
    for (int64_t p = 0; p < k; ++p) acc += __half2float(ar[p]) * __half2float(bi[p * n + col]);
    c[(i * m + row) * n + col] = __float2half_rn(acc);
}

extern "C" int gemm_fp16_batched(const __half* a, const __half* b, __half* c, int64_t batch, int64_t m, int64_t n,
                                 int64_t k, hipStream_t stream) {
    if (batch <= 0 || m <= 0 || n <= 0) return (int)hipSuccess;
    if (batch > 65535 || m > 65535 * 8) return (int)hipErrorInvalidValue;
    const dim3 block(32, 8);
    const dim3 grid((unsigned int)((n + 31) / 32), (unsigned int)((m + 7) / 8), (unsigned int)batch);
    hipLaunchKernelGGL(bgemm_naive_kernel, grid, block, 0, stream, a, b, c, m, n, k);
    return (int)hipGetLastError();
}

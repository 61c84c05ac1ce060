// MoE decode GEMV y[r] = w[expert_ids[r]] @ x[r], fp16 in/out, fp32 accumulation: the
// starting kernel.
//
// One thread per output element y[r, j] (the row r is the y grid dimension, so x[r] is a
// broadcast within a block): it looks up the row's expert and runs a sequential loop over
// k along row j of that expert's weight. Correct for every shape, but neighbouring threads
// read the weight at addresses a whole row (2k bytes) apart with scalar 2-byte loads, and
// rows routed to the same expert each read the expert's weight again.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void moe_gemv_naive_kernel(const __half* __restrict__ x, const int32_t* __restrict__ expert_ids,
                                      const __half* __restrict__ w, __half* __restrict__ y, int64_t n, int64_t k) {
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t r = blockIdx.y;
    if (j >= n) return;
    const int64_t e = expert_ids[r];
    const __half* wr = w + (e * n + j) * k;
    const __half* xr = x + r * k;
    float acc = 0.0f;
    for (int64_t p = 0; p < k; ++p) acc += __half2float(wr[p]) * __half2float(xr[p]);
    y[r * n + j] = __float2half_rn(acc);
}

extern "C" int moe_expert_gemv_fp16(const __half* x, const int32_t* expert_ids, const __half* w, __half* y,
                                    int64_t rows, int64_t experts, int64_t n, int64_t k, hipStream_t stream) {
    if (rows <= 0 || n <= 0) return (int)hipSuccess;
    if (rows > 65535) return (int)hipErrorInvalidValue;
    const int threads = 128;
    const dim3 grid((unsigned int)((n + threads - 1) / threads), (unsigned int)rows);
    hipLaunchKernelGGL(moe_gemv_naive_kernel, grid, dim3(threads), 0, stream, x, expert_ids, w, y, n, k);
    return (int)hipGetLastError();
}

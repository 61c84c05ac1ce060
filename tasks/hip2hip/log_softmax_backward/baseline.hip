// Log-softmax backward over the last dimension, fp16: the starting kernel.
//
// One block of 256 threads per row: a pass for sum(dy), combined by halving a
// shared-memory array with a barrier per step, then a pass that writes
// dx = dy - exp(logp) * sum(dy). Correct for every shape, but the loads are scalar 2-byte
// ones, dy is read twice, and with few rows only a few SMs work, each with a single block.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define LSMB_BASELINE_THREADS 256

__global__ void log_softmax_backward_block_per_row_kernel(const __half* __restrict__ dy,
                                                          const __half* __restrict__ logp, __half* __restrict__ dx,
                                                          int64_t rows, int64_t vocab) {
    __shared__ float red[LSMB_BASELINE_THREADS];
    const int t = threadIdx.x;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const __half* g = dy + row * vocab;
        const __half* lp = logp + row * vocab;
        __half* out = dx + row * vocab;

        float sum = 0.0f;
        for (int64_t j = t; j < vocab; j += LSMB_BASELINE_THREADS) sum += __half2float(g[j]);
        red[t] = sum;
        __syncthreads();
        for (int s = LSMB_BASELINE_THREADS / 2; s > 0; s /= 2) {
            if (t < s) red[t] += red[t + s];
            __syncthreads();
        }
        sum = red[0];
        __syncthreads();  // red is reused by the next row

        for (int64_t j = t; j < vocab; j += LSMB_BASELINE_THREADS)
            out[j] = __float2half(__half2float(g[j]) - expf(__half2float(lp[j])) * sum);
    }
}

extern "C" int log_softmax_backward(const __half* dy, const __half* logp, __half* dx, int64_t rows, int64_t vocab,
                                    hipStream_t stream) {
    if (rows <= 0 || vocab <= 0) return (int)hipSuccess;
    const int64_t blocks = rows < 2147483647LL ? rows : 2147483647LL;
    hipLaunchKernelGGL(log_softmax_backward_block_per_row_kernel, dim3((unsigned int)blocks),
                       dim3(LSMB_BASELINE_THREADS), 0, stream, dy, logp, dx, rows, vocab);
    return (int)hipGetLastError();
}

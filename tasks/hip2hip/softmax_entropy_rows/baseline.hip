// Entropy of softmax(x / T) per row, fp16 logits, fp32 out: the starting kernel.
//
// One block of 256 threads per row: a pass for the row maximum of z = x / T, a second
// pass for s = sum exp(z - max) and t = sum exp(z - max) * (z - max), each combined by
// halving a shared-memory array with a barrier per step; entropy = log(s) - t / s.
// Correct for every shape, but the loads are scalar 2-byte ones, the row is read twice,
// and with few rows only a few SMs work.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define ENT_BASELINE_THREADS 256

static __device__ float ent_block_reduce(float v, float* red, bool is_max) {
    const int t = threadIdx.x;
    red[t] = v;
    __syncthreads();
    for (int s = ENT_BASELINE_THREADS / 2; s > 0; s /= 2) {
        if (t < s) red[t] = is_max ? fmaxf(red[t], red[t + s]) : red[t] + red[t + s];
        __syncthreads();
    }
    const float total = red[0];
    __syncthreads();  // red is reused by the next reduction
    return total;
}

__global__ void softmax_entropy_block_per_row_kernel(const __half* __restrict__ x, float* __restrict__ entropy,
                                                     int64_t rows, int64_t vocab, float temperature) {
    __shared__ float red[ENT_BASELINE_THREADS];
    const int t = threadIdx.x;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const __half* xr = x + row * vocab;

        float m = -INFINITY;
        for (int64_t j = t; j < vocab; j += ENT_BASELINE_THREADS) m = fmaxf(m, __half2float(xr[j]) / temperature);
        m = ent_block_reduce(m, red, true);

        float s = 0.0f, w = 0.0f;
        for (int64_t j = t; j < vocab; j += ENT_BASELINE_THREADS) {
            const float d = __half2float(xr[j]) / temperature - m;
            const float e = expf(d);
            s += e;
            w += e * d;
        }
        s = ent_block_reduce(s, red, false);
        w = ent_block_reduce(w, red, false);
        if (t == 0) entropy[row] = logf(s) - w / s;
    }
}

extern "C" int softmax_entropy_rows(const __half* x, float* entropy, int64_t rows, int64_t vocab, float temperature,
                                    hipStream_t stream) {
    if (rows <= 0 || vocab <= 0) return (int)hipSuccess;
    const int64_t blocks = rows < 2147483647LL ? rows : 2147483647LL;
    hipLaunchKernelGGL(softmax_entropy_block_per_row_kernel, dim3((unsigned int)blocks), dim3(ENT_BASELINE_THREADS), 0,
                       stream, x, entropy, rows, vocab, temperature);
    return (int)hipGetLastError();
}

// Per-token cross-entropy with label smoothing and ignore_index, fp16 logits: the
// starting kernel.
//
// One block of 256 threads per row (rows whose target is ignore_index are skipped): a
// pass for the row maximum, a second pass for the sum of exp(x - max) and the plain sum
// of x, each combined by halving a shared-memory array with a barrier per step; thread 0
// then reads the target logit and writes the loss. Correct for every shape, but the loads
// are scalar 2-byte ones, the row is read twice, and with few rows only a few SMs work.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define CE_BASELINE_THREADS 256

static __device__ float ce_block_reduce(float v, float* red, bool is_max) {
    const int t = threadIdx.x;
    red[t] = v;
    __syncthreads();
    for (int s = CE_BASELINE_THREADS / 2; s > 0; s /= 2) {
        if (t < s) red[t] = is_max ? fmaxf(red[t], red[t + s]) : red[t] + red[t + s];
        __syncthreads();
    }
    const float total = red[0];
    __syncthreads();  // red is reused by the next reduction
    return total;
}

__global__ void cross_entropy_block_per_row_kernel(const __half* __restrict__ x, const int32_t* __restrict__ target,
                                                   float* __restrict__ loss, int64_t rows, int64_t vocab,
                                                   int64_t ignore_index, float label_smoothing) {
    __shared__ float red[CE_BASELINE_THREADS];
    const int t = threadIdx.x;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t tgt = target[row];
        if (tgt == ignore_index) {  // the same for the whole block
            if (t == 0) loss[row] = 0.0f;
            continue;
        }
        const __half* xr = x + row * vocab;

        float m = -INFINITY;
        for (int64_t j = t; j < vocab; j += CE_BASELINE_THREADS) m = fmaxf(m, __half2float(xr[j]));
        m = ce_block_reduce(m, red, true);

        float se = 0.0f, sx = 0.0f;
        for (int64_t j = t; j < vocab; j += CE_BASELINE_THREADS) {
            const float v = __half2float(xr[j]);
            se += expf(v - m);
            sx += v;
        }
        se = ce_block_reduce(se, red, false);
        sx = ce_block_reduce(sx, red, false);
        if (t == 0) {
            const float lse = m + logf(se);
            const float nll = lse - __half2float(xr[tgt]);
            const float smooth = lse - sx / (float)vocab;
            loss[row] = (1.0f - label_smoothing) * nll + label_smoothing * smooth;
        }
    }
}

extern "C" int cross_entropy_label_smoothing(const __half* x, const int32_t* target, float* loss, int64_t rows,
                                             int64_t vocab, int64_t ignore_index, float label_smoothing,
                                             hipStream_t stream) {
    if (rows <= 0 || vocab <= 0) return (int)hipSuccess;
    const int64_t blocks = rows < 2147483647LL ? rows : 2147483647LL;
    hipLaunchKernelGGL(cross_entropy_block_per_row_kernel, dim3((unsigned int)blocks), dim3(CE_BASELINE_THREADS), 0,
                       stream, x, target, loss, rows, vocab, ignore_index, label_smoothing);
    return (int)hipGetLastError();
}

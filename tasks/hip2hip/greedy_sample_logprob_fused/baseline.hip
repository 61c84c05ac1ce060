// Fused greedy sampling + log-probability of the chosen token (fp16 logits): the
// starting kernel.
//
// One block per row, two passes over the row with scalar 2-byte loads: pass 1 finds the
// maximum and its first index (block argmax: warp shuffles, then shared memory), pass 2
// sums exp((x - max) * inv_temperature). Correct for every shape, but the row is read
// twice, loads are scalar, and each long row is handled by one block.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>
#include <limits.h>

#define THREADS 256

__global__ void __launch_bounds__(THREADS)
greedy_logprob_two_pass_kernel(const __half* __restrict__ logits, int64_t* __restrict__ next,
                               float* __restrict__ logprob, int64_t batch, int64_t vocab, float inv_temperature) {
    __shared__ float s_v[32];
    __shared__ int s_i[32];
    __shared__ float s_max;

    const int64_t row = blockIdx.x;
    const __half* xr = logits + row * vocab;
    const int tid = threadIdx.x;
    const int lane = tid % warpSize;
    const int warp = tid / warpSize;
    const int nwarps = (THREADS + warpSize - 1) / warpSize;
    const int n = (int)vocab;

    // pass 1: max and its first index
    float bv = -INFINITY;
    int bi = INT_MAX;
    for (int c = tid; c < n; c += THREADS) {
        const float v = __half2float(xr[c]);
        if (v > bv) {  // indices grow within a thread: strict > keeps the first
            bv = v;
            bi = c;
        }
    }
    for (int off = warpSize / 2; off > 0; off >>= 1) {
        const float ov = __shfl_xor(bv, off);
        const int oi = __shfl_xor(bi, off);
        if (ov > bv || (ov == bv && oi < bi)) {
            bv = ov;
            bi = oi;
        }
    }
    if (lane == 0) {
        s_v[warp] = bv;
        s_i[warp] = bi;
    }
    __syncthreads();
    if (tid == 0) {
        float fv = s_v[0];
        int fi = s_i[0];
        for (int w = 1; w < nwarps; ++w) {
            if (s_v[w] > fv || (s_v[w] == fv && s_i[w] < fi)) {
                fv = s_v[w];
                fi = s_i[w];
            }
        }
        next[row] = (int64_t)fi;
        s_max = fv;
    }
    __syncthreads();
    const float mx = s_max;

    // pass 2: sum of exp((x - max) * inv_temperature)
    float sum = 0.0f;
    for (int c = tid; c < n; c += THREADS) sum += expf((__half2float(xr[c]) - mx) * inv_temperature);
    for (int off = warpSize / 2; off > 0; off >>= 1) sum += __shfl_xor(sum, off);
    __syncthreads();  // s_v is reused below
    if (lane == 0) s_v[warp] = sum;
    __syncthreads();
    if (tid == 0) {
        float total = 0.0f;
        for (int w = 0; w < nwarps; ++w) total += s_v[w];
        logprob[row] = -logf(total);
    }
}

extern "C" int greedy_sample_logprob_fused(const __half* logits, int64_t* next, float* logprob, int64_t batch,
                                           int64_t vocab, float inv_temperature, hipStream_t stream) {
    if (batch <= 0 || vocab <= 0) return (int)hipSuccess;
    hipLaunchKernelGGL(greedy_logprob_two_pass_kernel, dim3((unsigned int)batch), dim3(THREADS), 0, stream, logits,
                       next, logprob, batch, vocab, inv_temperature);
    return (int)hipGetLastError();
}

// Row argmax (greedy decoding), fp16 logits, int64 out: the starting kernel.
//
// One thread per row walks the whole vocabulary with scalar 2-byte loads, keeping the
// first index of the largest value (strict >, so ties keep the smaller index). Correct
// for every shape, but a batch of a few dozen rows runs a few dozen threads, each bound by
// the latency of its long sequential loop.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void argmax_thread_per_row_kernel(const __half* __restrict__ logits, int64_t* __restrict__ next,
                                             int64_t batch, int64_t vocab) {
    const int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    const __half* row = logits + b * vocab;
    float best = __half2float(row[0]);
    int64_t best_index = 0;
    for (int64_t v = 1; v < vocab; ++v) {
        const float x = __half2float(row[v]);
        if (x > best) {
            best = x;
            best_index = v;
        }
    }
    next[b] = best_index;
}

extern "C" int argmax_greedy_decode(const __half* logits, int64_t* next, int64_t batch, int64_t vocab,
                                    hipStream_t stream) {
    if (batch <= 0 || vocab <= 0) return (int)hipSuccess;
    const int threads = 64;  // small blocks spread the rows over more SMs
    const int64_t blocks = (batch + threads - 1) / threads;
    hipLaunchKernelGGL(argmax_thread_per_row_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, logits, next,
                       batch, vocab);
    return (int)hipGetLastError();
}

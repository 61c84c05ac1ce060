// Masked mean pooling over the sequence axis, fp16 in, fp32 out: the starting kernel.
//
// One thread per output value (sequence b, feature h): it walks the seq positions in
// order, adds hidden[b, s, h] where the mask is set and counts them, then divides.
// Neighbouring threads read neighbouring features, so the loads are coalesced, and padded
// positions are skipped. Correct for every shape, but the loads are scalar 2-byte ones,
// each thread's seq walk is one long chain (a batch * hidden_size threads only: little
// parallelism for small batches and long sequences), and the mask is re-read per thread.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void masked_mean_pooling_thread_per_output_kernel(const __half* __restrict__ hidden,
                                                             const bool* __restrict__ mask, float* __restrict__ out,
                                                             int64_t batch, int64_t seq, int64_t hidden_size) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= batch * hidden_size) return;
    const int64_t b = idx / hidden_size;
    const int64_t h = idx % hidden_size;
    const __half* x = hidden + b * seq * hidden_size + h;
    const bool* m = mask + b * seq;
    float sum = 0.0f;
    float count = 0.0f;
    for (int64_t s = 0; s < seq; ++s) {
        if (m[s]) {
            sum += __half2float(x[s * hidden_size]);
            count += 1.0f;
        }
    }
    out[idx] = sum / fmaxf(count, 1e-9f);
}

extern "C" int masked_mean_pooling(const __half* hidden, const bool* attention_mask, float* out, int64_t batch,
                                   int64_t seq, int64_t hidden_size, hipStream_t stream) {
    const int64_t n = batch * hidden_size;
    if (n <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    hipLaunchKernelGGL(masked_mean_pooling_thread_per_output_kernel, dim3((unsigned int)blocks), dim3(threads), 0,
                       stream, hidden, attention_mask, out, batch, seq, hidden_size);
    return (int)hipGetLastError();
}

// Depthwise causal conv1d (width 4) + SiLU, fp16: the starting kernel.
//
// One thread per (batch, channel) sequence, walking along time with the last three
// inputs kept in registers (the recurrent form of a causal convolution): each input is
// read once and each output written once. Correct for every shape, but neighbouring
// threads access addresses a whole sequence apart (uncoalesced 2-byte loads and stores),
// and a thread's work is serial over the sequence.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void conv1d_causal_seq_per_thread_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                                    const __half* __restrict__ bias, __half* __restrict__ y,
                                                    int64_t rows, int64_t dim, int64_t seqlen) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;  // b * dim + d
    if (row >= rows) return;
    const int64_t d = row % dim;
    const float w0 = __half2float(weight[d * 4 + 0]);  // multiplies x[t - 3]
    const float w1 = __half2float(weight[d * 4 + 1]);
    const float w2 = __half2float(weight[d * 4 + 2]);
    const float w3 = __half2float(weight[d * 4 + 3]);  // multiplies x[t]
    const float b = __half2float(bias[d]);
    const __half* xr = x + row * seqlen;
    __half* yr = y + row * seqlen;
    float x1 = 0.0f, x2 = 0.0f, x3 = 0.0f;  // x[t - 1], x[t - 2], x[t - 3]
    for (int64_t t = 0; t < seqlen; ++t) {
        const float xt = __half2float(xr[t]);
        const float z = b + w0 * x3 + w1 * x2 + w2 * x1 + w3 * xt;
        yr[t] = __float2half_rn(z / (1.0f + expf(-z)));
        x3 = x2;
        x2 = x1;
        x1 = xt;
    }
}

extern "C" int conv1d_causal(const __half* x, const __half* weight, const __half* bias, __half* y, int64_t batch,
                             int64_t dim, int64_t seqlen, hipStream_t stream) {
    const int64_t rows = batch * dim;
    if (rows <= 0 || seqlen <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(conv1d_causal_seq_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x,
                       weight, bias, y, rows, dim, seqlen);
    return (int)hipGetLastError();
}

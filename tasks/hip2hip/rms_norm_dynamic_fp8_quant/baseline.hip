// Fused RMSNorm + dynamic per-token fp8 (e4m3) quantisation: the starting kernel.
//
// One block of 256 threads per row, built from the task's helpers (norm_quant_utils.h): the
// threads stride over the row three times, once for the sum of squares, once for the absmax
// of the normalised values and once to quantise and store them, with a block reduction
// after each of the first two passes. Correct for every shape; each pass re-reads x and
// weight one half at a time, and q is written one byte at a time.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#include "norm_quant_utils.h"

__global__ void rms_norm_fp8_quant_rows(const __half* __restrict__ x, const __half* __restrict__ weight,
                                        uint8_t* __restrict__ q, float* __restrict__ scale, int64_t hidden,
                                        float eps) {
    __shared__ float scratch[nq::kMaxWarps];
    const int64_t row = blockIdx.x;
    const __half* xr = x + row * hidden;
    uint8_t* qr = q + row * hidden;

    float ss = 0.0f;
    for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
        const float v = __half2float(xr[c]);
        ss += v * v;
    }
    const float inv_rms = rsqrtf(nq::block_sum(ss, scratch) / (float)hidden + eps);

    float mx = 0.0f;
    for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
        const float y = __half2float(xr[c]) * inv_rms * __half2float(weight[c]);
        mx = fmaxf(mx, fabsf(y));
    }
    const float s = fmaxf(nq::block_max(mx, scratch) / nq::kFp8Max, nq::kMinScale);
    if (threadIdx.x == 0) scale[row] = s;

    for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
        const float y = __half2float(xr[c]) * inv_rms * __half2float(weight[c]);
        qr[c] = nq::float_to_e4m3fn(y / s);
    }
}

extern "C" int rms_norm_dynamic_fp8_quant(const __half* x, const __half* weight, uint8_t* q, float* scale,
                                          int64_t tokens, int64_t hidden, float eps, hipStream_t stream) {
    if (tokens <= 0 || hidden <= 0) return (int)hipSuccess;
    hipLaunchKernelGGL(rms_norm_fp8_quant_rows, dim3((unsigned int)tokens), dim3(256), 0, stream, x, weight, q,
                       scale, hidden, eps);
    return (int)hipGetLastError();
}

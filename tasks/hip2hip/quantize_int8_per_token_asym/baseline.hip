// Dynamic per-token asymmetric fp16 -> int8 quantisation: the starting kernel.
//
// One thread per token (row): a first pass over the row finds its min and max, then the
// scale and zero point are computed and a second pass writes the quantised row.
// Correct for every shape, but neighbouring threads touch addresses a whole row apart
// (uncoalesced), accesses are scalar, and the row is read twice.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void quant_row_per_thread_kernel(const __half* __restrict__ x, int8_t* __restrict__ q,
                                            float* __restrict__ scale, int32_t* __restrict__ zp, int64_t tokens,
                                            int64_t hidden) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= tokens) return;
    const __half* xr = x + row * hidden;
    int8_t* qr = q + row * hidden;

    float mn = INFINITY, mx = -INFINITY;
    for (int64_t j = 0; j < hidden; ++j) {
        const float v = __half2float(xr[j]);
        mn = fminf(mn, v);
        mx = fmaxf(mx, v);
    }
    const float rng = fmaxf(mx - mn, 1e-5f);
    const float s = rng * (1.0f / 255.0f);
    const float z = -128.0f - rintf(mn / s);
    scale[row] = s;
    zp[row] = (int32_t)z;

    for (int64_t j = 0; j < hidden; ++j) {
        float v = rintf(__half2float(xr[j]) / s) + z;
        v = fminf(fmaxf(v, -128.0f), 127.0f);
        qr[j] = (int8_t)(int)v;
    }
}

extern "C" int quantize_int8_per_token_asym(const __half* x, int8_t* q, float* scale, int32_t* zp, int64_t tokens,
                                            int64_t hidden, hipStream_t stream) {
    if (tokens <= 0 || hidden <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (tokens + threads - 1) / threads;
    hipLaunchKernelGGL(quant_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, q, scale,
                       zp, tokens, hidden);
    return (int)hipGetLastError();
}

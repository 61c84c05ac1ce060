// Softmax of scaled attention scores with a causal mask, fp16: the starting kernel.
//
// One thread per row (one query of one head), three sequential passes over the kv_len
// scores: the max of scale * x + mask, the sum of exponentials, then the write. The mask
// is added as written (0 or -inf by index), so masked scores are read like the others.
// Correct for every shape, but neighbouring threads read addresses a whole row apart
// (uncoalesced 2-byte accesses), each row is read three times and exp is computed twice.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

__global__ void softmax_scale_mask_row_per_thread_kernel(const __half* __restrict__ x, __half* __restrict__ y,
                                                         int64_t rows, int64_t q_len, int64_t kv_len, float scale) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;  // (b * heads + h) * q_len + i
    if (row >= rows) return;
    const int64_t i = row % q_len;
    const int64_t last = kv_len - q_len + i;  // the last key this query may see
    const __half* xr = x + row * kv_len;
    __half* yr = y + row * kv_len;

    float m = -INFINITY;
    for (int64_t j = 0; j < kv_len; ++j) {
        const float v = __half2float(xr[j]) * scale + (j <= last ? 0.0f : -INFINITY);
        m = fmaxf(m, v);
    }
    float s = 0.0f;
    for (int64_t j = 0; j < kv_len; ++j) {
        const float v = __half2float(xr[j]) * scale + (j <= last ? 0.0f : -INFINITY);
        s += expf(v - m);
    }
    for (int64_t j = 0; j < kv_len; ++j) {
        const float v = __half2float(xr[j]) * scale + (j <= last ? 0.0f : -INFINITY);
        yr[j] = __float2half_rn(expf(v - m) / s);
    }
}

extern "C" int softmax_scale_mask(const __half* x, __half* y, int64_t batch_heads, int64_t q_len, int64_t kv_len,
                                  float scale, hipStream_t stream) {
    const int64_t rows = batch_heads * q_len;
    if (rows <= 0 || kv_len <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (rows + threads - 1) / threads;
    hipLaunchKernelGGL(softmax_scale_mask_row_per_thread_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream,
                       x, y, rows, q_len, kv_len, scale);
    return (int)hipGetLastError();
}

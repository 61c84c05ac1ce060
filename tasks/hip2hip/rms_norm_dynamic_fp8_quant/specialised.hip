// Fused RMSNorm + dynamic per-token fp8 quantisation: a SPECIALISED kernel, tuned on the
// seen shapes and wrong elsewhere.
//
// Deliberately flawed (the harness must catch it). The fast path is the solution's
// register-resident row with 256 threads and 16-byte vectors, but with VPT = hidden / 2048
// fixed at compile time (1, 2, 4 or 8 on the seen shapes: hidden = 2048, 4096, 8192, 16384).
// VPT is rounded down, so when hidden is a multiple of 8 but not of 2048 (e.g. 5120 or 7168)
// the last hidden % 2048 columns are neither in the sum of squares nor written: q is partly
// unwritten and the rest uses a wrong rms and scale. Every access stays inside the row and
// aligned, so it never faults. Other shapes (hidden % 8 != 0, hidden < 2048, unaligned
// pointers) go to a plain, correct block-per-row kernel.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#include "norm_quant_utils.h"

namespace {

template <int VPT>
__global__ void __launch_bounds__(512) spec_rows(const __half* __restrict__ x,
                                                         const __half* __restrict__ weight,
                                                         uint8_t* __restrict__ q, float* __restrict__ scale,
                                                         int64_t hidden, float eps) {
    __shared__ float scratch[nq::kMaxWarps];
    const int64_t row = blockIdx.x;
    const int64_t vecs = (int64_t)VPT * blockDim.x;   // = (hidden / 2048) * 256 vectors
    const __half* xr = x + row * hidden;
    uint8_t* qr = q + row * hidden;

    float v[VPT][8];
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
        if (j < vecs) {
            nq::load_half8(xr + 8 * j, v[i]);
#pragma unroll
            for (int e = 0; e < 8; ++e) ss += v[i][e] * v[i][e];
        }
    }
    const float inv_rms = rsqrtf(nq::block_sum(ss, scratch) / (float)hidden + eps);

    float mx = 0.0f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
        if (j < vecs) {
            float w[8];
            nq::load_half8(weight + 8 * j, w);
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                v[i][e] = v[i][e] * inv_rms * w[e];
                mx = fmaxf(mx, fabsf(v[i][e]));
            }
        }
    }
    const float s = fmaxf(nq::block_max(mx, scratch) / nq::kFp8Max, nq::kMinScale);
    if (threadIdx.x == 0) scale[row] = s;

#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
        if (j < vecs) {
            uint8_t b[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) b[e] = nq::float_to_e4m3fn(v[i][e] / s);
            nq::store_byte8(qr + 8 * j, b);
        }
    }
}

// Any row: staged in shared memory as fp16 when STAGED (hidden * 2 bytes of dynamic shared
// memory), else read from global memory in each pass.
template <bool STAGED>
__global__ void __launch_bounds__(512) rows_any(const __half* __restrict__ x, const __half* __restrict__ weight,
                                                uint8_t* __restrict__ q, float* __restrict__ scale, int64_t hidden,
                                                float eps) {
    __shared__ float scratch[nq::kMaxWarps];
    extern __shared__ __half staged[];
    const int64_t row = blockIdx.x;
    const __half* xr = x + row * hidden;
    uint8_t* qr = q + row * hidden;

    float ss = 0.0f;
    for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x) {
        const __half h = xr[c];
        if (STAGED) staged[c] = h;
        const float f = __half2float(h);
        ss += f * f;
    }
    const float inv_rms = rsqrtf(nq::block_sum(ss, scratch) / (float)hidden + eps);
    const __half* src = STAGED ? staged : xr;   // block_sum's barriers order the staging writes

    float mx = 0.0f;
    for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x)
        mx = fmaxf(mx, fabsf(__half2float(src[c]) * inv_rms * __half2float(weight[c])));
    const float s = fmaxf(nq::block_max(mx, scratch) / nq::kFp8Max, nq::kMinScale);
    if (threadIdx.x == 0) scale[row] = s;

    for (int64_t c = threadIdx.x; c < hidden; c += blockDim.x)
        qr[c] = nq::float_to_e4m3fn(__half2float(src[c]) * inv_rms * __half2float(weight[c]) / s);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

extern "C" int rms_norm_dynamic_fp8_quant(const __half* x, const __half* weight, uint8_t* q, float* scale,
                                          int64_t tokens, int64_t hidden, float eps, hipStream_t stream) {
    if (tokens <= 0 || hidden <= 0) return (int)hipSuccess;
    const dim3 grid((unsigned int)tokens);
    const bool fast = hidden % 8 == 0 && hidden >= 2048 && hidden <= 16384 && aligned16(x) && aligned16(weight) &&
                      aligned16(q);
    const int vpt = (int)(hidden / 2048);
    if (fast) {
        switch (vpt) {
#define SPEC_CASE(N) \
            case N: \
                hipLaunchKernelGGL(spec_rows<N>, grid, dim3(256), 0, stream, x, weight, q, scale, hidden, eps); \
                break;
            SPEC_CASE(1) SPEC_CASE(2) SPEC_CASE(3) SPEC_CASE(4) SPEC_CASE(5) SPEC_CASE(6) SPEC_CASE(7)
            default:
                hipLaunchKernelGGL(spec_rows<8>, grid, dim3(256), 0, stream, x, weight, q, scale, hidden, eps);
                break;
#undef SPEC_CASE
        }
    } else {
        hipLaunchKernelGGL(rows_any<false>, grid, dim3(512), 0, stream, x, weight, q, scale, hidden, eps);
    }
    return (int)hipGetLastError();
}

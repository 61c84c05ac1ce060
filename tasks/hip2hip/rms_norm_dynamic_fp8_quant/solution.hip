// Fused RMSNorm + dynamic per-token fp8 quantisation: a general, portable solution.
//
// * Rows of a multiple of 8 halves with 16-byte aligned x and weight (every shape of the
//   seen split): one block per row keeps its whole row in registers as VPT vectors of 8
//   halves per thread (VPT = 1..4, a template parameter; 128..512 threads), so x is read from
//   global memory once, with 16-byte loads. The sum of squares and the absmax are two block
//   reductions over registers; the e4m3 codes of 8 values leave as one 8-byte store.
// * Rows longer than 4 x 8 x 512 halves, or unaligned ones: one block per row stages the row
//   in dynamic shared memory as fp16 (one global read, 2-byte loads) when it fits in 48 KB,
//   else falls back to re-reading it (from L2) pass by pass. Every shape is handled.
// * inv_rms, y = x * inv_rms * weight and the quotient y / scale are the task's formula; the
//   encoder is the header's.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#include "norm_quant_utils.h"

namespace {

template <int VPT>
__global__ void __launch_bounds__(512) rows_in_registers(const __half* __restrict__ x,
                                                         const __half* __restrict__ weight,
                                                         uint8_t* __restrict__ q, float* __restrict__ scale,
                                                         int64_t hidden, float eps) {
    __shared__ float scratch[nq::kMaxWarps];
    const int64_t row = blockIdx.x;
    const int64_t vecs = hidden / 8;
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
    const int64_t vecs = hidden / 8;
    const bool vec_ok = hidden % 8 == 0 && aligned16(x) && aligned16(weight) && aligned16(q);
    if (vec_ok && vecs <= 4 * 512) {
        int threads = vecs <= 128 ? 128 : (vecs <= 4 * 256 ? 256 : 512);
        const int vpt = (int)((vecs + threads - 1) / threads);
        switch (vpt) {
            case 1:
                hipLaunchKernelGGL(rows_in_registers<1>, grid, dim3(threads), 0, stream, x, weight, q, scale, hidden, eps);
                break;
            case 2:
                hipLaunchKernelGGL(rows_in_registers<2>, grid, dim3(threads), 0, stream, x, weight, q, scale, hidden, eps);
                break;
            case 3:
                hipLaunchKernelGGL(rows_in_registers<3>, grid, dim3(threads), 0, stream, x, weight, q, scale, hidden, eps);
                break;
            default:
                hipLaunchKernelGGL(rows_in_registers<4>, grid, dim3(threads), 0, stream, x, weight, q, scale, hidden, eps);
                break;
        }
    } else if (hidden * (int64_t)sizeof(__half) <= 48 * 1024) {
        hipLaunchKernelGGL(rows_any<true>, grid, dim3(512), (size_t)hidden * sizeof(__half), stream, x, weight, q,
                           scale, hidden, eps);
    } else {
        hipLaunchKernelGGL(rows_any<false>, grid, dim3(512), 0, stream, x, weight, q, scale, hidden, eps);
    }
    return (int)hipGetLastError();
}

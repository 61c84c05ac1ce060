// Fused RMSNorm + dynamic per-token fp8 quantisation: a general, portable solution.
//
// * Rows of up to 4 x 8 x 512 values with 16-byte aligned x, weight and q (every shape the
//   task allows): one block per row keeps its whole row in registers as VPT vectors of 8
//   halves per thread (VPT = 1..4, a template parameter; 128..512 threads), so x is read
//   from global memory once, with 16-byte loads. The sum of squares and the absmax are two
//   block reductions over registers; the e4m3 codes of 8 values leave as one 8-byte store.
//   When hidden % 8 != 0 (e.g. 5003, 4540) the rows start at different phases of 16 bytes:
//   each row is then a scalar head (< 8 values) up to its first 16-byte boundary, the
//   16-byte vectors, and a scalar tail (< 8 values), with weight read a half at a time
//   (it is the same for every block, so it comes from cache). A block per row with 2-byte
//   loads, as there was before for these rows, was latency bound and no faster than the
//   starting kernel.
// * Longer rows, or x / weight / q not 16-byte aligned: one block per row stages the row
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

// One block per row, the row in registers: thread t holds the 8-value vectors t, t + blockDim,
// ... (VPT of them) of the row's 16-byte aligned body. ALIGNED: hidden % 8 == 0, so every
// row starts on a 16-byte boundary and the body is the whole row, with weight read as
// 16-byte vectors too. Else the row's flat range [lo, lo + hidden) is a scalar head up to
// the first multiple of 8 (head < 8 values, channels 0 .. head - 1), the body from there
// (vector j = channels head + 8j .. head + 8j + 7: weight read one half at a time, from
// L1 / L2 since every block reads the same weight), and a scalar tail (< 8 values); thread
// t < head holds head value t, thread 8 <= t < 8 + tail the tail value t - 8. q's 8-byte
// stores line up with x's 16-byte loads (the same flat offset, a multiple of 8).
template <int VPT, bool ALIGNED>
__global__ void __launch_bounds__(512) rows_in_registers(const __half* __restrict__ x,
                                                         const __half* __restrict__ weight,
                                                         uint8_t* __restrict__ q, float* __restrict__ scale,
                                                         int64_t hidden, float eps) {
    __shared__ float scratch[nq::kMaxWarps];
    const int64_t row = blockIdx.x;
    const int64_t lo = row * hidden;
    int64_t alo = lo, nvec = hidden / 8, head = 0, tail = 0;
    if (!ALIGNED) {
        const int64_t hi = lo + hidden;
        alo = (lo + 7) / 8 * 8;
        if (alo > hi) alo = hi;
        int64_t ahi = hi / 8 * 8;
        if (ahi < alo) ahi = alo;
        nvec = (ahi - alo) / 8;
        head = alo - lo;
        tail = hi - ahi;
    }
    const __half* xr = x + alo;  // the body, 16-byte aligned
    uint8_t* qr = q + alo;       // 8-byte aligned
    const __half* wr = weight + head;

    float v[VPT][8];
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
        if (j < nvec) {
            nq::load_half8(xr + 8 * j, v[i]);
#pragma unroll
            for (int e = 0; e < 8; ++e) ss += v[i][e] * v[i][e];
        }
    }
    // the scalar head / tail value of this thread (flat index ei, channel ci), if any
    int64_t ei = -1, ci = 0;
    float ev = 0.0f;
    if (!ALIGNED) {
        const int t = threadIdx.x;
        if (t < head) {
            ei = lo + t;
            ci = t;
        } else if (t >= 8 && t - 8 < tail) {
            ei = alo + 8 * nvec + (t - 8);
            ci = head + 8 * nvec + (t - 8);
        }
        if (ei >= 0) {
            ev = __half2float(x[ei]);
            ss += ev * ev;
        }
    }
    const float inv_rms = rsqrtf(nq::block_sum(ss, scratch) / (float)hidden + eps);

    float mx = 0.0f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
        if (j < nvec) {
            float w[8];
            if (ALIGNED) {
                nq::load_half8(weight + 8 * j, w);
            } else {
#pragma unroll
                for (int e = 0; e < 8; ++e) w[e] = __half2float(wr[8 * j + e]);
            }
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                v[i][e] = v[i][e] * inv_rms * w[e];
                mx = fmaxf(mx, fabsf(v[i][e]));
            }
        }
    }
    if (!ALIGNED && ei >= 0) {
        ev = ev * inv_rms * __half2float(weight[ci]);
        mx = fmaxf(mx, fabsf(ev));
    }
    const float s = fmaxf(nq::block_max(mx, scratch) / nq::kFp8Max, nq::kMinScale);
    if (threadIdx.x == 0) scale[row] = s;

#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
        if (j < nvec) {
            uint8_t b[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) b[e] = nq::float_to_e4m3fn(v[i][e] / s);
            nq::store_byte8(qr + 8 * j, b);
        }
    }
    if (!ALIGNED && ei >= 0) q[ei] = nq::float_to_e4m3fn(ev / s);
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

template <bool ALIGNED>
void launch_rows(int vpt, dim3 grid, int threads, hipStream_t stream, const __half* x, const __half* weight,
                 uint8_t* q, float* scale, int64_t hidden, float eps) {
    switch (vpt) {
        case 1:
            hipLaunchKernelGGL((rows_in_registers<1, ALIGNED>), grid, dim3(threads), 0, stream, x, weight, q, scale,
                               hidden, eps);
            break;
        case 2:
            hipLaunchKernelGGL((rows_in_registers<2, ALIGNED>), grid, dim3(threads), 0, stream, x, weight, q, scale,
                               hidden, eps);
            break;
        case 3:
            hipLaunchKernelGGL((rows_in_registers<3, ALIGNED>), grid, dim3(threads), 0, stream, x, weight, q, scale,
                               hidden, eps);
            break;
        default:
            hipLaunchKernelGGL((rows_in_registers<4, ALIGNED>), grid, dim3(threads), 0, stream, x, weight, q, scale,
                               hidden, eps);
            break;
    }
}

}  // namespace

extern "C" int rms_norm_dynamic_fp8_quant(const __half* x, const __half* weight, uint8_t* q, float* scale,
                                          int64_t tokens, int64_t hidden, float eps, hipStream_t stream) {
    if (tokens <= 0 || hidden <= 0) return (int)hipSuccess;
    const dim3 grid((unsigned int)tokens);
    const int64_t vecs = hidden / 8;  // >= the body's vectors of any row
    const bool base_ok = aligned16(x) && aligned16(weight) && aligned16(q);
    if (base_ok && vecs <= 4 * 512) {
        int threads = vecs <= 128 ? 128 : (vecs <= 4 * 256 ? 256 : 512);
        const int vpt = (int)((vecs + threads - 1) / threads);
        if (hidden % 8 == 0)
            launch_rows<true>(vpt, grid, threads, stream, x, weight, q, scale, hidden, eps);
        else
            launch_rows<false>(vpt, grid, threads, stream, x, weight, q, scale, hidden, eps);
    } else if (hidden * (int64_t)sizeof(__half) <= 48 * 1024) {
        hipLaunchKernelGGL(rows_any<true>, grid, dim3(512), (size_t)hidden * sizeof(__half), stream, x, weight, q,
                           scale, hidden, eps);
    } else {
        hipLaunchKernelGGL(rows_any<false>, grid, dim3(512), 0, stream, x, weight, q, scale, hidden, eps);
    }
    return (int)hipGetLastError();
}

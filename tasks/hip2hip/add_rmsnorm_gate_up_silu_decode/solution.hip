// Reference solution: residual add + RMSNorm + merged gate/up GEMV + SiLU-mul in one kernel.
//
// - One block of 512 threads per 16 output columns j (gate row j and up row inter + j).
//   The block walks hidden in chunks of 512: all threads stage (x + residual) * norm_w
//   for every batch row of the chunk in shared memory (fp32, coalesced), accumulating each
//   row's sum of squares on the way; the RMS factor is applied at the end
//   (g = inv_rms * sum_k r_k norm_w_k w_jk), so the norm needs no separate pass.
// - Warps own columns (16 / (512 / warpSize) columns each: 1 on 32-lane, 2 on 64-lane
//   hardware). A warp streams its gate and up rows with 16-byte loads (8 halfs per lane)
//   when hidden % 8 == 0 (else element by element), and applies each weight to ALL batch
//   rows from shared memory: the weights are read from HBM exactly once.
// - Batch rows are a compile-time bucket (1, 2, 4, 8, 16) so accumulators stay in
//   registers; larger batches are processed 16 rows per launch.
// - Block 0 also writes residual_out (it stages every element once).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define SO_THREADS 512
#define SO_COLS 16
#define SO_KC 512            // == SO_THREADS: one staged element per thread and batch row
#define SO_MAX_TEAMS 128     // 512 threads / warps of >= 4 lanes
#define SO_MAX_CPT 2         // columns per warp: 16 / (512 / warpSize) for warpSize 32 or 64

template <int NB>
__global__ void __launch_bounds__(SO_THREADS)
fused_add_rmsnorm_gate_up_silu_kernel(const __half* __restrict__ x, const __half* __restrict__ residual,
                                      const __half* __restrict__ norm_w, const __half* __restrict__ w,
                                      __half* __restrict__ act, __half* __restrict__ residual_out, int batch,
                                      int64_t hidden, int64_t inter, float eps) {
    __shared__ float xs[NB * SO_KC];
    __shared__ float red[NB * 32];  // per-warp partial sums of squares (<= 32 warps of >= 16 lanes)

    const int tid = threadIdx.x;
    const int lane = tid % warpSize;
    const int team = tid / warpSize;
    const int teams = SO_THREADS / warpSize;
    const int cpt = (SO_COLS + teams - 1) / teams;
    const int64_t col0 = (int64_t)blockIdx.x * SO_COLS;
    const bool writer = blockIdx.x == 0;
    const bool vec = (hidden % 8) == 0;

    float ss[NB];
    float ag[SO_MAX_CPT][NB], au[SO_MAX_CPT][NB];
#pragma unroll
    for (int b = 0; b < NB; ++b) {
        ss[b] = 0.0f;
#pragma unroll
        for (int c = 0; c < SO_MAX_CPT; ++c) { ag[c][b] = 0.0f; au[c][b] = 0.0f; }
    }

    for (int64_t k0 = 0; k0 < hidden; k0 += SO_KC) {
        const int64_t rem = hidden - k0;
        const int kc = rem < SO_KC ? (int)rem : SO_KC;
        __syncthreads();  // the previous chunk's reads are done
        {
            const bool in = tid < kc;
            const float nw = in ? __half2float(norm_w[k0 + tid]) : 0.0f;
#pragma unroll
            for (int b = 0; b < NB; ++b) {
                float val = 0.0f;
                if (in && b < batch) {
                    const int64_t idx = (int64_t)b * hidden + k0 + tid;
                    const float r = __half2float(x[idx]) + __half2float(residual[idx]);
                    if (writer) residual_out[idx] = __float2half_rn(r);
                    ss[b] += r * r;
                    val = r * nw;
                }
                xs[b * SO_KC + tid] = val;
            }
        }
        __syncthreads();

#pragma unroll
        for (int c = 0; c < SO_MAX_CPT; ++c) {
            const int64_t col = col0 + team + (int64_t)c * teams;
            if (c >= cpt || col >= inter) continue;  // uniform per warp
            const __half* wg = w + col * hidden + k0;
            const __half* wu = w + (inter + col) * hidden + k0;
            if (vec) {
                for (int v = lane; v * 8 < kc; v += warpSize) {
                    const uint4 gu4 = *reinterpret_cast<const uint4*>(wg + v * 8);
                    const uint4 uu4 = *reinterpret_cast<const uint4*>(wu + v * 8);
                    const __half2* gh = reinterpret_cast<const __half2*>(&gu4);
                    const __half2* uh = reinterpret_cast<const __half2*>(&uu4);
                    float gf[8], uf[8];
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const float2 g2 = __half22float2(gh[e]);
                        const float2 u2 = __half22float2(uh[e]);
                        gf[2 * e] = g2.x; gf[2 * e + 1] = g2.y;
                        uf[2 * e] = u2.x; uf[2 * e + 1] = u2.y;
                    }
#pragma unroll
                    for (int b = 0; b < NB; ++b) {
                        const float* xb = xs + b * SO_KC + v * 8;
                        float sg = 0.0f, su = 0.0f;
#pragma unroll
                        for (int e = 0; e < 8; ++e) { sg += gf[e] * xb[e]; su += uf[e] * xb[e]; }
                        ag[c][b] += sg;
                        au[c][b] += su;
                    }
                }
            } else {
                for (int k = lane; k < kc; k += warpSize) {
                    const float gw = __half2float(wg[k]);
                    const float uw = __half2float(wu[k]);
#pragma unroll
                    for (int b = 0; b < NB; ++b) {
                        const float xv = xs[b * SO_KC + k];
                        ag[c][b] += gw * xv;
                        au[c][b] += uw * xv;
                    }
                }
            }
        }
    }

    // Sum of squares per batch row over the block: warp shuffles, then one partial per warp.
#pragma unroll
    for (int b = 0; b < NB; ++b) {
        float s = ss[b];
        for (int off = warpSize / 2; off > 0; off /= 2) s += __shfl_xor(s, off);
        ss[b] = s;
    }
    __syncthreads();
    if (lane == 0) {
#pragma unroll
        for (int b = 0; b < NB; ++b) red[b * 32 + team] = ss[b];
    }
    __syncthreads();
    float inv[NB];
#pragma unroll
    for (int b = 0; b < NB; ++b) {
        float s = 0.0f;
        for (int t = 0; t < teams; ++t) s += red[b * 32 + t];
        inv[b] = 1.0f / sqrtf(s / (float)hidden + eps);
    }

#pragma unroll
    for (int c = 0; c < SO_MAX_CPT; ++c) {
        const int64_t col = col0 + team + (int64_t)c * teams;
        if (c >= cpt) continue;  // uniform per warp
#pragma unroll
        for (int b = 0; b < NB; ++b) {
            float g = ag[c][b], u = au[c][b];
            for (int off = warpSize / 2; off > 0; off /= 2) {
                g += __shfl_xor(g, off);
                u += __shfl_xor(u, off);
            }
            if (lane == 0 && col < inter && b < batch) {
                g *= inv[b];
                u *= inv[b];
                act[(int64_t)b * inter + col] = __float2half_rn(g / (1.0f + expf(-g)) * u);
            }
        }
    }
}

template <int NB>
static void launch_bucket(const __half* x, const __half* residual, const __half* norm_w, const __half* w,
                          __half* act, __half* residual_out, int batch, int64_t hidden, int64_t inter, float eps,
                          hipStream_t stream) {
    const unsigned int blocks = (unsigned int)((inter + SO_COLS - 1) / SO_COLS);
    hipLaunchKernelGGL(fused_add_rmsnorm_gate_up_silu_kernel<NB>, dim3(blocks), dim3(SO_THREADS), 0, stream, x,
                       residual, norm_w, w, act, residual_out, batch, hidden, inter, eps);
}

extern "C" int add_rmsnorm_gate_up_silu(const __half* x, const __half* residual, const __half* norm_w,
                                        const __half* w_gate_up, __half* act, __half* residual_out, int64_t batch,
                                        int64_t hidden, int64_t inter, float eps, hipStream_t stream) {
    if (batch <= 0 || hidden <= 0 || inter <= 0) return (int)hipSuccess;
    for (int64_t b0 = 0; b0 < batch; b0 += 16) {
        const int nb = (int)(batch - b0 < 16 ? batch - b0 : 16);
        const __half* xg = x + b0 * hidden;
        const __half* rg = residual + b0 * hidden;
        __half* ro = residual_out + b0 * hidden;
        __half* ag = act + b0 * inter;
        if (nb <= 1) launch_bucket<1>(xg, rg, norm_w, w_gate_up, ag, ro, nb, hidden, inter, eps, stream);
        else if (nb <= 2) launch_bucket<2>(xg, rg, norm_w, w_gate_up, ag, ro, nb, hidden, inter, eps, stream);
        else if (nb <= 4) launch_bucket<4>(xg, rg, norm_w, w_gate_up, ag, ro, nb, hidden, inter, eps, stream);
        else if (nb <= 8) launch_bucket<8>(xg, rg, norm_w, w_gate_up, ag, ro, nb, hidden, inter, eps, stream);
        else launch_bucket<16>(xg, rg, norm_w, w_gate_up, ag, ro, nb, hidden, inter, eps, stream);
    }
    return (int)hipGetLastError();
}

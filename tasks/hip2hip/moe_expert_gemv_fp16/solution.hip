// MoE decode GEMV y[r] = w[expert_ids[r]] @ x[r], fp16 in/out, fp32 accumulation: a
// general, portable solution.
//
// * Grouped by expert: block (tile of 16 weight rows, expert e) first lists, in shared
//   memory, the rows routed to e (a scan of expert_ids, at most 512 ids); a block whose
//   expert has no rows exits at once, so idle experts are never read. The rows of e are
//   then processed in chunks of up to 8, so each weight row is streamed once per 8 rows
//   that share the expert instead of once per row.
// * Within the block each warp takes weight rows two at a time; its lanes stride over k
//   with 16-byte loads of 8 halves (coalesced), and each converted weight vector is
//   multiplied with the x vectors (16-byte loads, from L1 / L2) of every row of the
//   chunk: 2 x 8 fp32 accumulators per lane, reduced with a butterfly of __shfl_xor over
//   warpSize lanes (32 or 64). Loop bounds are warp-uniform, so whole warps reach the
//   shuffles.
// * k % 8 != 0 or unaligned bases: scalar, still coalesced, loads.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define MG_THREADS 256
#define MG_BJ 16        // weight rows per block
#define MG_RJ 2         // weight rows per warp pass
#define MG_TB 8         // token rows per chunk
#define MG_MAX_ROWS 512

static __device__ __forceinline__ float mg_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

static __device__ __forceinline__ void mg_unpack8(const uint4& u, float* f) {
    const unsigned int words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        f[2 * p] = __half2float(__ushort_as_half((unsigned short)(words[p] & 0xffffu)));
        f[2 * p + 1] = __half2float(__ushort_as_half((unsigned short)(words[p] >> 16)));
    }
}

template <bool VEC>
__global__ void __launch_bounds__(MG_THREADS)
moe_gemv_grouped_kernel(const __half* __restrict__ x, const int32_t* __restrict__ expert_ids,
                        const __half* __restrict__ w, __half* __restrict__ y, int64_t rows, int64_t n, int64_t k) {
    __shared__ int list[MG_MAX_ROWS];
    __shared__ int count;
    const int64_t e = blockIdx.y;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
        if (expert_ids[r] == e) list[atomicAdd(&count, 1)] = (int)r;
    __syncthreads();
    const int c = count;
    if (c == 0) return;  // the expert is idle: its weight is never read

    const int lane = threadIdx.x % warpSize;
    const int wid = threadIdx.x / warpSize;
    const int warps = blockDim.x / warpSize;
    const int rows_per_warp = MG_BJ / warps;  // 2 with 32-lane warps, 4 with 64-lane ones
    const __half* __restrict__ we = w + e * n * k;

    for (int jj = 0; jj < rows_per_warp; jj += MG_RJ) {
        const int64_t j0 = (int64_t)blockIdx.x * MG_BJ + (int64_t)wid * rows_per_warp + jj;
        if (j0 >= n) break;  // warp-uniform
        const __half* __restrict__ wr[MG_RJ];
#pragma unroll
        for (int q = 0; q < MG_RJ; ++q) wr[q] = we + (j0 + q < n ? j0 + q : n - 1) * k;

        for (int t0 = 0; t0 < c; t0 += MG_TB) {
            const int nt = c - t0 < MG_TB ? c - t0 : MG_TB;
            const __half* __restrict__ xr[MG_TB];
#pragma unroll
            for (int b = 0; b < MG_TB; ++b) xr[b] = x + (int64_t)list[t0 + (b < nt ? b : 0)] * k;
            float acc[MG_RJ][MG_TB];
#pragma unroll
            for (int q = 0; q < MG_RJ; ++q)
#pragma unroll
                for (int b = 0; b < MG_TB; ++b) acc[q][b] = 0.0f;

            if (VEC) {
                const int64_t nvec = k / 8;
                for (int64_t i = lane; i < nvec; i += warpSize) {
                    float wf[MG_RJ][8];
#pragma unroll
                    for (int q = 0; q < MG_RJ; ++q) mg_unpack8(reinterpret_cast<const uint4*>(wr[q])[i], wf[q]);
#pragma unroll
                    for (int b = 0; b < MG_TB; ++b) {
                        if (b < nt) {
                            float xf[8];
                            mg_unpack8(reinterpret_cast<const uint4*>(xr[b])[i], xf);
#pragma unroll
                            for (int q = 0; q < MG_RJ; ++q)
#pragma unroll
                                for (int s = 0; s < 8; ++s) acc[q][b] = fmaf(wf[q][s], xf[s], acc[q][b]);
                        }
                    }
                }
            } else {
                for (int64_t p = lane; p < k; p += warpSize) {
                    float wf[MG_RJ];
#pragma unroll
                    for (int q = 0; q < MG_RJ; ++q) wf[q] = __half2float(wr[q][p]);
#pragma unroll
                    for (int b = 0; b < MG_TB; ++b) {
                        if (b < nt) {
                            const float xv = __half2float(xr[b][p]);
#pragma unroll
                            for (int q = 0; q < MG_RJ; ++q) acc[q][b] = fmaf(wf[q], xv, acc[q][b]);
                        }
                    }
                }
            }
#pragma unroll
            for (int b = 0; b < MG_TB; ++b) {
                if (b < nt) {  // nt is warp-uniform
#pragma unroll
                    for (int q = 0; q < MG_RJ; ++q) acc[q][b] = mg_warp_sum(acc[q][b]);
                }
            }
            if (lane == 0) {
#pragma unroll
                for (int b = 0; b < MG_TB; ++b) {
                    if (b < nt) {
                        const int64_t r = list[t0 + b];
#pragma unroll
                        for (int q = 0; q < MG_RJ; ++q)
                            if (j0 + q < n) y[r * n + j0 + q] = __float2half_rn(acc[q][b]);
                    }
                }
            }
        }
    }
}

extern "C" int moe_expert_gemv_fp16(const __half* x, const int32_t* expert_ids, const __half* w, __half* y,
                                    int64_t rows, int64_t experts, int64_t n, int64_t k, hipStream_t stream) {
    if (rows <= 0 || n <= 0) return (int)hipSuccess;
    if (rows > MG_MAX_ROWS || experts > 65535) return (int)hipErrorInvalidValue;
    const dim3 grid((unsigned int)((n + MG_BJ - 1) / MG_BJ), (unsigned int)experts);
    const bool vec =
        k % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
    if (vec)
        hipLaunchKernelGGL(moe_gemv_grouped_kernel<true>, grid, dim3(MG_THREADS), 0, stream, x, expert_ids, w, y, rows,
                           n, k);
    else
        hipLaunchKernelGGL(moe_gemv_grouped_kernel<false>, grid, dim3(MG_THREADS), 0, stream, x, expert_ids, w, y,
                           rows, n, k);
    return (int)hipGetLastError();
}

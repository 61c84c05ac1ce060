// Weight-only int8 GEMV with per-row scales, fused dequantisation: a general, portable
// solution.
//
// * One warp per R output rows (R = 2 for 1-2 tokens, 4 for more): the lanes stride over k
//   together, so every load of q is coalesced; the batch size B (1..8) is a template
//   parameter, so the R x B fp32 accumulators live in registers.
// * Vector path (k % 16 == 0, q and x 16-byte aligned): per step a lane loads 16 int8
//   codes (one uint4) of each of its R rows, converts them to fp32 in registers, 8 at a
//   time, and multiplies them with 8 halves (one uint4) of x for each of the B tokens.
//   Each x vector loaded is used for R rows and each converted weight for B tokens; x
//   (at most 8 x 64 KB) stays in L1/L2.
// * Any other k or alignment: the same warp-per-R-rows structure with scalar, still
//   coalesced, loads.
// * Partial sums are combined with a butterfly of __shfl_xor over warpSize lanes (32 or
//   64); the scale is applied once per output, which is rounded to fp16 once.
// * The grid is sized for 32-lane warps; with 64-lane warps the grid-stride loop gives
//   each warp more rows. Loop bounds depend on the warp only (a missing last row re-reads
//   row n - 1 and is not stored), so whole warps reach the shuffles.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define I8_THREADS 256
#define I8_MAX_BATCH 8
#define I8_MAX_GRID 2147483647LL

static __device__ __forceinline__ float i8_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// The 4 signed bytes of a word as floats.
static __device__ __forceinline__ void i8_unpack4(unsigned int u, float* f) {
    f[0] = (float)(signed char)(u & 0xffu);
    f[1] = (float)(signed char)((u >> 8) & 0xffu);
    f[2] = (float)(signed char)((u >> 16) & 0xffu);
    f[3] = (float)(signed char)(u >> 24);
}

static __device__ __forceinline__ void i8_unpack_half8(const uint4& u, float* f) {
    const unsigned int words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        f[2 * p] = __half2float(__ushort_as_half((unsigned short)(words[p] & 0xffffu)));
        f[2 * p + 1] = __half2float(__ushort_as_half((unsigned short)(words[p] >> 16)));
    }
}

// Reduces the R x B accumulators over the warp and stores scale * sum for the valid rows.
template <int B, int R>
static __device__ __forceinline__ void i8_finish(float (&acc)[R][B], int lane, int64_t row0, const __half* scale,
                                                 __half* y, int64_t n) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int b = 0; b < B; ++b) acc[r][b] = i8_warp_sum(acc[r][b]);
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int64_t row = row0 + r;
            if (row < n) {
                const float s = __half2float(scale[row]);
#pragma unroll
                for (int b = 0; b < B; ++b) y[b * n + row] = __float2half_rn(acc[r][b] * s);
            }
        }
    }
}

// Requires k % 16 == 0 and 16-byte aligned q and x.
template <int B, int R>
__global__ void __launch_bounds__(I8_THREADS)
int8_gemv_vec16_kernel(const int8_t* __restrict__ q, const __half* __restrict__ scale, const __half* __restrict__ x,
                       __half* __restrict__ y, int64_t n, int64_t k) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t warp = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t nwarps = (int64_t)gridDim.x * warps_per_block;
    const int64_t nvec = k / 16;  // uint4 of codes per row
    for (int64_t row0 = warp * R; row0 < n; row0 += nwarps * R) {
        const uint4* __restrict__ qr[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int64_t row = row0 + r < n ? row0 + r : n - 1;
            qr[r] = reinterpret_cast<const uint4*>(q + row * k);
        }
        float acc[R][B];
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int b = 0; b < B; ++b) acc[r][b] = 0.0f;

        for (int64_t i = lane; i < nvec; i += warpSize) {
            uint4 code[R];
#pragma unroll
            for (int r = 0; r < R; ++r) code[r] = qr[r][i];
#pragma unroll
            for (int h = 0; h < 2; ++h) {  // codes 8h .. 8h + 7 of the 16
                float wf[R][8];
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    i8_unpack4(h == 0 ? code[r].x : code[r].z, wf[r]);
                    i8_unpack4(h == 0 ? code[r].y : code[r].w, wf[r] + 4);
                }
#pragma unroll
                for (int b = 0; b < B; ++b) {
                    // x[b, 16 i + 8 h .. + 7]: uint4 number 2 i + h of row b (k % 16 == 0)
                    const uint4 xu = reinterpret_cast<const uint4*>(x + b * k)[2 * i + h];
                    float xf[8];
                    i8_unpack_half8(xu, xf);
#pragma unroll
                    for (int r = 0; r < R; ++r)
#pragma unroll
                        for (int e = 0; e < 8; ++e) acc[r][b] = fmaf(wf[r][e], xf[e], acc[r][b]);
                }
            }
        }
        i8_finish<B, R>(acc, lane, row0, scale, y, n);
    }
}

// Any k and alignment: scalar coalesced loads.
template <int B, int R>
__global__ void __launch_bounds__(I8_THREADS)
int8_gemv_any_kernel(const int8_t* __restrict__ q, const __half* __restrict__ scale, const __half* __restrict__ x,
                     __half* __restrict__ y, int64_t n, int64_t k) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t warp = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t nwarps = (int64_t)gridDim.x * warps_per_block;
    for (int64_t row0 = warp * R; row0 < n; row0 += nwarps * R) {
        const int8_t* __restrict__ qr[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int64_t row = row0 + r < n ? row0 + r : n - 1;
            qr[r] = q + row * k;
        }
        float acc[R][B];
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int b = 0; b < B; ++b) acc[r][b] = 0.0f;
        for (int64_t j = lane; j < k; j += warpSize) {
            float wf[R];
#pragma unroll
            for (int r = 0; r < R; ++r) wf[r] = (float)qr[r][j];
#pragma unroll
            for (int b = 0; b < B; ++b) {
                const float xv = __half2float(x[b * k + j]);
#pragma unroll
                for (int r = 0; r < R; ++r) acc[r][b] = fmaf(wf[r], xv, acc[r][b]);
            }
        }
        i8_finish<B, R>(acc, lane, row0, scale, y, n);
    }
}

template <int B>
static void i8_launch(const int8_t* q, const __half* scale, const __half* x, __half* y, int64_t n, int64_t k,
                      hipStream_t stream) {
    constexpr int R = B <= 2 ? 2 : 4;
    const int64_t rows_per_block = (I8_THREADS / 32) * R;  // sized for 32-lane warps
    int64_t blocks = (n + rows_per_block - 1) / rows_per_block;
    if (blocks > I8_MAX_GRID) blocks = I8_MAX_GRID;
    const bool vec = k % 16 == 0 && (reinterpret_cast<uintptr_t>(q) % 16) == 0 &&
                     (reinterpret_cast<uintptr_t>(x) % 16) == 0;
    if (vec)
        hipLaunchKernelGGL((int8_gemv_vec16_kernel<B, R>), dim3((unsigned int)blocks), dim3(I8_THREADS), 0, stream, q,
                           scale, x, y, n, k);
    else
        hipLaunchKernelGGL((int8_gemv_any_kernel<B, R>), dim3((unsigned int)blocks), dim3(I8_THREADS), 0, stream, q,
                           scale, x, y, n, k);
}

extern "C" int int8_dequant_gemv(const int8_t* q, const __half* scale, const __half* x, __half* y, int64_t batch,
                                 int64_t n, int64_t k, hipStream_t stream) {
    if (batch > I8_MAX_BATCH) return (int)hipErrorInvalidValue;
    if (n <= 0 || batch <= 0) return (int)hipSuccess;
    switch ((int)batch) {
        case 1: i8_launch<1>(q, scale, x, y, n, k, stream); break;
        case 2: i8_launch<2>(q, scale, x, y, n, k, stream); break;
        case 3: i8_launch<3>(q, scale, x, y, n, k, stream); break;
        case 4: i8_launch<4>(q, scale, x, y, n, k, stream); break;
        case 5: i8_launch<5>(q, scale, x, y, n, k, stream); break;
        case 6: i8_launch<6>(q, scale, x, y, n, k, stream); break;
        case 7: i8_launch<7>(q, scale, x, y, n, k, stream); break;
        default: i8_launch<8>(q, scale, x, y, n, k, stream); break;
    }
    return (int)hipGetLastError();
}

// Weight-only int4 GEMV with group-wise scales (AWQ / GPTQ-style), fused dequantisation:
// a general, portable solution.
//
// * One warp per R output rows (R = 2 for 1-2 tokens, 4 for more): the lanes stride over
//   the row together, each taking 16 bytes (4 words = 32 codes) per step, so every load of
//   qweight is a coalesced 16-byte vector load. The batch size B (1..8) is a template
//   parameter, so the R x B fp32 accumulators live in registers.
// * k % 128 == 0, so the 32 codes of a lane's vector lie in one group: one scale load per
//   row and step. A code becomes (q - 8) * s without an int-to-float conversion: the
//   nibble is OR-ed into the mantissa of 2^23 and 2^23 + 8 subtracted (exact).
// * Each dequantised weight is used for the B tokens; x (at most 8 x 64 KB) is read as
//   16-byte vectors of 8 halves and stays in L1 / L2. Each x vector serves R rows.
// * Partial sums are combined with a butterfly of __shfl_xor over warpSize lanes (32 or
//   64) and rounded to fp16 once. The grid is sized for 32-lane warps; a grid-stride loop
//   covers any n. Loop bounds depend on the warp only (a missing last row re-reads row
//   n - 1 and is not stored), so whole warps reach the shuffles.
// * Unaligned qweight / x pointers (never from the harness) take a scalar word-per-lane
//   path with the same structure.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define I4_THREADS 256
#define I4_MAX_BATCH 8
#define I4_GROUP 128
#define I4_MAX_GRID 2147483647LL

static __device__ __forceinline__ float i4_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// The 8 codes of a word as (q - 8) * s.
static __device__ __forceinline__ void i4_dequant8(unsigned int word, float s, float* f) {
#pragma unroll
    for (int p = 0; p < 8; ++p) {
        const float q = __uint_as_float(0x4B000000u | ((word >> (4 * p)) & 15u)) - 8388616.0f;  // q - 8
        f[p] = q * s;
    }
}

static __device__ __forceinline__ void i4_half8(const uint4& u, float* f) {
    const unsigned int words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        f[2 * p] = __half2float(__ushort_as_half((unsigned short)(words[p] & 0xffffu)));
        f[2 * p + 1] = __half2float(__ushort_as_half((unsigned short)(words[p] >> 16)));
    }
}

template <int B, int R>
static __device__ __forceinline__ void i4_finish(float (&acc)[R][B], int lane, int64_t row0, __half* y, int64_t n) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int b = 0; b < B; ++b) acc[r][b] = i4_warp_sum(acc[r][b]);
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int64_t row = row0 + r;
            if (row < n) {
#pragma unroll
                for (int b = 0; b < B; ++b) y[b * n + row] = __float2half_rn(acc[r][b]);
            }
        }
    }
}

// 16-byte aligned qweight and x (k % 128 == 0 makes every row 16-byte aligned too).
template <int B, int R>
__global__ void __launch_bounds__(I4_THREADS)
int4_gemv_vec_kernel(const int32_t* __restrict__ qweight, const __half* __restrict__ scales,
                     const __half* __restrict__ x, __half* __restrict__ y, int64_t n, int64_t k) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t warp = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t nwarps = (int64_t)gridDim.x * warps_per_block;
    const int64_t nvec = k / 32;            // uint4 (32 codes) per row
    const int64_t groups = k / I4_GROUP;    // 4 uint4 per group
    for (int64_t row0 = warp * R; row0 < n; row0 += nwarps * R) {
        const uint4* __restrict__ qr[R];
        const __half* __restrict__ sr[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int64_t row = row0 + r < n ? row0 + r : n - 1;
            qr[r] = reinterpret_cast<const uint4*>(qweight + row * (k / 8));
            sr[r] = scales + row * groups;
        }
        float acc[R][B];
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int b = 0; b < B; ++b) acc[r][b] = 0.0f;

        for (int64_t i = lane; i < nvec; i += warpSize) {
            uint4 code[R];
            float s[R];
#pragma unroll
            for (int r = 0; r < R; ++r) {
                code[r] = qr[r][i];
                s[r] = __half2float(sr[r][i / 4]);
            }
#pragma unroll
            for (int h = 0; h < 4; ++h) {  // word h: codes 32 i + 8 h .. + 7
                float wf[R][8];
#pragma unroll
                for (int r = 0; r < R; ++r)
                    i4_dequant8(h == 0 ? code[r].x : h == 1 ? code[r].y : h == 2 ? code[r].z : code[r].w, s[r],
                                wf[r]);
#pragma unroll
                for (int b = 0; b < B; ++b) {
                    // x[b, 32 i + 8 h .. + 7]: uint4 number 4 i + h of row b
                    const uint4 xu = reinterpret_cast<const uint4*>(x + b * k)[4 * i + h];
                    float xf[8];
                    i4_half8(xu, xf);
#pragma unroll
                    for (int r = 0; r < R; ++r)
#pragma unroll
                        for (int e = 0; e < 8; ++e) acc[r][b] = fmaf(wf[r][e], xf[e], acc[r][b]);
                }
            }
        }
        i4_finish<B, R>(acc, lane, row0, y, n);
    }
}

// Any alignment: one word (8 codes) per lane and step, scalar loads.
template <int B, int R>
__global__ void __launch_bounds__(I4_THREADS)
int4_gemv_word_kernel(const int32_t* __restrict__ qweight, const __half* __restrict__ scales,
                      const __half* __restrict__ x, __half* __restrict__ y, int64_t n, int64_t k) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t warp = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t nwarps = (int64_t)gridDim.x * warps_per_block;
    const int64_t words = k / 8;
    const int64_t groups = k / I4_GROUP;
    for (int64_t row0 = warp * R; row0 < n; row0 += nwarps * R) {
        int64_t rows[R];
#pragma unroll
        for (int r = 0; r < R; ++r) rows[r] = row0 + r < n ? row0 + r : n - 1;
        float acc[R][B];
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int b = 0; b < B; ++b) acc[r][b] = 0.0f;
        for (int64_t c = lane; c < words; c += warpSize) {
            float wf[R][8];
#pragma unroll
            for (int r = 0; r < R; ++r)
                i4_dequant8((unsigned int)qweight[rows[r] * words + c],
                            __half2float(scales[rows[r] * groups + (c * 8) / I4_GROUP]), wf[r]);
#pragma unroll
            for (int b = 0; b < B; ++b)
#pragma unroll
                for (int e = 0; e < 8; ++e) {
                    const float xv = __half2float(x[b * k + c * 8 + e]);
#pragma unroll
                    for (int r = 0; r < R; ++r) acc[r][b] = fmaf(wf[r][e], xv, acc[r][b]);
                }
        }
        i4_finish<B, R>(acc, lane, row0, y, n);
    }
}

template <int B>
static void i4_launch(const int32_t* qweight, const __half* scales, const __half* x, __half* y, int64_t n, int64_t k,
                      hipStream_t stream) {
    constexpr int R = B <= 2 ? 2 : 4;
    const int64_t rows_per_block = (I4_THREADS / 32) * R;  // sized for 32-lane warps
    int64_t blocks = (n + rows_per_block - 1) / rows_per_block;
    if (blocks > I4_MAX_GRID) blocks = I4_MAX_GRID;
    const bool vec = (reinterpret_cast<uintptr_t>(qweight) % 16) == 0 && (reinterpret_cast<uintptr_t>(x) % 16) == 0;
    if (vec)
        hipLaunchKernelGGL((int4_gemv_vec_kernel<B, R>), dim3((unsigned int)blocks), dim3(I4_THREADS), 0, stream,
                           qweight, scales, x, y, n, k);
    else
        hipLaunchKernelGGL((int4_gemv_word_kernel<B, R>), dim3((unsigned int)blocks), dim3(I4_THREADS), 0, stream,
                           qweight, scales, x, y, n, k);
}

extern "C" int int4_awq_gemv(const int32_t* qweight, const __half* scales, const __half* x, __half* y, int64_t batch,
                             int64_t n, int64_t k, hipStream_t stream) {
    if (batch > I4_MAX_BATCH || k % I4_GROUP != 0) return (int)hipErrorInvalidValue;
    if (n <= 0 || batch <= 0) return (int)hipSuccess;
    switch ((int)batch) {
        case 1: i4_launch<1>(qweight, scales, x, y, n, k, stream); break;
        case 2: i4_launch<2>(qweight, scales, x, y, n, k, stream); break;
        case 3: i4_launch<3>(qweight, scales, x, y, n, k, stream); break;
        case 4: i4_launch<4>(qweight, scales, x, y, n, k, stream); break;
        case 5: i4_launch<5>(qweight, scales, x, y, n, k, stream); break;
        case 6: i4_launch<6>(qweight, scales, x, y, n, k, stream); break;
        case 7: i4_launch<7>(qweight, scales, x, y, n, k, stream); break;
        default: i4_launch<8>(qweight, scales, x, y, n, k, stream); break;
    }
    return (int)hipGetLastError();
}

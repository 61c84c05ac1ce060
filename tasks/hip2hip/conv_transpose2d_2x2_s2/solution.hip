// Transposed convolution 2x2, stride 2, NCHW fp16, fp32 accumulation: a general, portable
// solution (plain HIP, no WMMA / MFMA).
//
// * The op is a GEMM per image: C[p, q] = sum_ci x[n, ci, p] * weight[ci, q] with p a
//   pixel of the input (h * w of them) and q = 4 co + 2 i + j a column of the weight
//   viewed as [c_in, 4 c_out] (its memory layout). A block of 256 threads computes a
//   BM x BN tile of C for one image (the image is the z grid dimension), in steps of BK
//   input channels; each thread a TM x TN micro-tile (8 x 8 on 128 x 128 tiles, 4 x 4 on
//   64 x 64) fed by float4 shared-memory reads.
// * Both operands are already k-major in memory (row ci of x is the h * w pixels of
//   channel ci; row ci of the weight is 4 c_out contiguous values), so a step loads 8
//   consecutive pixels / columns per thread (16-byte vectors when h * w % 8 == 0, resp.
//   c_out % 2 == 0), converts them to fp32 and stores them as two float4 in shared memory.
//   The next step's vectors are loaded before the current step's arithmetic (register
//   double buffering).
// * Lanes of a warp take consecutive groups of 4 pixels, so in the epilogue a thread
//   holds, for each output channel co of its micro-tile, a 4-pixel x 2 x 2 patch: two
//   rows of 8 consecutive output halves (2w .. 2w + 7 of rows 2h and 2h + 1), stored as
//   16-byte vectors when w % 4 == 0 (the 4 pixels are then in one image row), else as
//   half2 per pixel. The bias is added in fp32; each y is rounded once.
// * Out-of-range pixels, channels and columns are zeros / not stored, so any shape works.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define CT_THREADS 256

static __device__ __forceinline__ void ct_unpack8(const uint4& u, float* f) {
    const unsigned int words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        f[2 * p] = __half2float(__ushort_as_half((unsigned short)(words[p] & 0xffffu)));
        f[2 * p + 1] = __half2float(__ushort_as_half((unsigned short)(words[p] >> 16)));
    }
}

static __device__ __forceinline__ unsigned int ct_pack2(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

// 8 consecutive halves row[c0 .. c0 + 7] of a row with `cols` columns; zeros past the end
// or when the row itself is out of range.
template <bool VEC>
static __device__ __forceinline__ void ct_load8(const __half* __restrict__ row, bool row_ok, int64_t c0, int64_t cols,
                                                float* f) {
    if (VEC) {  // cols % 8 == 0 and c0 % 8 == 0: all 8 in range or all out
        if (row_ok && c0 < cols) {
            ct_unpack8(*reinterpret_cast<const uint4*>(row + c0), f);
        } else {
#pragma unroll
            for (int q = 0; q < 8; ++q) f[q] = 0.0f;
        }
    } else {
#pragma unroll
        for (int q = 0; q < 8; ++q) f[q] = (row_ok && c0 + q < cols) ? __half2float(row[c0 + q]) : 0.0f;
    }
}

template <int BM, int BN, int BK, int TM, int TN, bool VEC_X, bool VEC_W, bool VEC_Y>
__global__ void __launch_bounds__(CT_THREADS, BM == 128 ? 2 : 1)
conv_t2x2_gemm_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                      const __half* __restrict__ bias, __half* __restrict__ y, int64_t c_in, int64_t c_out,
                      int64_t height, int64_t width) {
    static_assert(BM * BK == 8 * CT_THREADS && BN * BK == 8 * CT_THREADS, "one 8-half vector per thread and tile");
    static_assert((BM / TM) * (BN / TN) == CT_THREADS, "16 x 16 threads");
    static_assert(BM / (TM / 4) == 64 && BN / (TN / 4) == 64, "groups of 4 spaced 64");
    constexpr int AS = BM + 4;  // floats per k-row of the pixel tile (16-byte multiple)
    constexpr int BS = BN + 4;
    __shared__ float4 as4[BK * AS / 4];
    __shared__ float4 bs4[BK * BS / 4];
    float* as = reinterpret_cast<float*>(as4);
    float* bs = reinterpret_cast<float*>(bs4);

    const int64_t P = height * width;
    const int64_t Q = 4 * c_out;
    const int tid = threadIdx.x;
    const int tm = tid % (BM / TM);  // lanes of a warp: consecutive pixel groups
    const int tn = tid / (BM / TM);
    const int64_t img = blockIdx.z;
    const int64_t p0 = (int64_t)blockIdx.y * BM;
    const int64_t q0 = (int64_t)blockIdx.x * BN;
    const __half* __restrict__ xi = x + img * c_in * P;

    const int a_k = tid / (BM / 8);
    const int a_m = (tid % (BM / 8)) * 8;
    const int b_k = tid / (BN / 8);
    const int b_n = (tid % (BN / 8)) * 8;

    float ra[8], rb[8];
    ct_load8<VEC_X>(xi + (int64_t)a_k * P, a_k < c_in, p0 + a_m, P, ra);
    ct_load8<VEC_W>(weight + (int64_t)b_k * Q, b_k < c_in, q0 + b_n, Q, rb);

    float acc[TM][TN];
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int s = 0; s < TN; ++s) acc[r][s] = 0.0f;

    for (int64_t k0 = 0; k0 < c_in; k0 += BK) {
        *reinterpret_cast<float4*>(as + a_k * AS + a_m) = make_float4(ra[0], ra[1], ra[2], ra[3]);
        *reinterpret_cast<float4*>(as + a_k * AS + a_m + 4) = make_float4(ra[4], ra[5], ra[6], ra[7]);
        *reinterpret_cast<float4*>(bs + b_k * BS + b_n) = make_float4(rb[0], rb[1], rb[2], rb[3]);
        *reinterpret_cast<float4*>(bs + b_k * BS + b_n + 4) = make_float4(rb[4], rb[5], rb[6], rb[7]);
        __syncthreads();
        if (k0 + BK < c_in) {  // in flight during the arithmetic below
            const int64_t ka = k0 + BK + a_k, kb = k0 + BK + b_k;
            ct_load8<VEC_X>(xi + ka * P, ka < c_in, p0 + a_m, P, ra);
            ct_load8<VEC_W>(weight + kb * Q, kb < c_in, q0 + b_n, Q, rb);
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float av[TM], bv[TN];
#pragma unroll
            for (int g = 0; g < TM / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(as + kk * AS + g * 64 + 4 * tm);
                av[4 * g] = v.x;
                av[4 * g + 1] = v.y;
                av[4 * g + 2] = v.z;
                av[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int g = 0; g < TN / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(bs + kk * BS + g * 64 + 4 * tn);
                bv[4 * g] = v.x;
                bv[4 * g + 1] = v.y;
                bv[4 * g + 2] = v.z;
                bv[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int r = 0; r < TM; ++r)
#pragma unroll
                for (int s = 0; s < TN; ++s) acc[r][s] = fmaf(av[r], bv[s], acc[r][s]);
        }
        __syncthreads();  // the tiles are overwritten by the next step
    }

    // Epilogue. Column group g of the micro-tile is one output channel co (its 4 taps);
    // pixel group gr is 4 consecutive pixels.
    const int64_t oh2 = 2 * height, ow2 = 2 * width;
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
        const int64_t co = (q0 + g * 64 + 4 * tn) / 4;
        if (co >= c_out) continue;
        const float b = __half2float(bias[co]);
        __half* __restrict__ yc = y + (img * c_out + co) * oh2 * ow2;
#pragma unroll
        for (int gr = 0; gr < TM / 4; ++gr) {
            const int64_t p = p0 + gr * 64 + 4 * tm;
            if (p >= P) continue;
            if (VEC_Y) {  // width % 4 == 0: p .. p + 3 are in one image row, 16-byte aligned output
                const int64_t h = p / width, w = p % width;
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    uint4 u;
                    u.x = ct_pack2(acc[4 * gr + 0][4 * g + 2 * i] + b, acc[4 * gr + 0][4 * g + 2 * i + 1] + b);
                    u.y = ct_pack2(acc[4 * gr + 1][4 * g + 2 * i] + b, acc[4 * gr + 1][4 * g + 2 * i + 1] + b);
                    u.z = ct_pack2(acc[4 * gr + 2][4 * g + 2 * i] + b, acc[4 * gr + 2][4 * g + 2 * i + 1] + b);
                    u.w = ct_pack2(acc[4 * gr + 3][4 * g + 2 * i] + b, acc[4 * gr + 3][4 * g + 2 * i + 1] + b);
                    *reinterpret_cast<uint4*>(yc + (2 * h + i) * ow2 + 2 * w) = u;
                }
            } else {
#pragma unroll
                for (int pp = 0; pp < 4; ++pp) {
                    const int64_t pix = p + pp;
                    if (pix >= P) break;
                    const int64_t h = pix / width, w = pix % width;
#pragma unroll
                    for (int i = 0; i < 2; ++i) {
                        const unsigned int v =
                            ct_pack2(acc[4 * gr + pp][4 * g + 2 * i] + b, acc[4 * gr + pp][4 * g + 2 * i + 1] + b);
                        *reinterpret_cast<unsigned int*>(yc + (2 * h + i) * ow2 + 2 * w) = v;  // 4-byte aligned
                    }
                }
            }
        }
    }
}

template <int BM, int BN, int BK, int TM, int TN>
static void ct_launch(const __half* x, const __half* weight, const __half* bias, __half* y, int64_t batch,
                      int64_t c_in, int64_t c_out, int64_t height, int64_t width, hipStream_t stream) {
    const int64_t P = height * width;
    const dim3 grid((unsigned int)((4 * c_out + BN - 1) / BN), (unsigned int)((P + BM - 1) / BM),
                    (unsigned int)batch);
    const bool vx = P % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const bool vw = c_out % 2 == 0 && reinterpret_cast<uintptr_t>(weight) % 16 == 0;
    const bool vy = width % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
#define CT_GO(A, B, C)                                                                                          \
    hipLaunchKernelGGL((conv_t2x2_gemm_kernel<BM, BN, BK, TM, TN, A, B, C>), grid, dim3(CT_THREADS), 0, stream, \
                       x, weight, bias, y, c_in, c_out, height, width)
    if (vx && vw) {
        if (vy) CT_GO(true, true, true); else CT_GO(true, true, false);
    } else if (vx) {
        if (vy) CT_GO(true, false, true); else CT_GO(true, false, false);
    } else if (vw) {
        if (vy) CT_GO(false, true, true); else CT_GO(false, true, false);
    } else {
        if (vy) CT_GO(false, false, true); else CT_GO(false, false, false);
    }
#undef CT_GO
}

extern "C" int conv_transpose2d_2x2_s2(const __half* x, const __half* weight, const __half* bias, __half* y,
                                       int64_t batch, int64_t c_in, int64_t c_out, int64_t height, int64_t width,
                                       hipStream_t stream) {
    if (batch <= 0 || c_out <= 0 || height <= 0 || width <= 0) return (int)hipSuccess;
    if (batch > 65535 || (height * width + 63) / 64 > 65535) return (int)hipErrorInvalidValue;
    const int64_t P = height * width;
    const int64_t big_tiles = batch * ((P + 127) / 128) * ((4 * c_out + 127) / 128);
    if (big_tiles >= 528)
        ct_launch<128, 128, 16, 8, 8>(x, weight, bias, y, batch, c_in, c_out, height, width, stream);
    else
        ct_launch<64, 64, 32, 4, 4>(x, weight, bias, y, batch, c_in, c_out, height, width, stream);
    return (int)hipGetLastError();
}

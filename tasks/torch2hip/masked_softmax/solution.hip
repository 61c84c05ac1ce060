// Reference solution for probs = softmax(scores * scale + mask) over the last dimension,
// scores and probs fp16 [batch, heads, q_len, k_len], mask fp32 [batch, 1, q_len, k_len].
//
// - One pass: each score is read once, each probability written once; the row stays in
//   registers between the max, the sum and the normalisation. The mask row of (b, i) is read
//   by the `heads` rows that share it, mostly from L2 (it is 1/heads of the traffic).
// - A row is handled by a group of G threads (G a power of two): several rows per 256-thread
//   block for short rows, one row per block of G threads for long ones. Each thread holds up
//   to VPT vectors of W elements, vector v of the row at v = lane + j * G.
// - Vectors: 16-byte fp16 accesses (W = 8, and two float4 of the mask) when k_len % 8 == 0
//   and the pointers are 16-byte aligned; __half2 / float2 (W = 2) when k_len is even;
//   scalars (W = 1) otherwise (odd k_len puts rows at odd offsets).
// - Reductions: within a group of at most a warp, a butterfly of __shfl_xor with offsets
//   < G (groups are aligned, so lanes never mix rows); a group of several warps adds a
//   round through shared memory. Nothing assumes a warp width (32 on NVIDIA, 64 on AMD CDNA):
//   the branch is on warpSize and groups never straddle warps when G <= warpSize.
// - fp32 throughout; exp via exp2f((x - max) * log2(e)); one reciprocal per row. Masked
//   keys (mask = -FLT_MAX, or -inf) give exp(...) = 0; a row whose keys are all masked with
//   the same finite value gets the uniform distribution, as in PyTorch.
// - Rows too long for the register cache (k_len > 8192 on the scalar path; outside the
//   task's shape space) take a three-pass kernel that re-reads the row.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

namespace {

constexpr int kMinWarpSize = 32;                   // narrowest warp on any target
constexpr int kMaxBlock = 1024;
constexpr int kScratch = kMaxBlock / kMinWarpSize;  // one slot per warp of the largest block
constexpr int kRowsBlock = 256;                    // block size when a block holds several rows
constexpr int64_t kMaxGrid = 2147483647;
constexpr float kLog2e = 1.4426950408889634f;

struct MaxOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

// Reduce over each aligned group of G consecutive threads; every thread of the group gets
// the result. Called by every thread of the block (it may synchronise the block).
template <int G, class Op>
__device__ __forceinline__ float group_reduce(float v, float* scratch, Op op) {
    if (G <= warpSize) {
        for (int offset = G / 2; offset > 0; offset >>= 1) v = op(v, __shfl_xor(v, offset));
        return v;
    }
    // G > warpSize: a group is G / warpSize whole warps.
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) v = op(v, __shfl_xor(v, offset));
    const int warp = threadIdx.x / warpSize;
    const int warps_per_group = G / warpSize;
    if (threadIdx.x % warpSize == 0) scratch[warp] = v;
    __syncthreads();
    const int first = (warp / warps_per_group) * warps_per_group;
    float r = scratch[first];
    for (int w = 1; w < warps_per_group; ++w) r = op(r, scratch[first + w]);
    __syncthreads();  // scratch is reused by the next reduction
    return r;
}

template <int W> struct Vec;

template <> struct Vec<8> {
    static __device__ __forceinline__ void load(const __half* s, const float* m, float scale, float (&x)[8]) {
        const uint4 u = *reinterpret_cast<const uint4*>(s);
        const float4 m0 = *reinterpret_cast<const float4*>(m);
        const float4 m1 = *reinterpret_cast<const float4*>(m + 4);
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
        const float mk[8] = {m0.x, m0.y, m0.z, m0.w, m1.x, m1.y, m1.z, m1.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            x[2 * k] = fmaf(__half2float(__ushort_as_half(static_cast<unsigned short>(w[k] & 0xffffu))), scale, mk[2 * k]);
            x[2 * k + 1] = fmaf(__half2float(__ushort_as_half(static_cast<unsigned short>(w[k] >> 16))), scale, mk[2 * k + 1]);
        }
    }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[8]) {
        unsigned w[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            w[k] = static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k]))) |
                   (static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k + 1]))) << 16);
        }
        *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    }
};

template <> struct Vec<2> {
    static __device__ __forceinline__ void load(const __half* s, const float* m, float scale, float (&x)[2]) {
        const float2 v = __half22float2(*reinterpret_cast<const __half2*>(s));
        const float2 mk = *reinterpret_cast<const float2*>(m);
        x[0] = fmaf(v.x, scale, mk.x);
        x[1] = fmaf(v.y, scale, mk.y);
    }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[2]) {
        *reinterpret_cast<__half2*>(p) = __floats2half2_rn(f[0], f[1]);
    }
};

template <> struct Vec<1> {
    static __device__ __forceinline__ void load(const __half* s, const float* m, float scale, float (&x)[1]) {
        x[0] = fmaf(__half2float(*s), scale, *m);
    }
    static __device__ __forceinline__ void store(__half* p, const float (&f)[1]) { *p = __float2half_rn(f[0]); }
};

// Rows of nvec <= G * VPT vectors of W elements, one group of G threads per row.
template <int W, int G, int VPT>
__global__ void __launch_bounds__(G > kRowsBlock ? G : kRowsBlock)
masked_softmax_cached(const __half* __restrict__ scores, const float* __restrict__ mask,
                      __half* __restrict__ probs, int64_t rows, int64_t heads, int64_t q_len,
                      int64_t k_len, float scale) {
    constexpr int kBlock = G > kRowsBlock ? G : kRowsBlock;
    constexpr int kRowsPerBlock = kBlock / G;
    __shared__ float scratch[kScratch];
    const int lane = threadIdx.x % G;
    const int group = threadIdx.x / G;
    const int nvec = static_cast<int>(k_len / W);
    const int64_t heads_q = heads * q_len;

    for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock; first < rows;
         first += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
        const int64_t row = first + group;
        const bool active = row < rows;  // inactive threads still take part in the reductions
        const int64_t b = row / heads_q;
        const int64_t i = row % q_len;
        const __half* s = scores + row * k_len;
        const float* m = mask + (b * q_len + i) * k_len;
        __half* p = probs + row * k_len;

        float x[VPT][W];
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int v = lane + j * G;
            if (active && v < nvec) {
                Vec<W>::load(s + static_cast<int64_t>(v) * W, m + static_cast<int64_t>(v) * W, scale, x[j]);
#pragma unroll
                for (int e = 0; e < W; ++e) mx = fmaxf(mx, x[j][e]);
            }
        }
        mx = group_reduce<G>(mx, scratch, MaxOp());
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int v = lane + j * G;
            if (active && v < nvec) {
#pragma unroll
                for (int e = 0; e < W; ++e) {
                    x[j][e] = exp2f((x[j][e] - mx) * kLog2e);
                    sum += x[j][e];
                }
            }
        }
        sum = group_reduce<G>(sum, scratch, SumOp());
        const float inv = 1.0f / sum;
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int v = lane + j * G;
            if (active && v < nvec) {
#pragma unroll
                for (int e = 0; e < W; ++e) x[j][e] *= inv;
                Vec<W>::store(p + static_cast<int64_t>(v) * W, x[j]);
            }
        }
    }
}

// Any row length: one block per row, the row read three times (max, sum, write).
constexpr int kLongBlock = 512;

__global__ void __launch_bounds__(kLongBlock)
masked_softmax_long(const __half* __restrict__ scores, const float* __restrict__ mask,
                    __half* __restrict__ probs, int64_t rows, int64_t heads, int64_t q_len,
                    int64_t k_len, float scale) {
    __shared__ float scratch[kScratch];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t b = row / (heads * q_len);
        const int64_t i = row % q_len;
        const __half* s = scores + row * k_len;
        const float* m = mask + (b * q_len + i) * k_len;
        __half* p = probs + row * k_len;
        float mx = -INFINITY;
        for (int64_t v = threadIdx.x; v < k_len; v += kLongBlock) mx = fmaxf(mx, fmaf(__half2float(s[v]), scale, m[v]));
        mx = group_reduce<kLongBlock>(mx, scratch, MaxOp());
        float sum = 0.0f;
        for (int64_t v = threadIdx.x; v < k_len; v += kLongBlock)
            sum += exp2f((fmaf(__half2float(s[v]), scale, m[v]) - mx) * kLog2e);
        sum = group_reduce<kLongBlock>(sum, scratch, SumOp());
        const float inv = 1.0f / sum;
        for (int64_t v = threadIdx.x; v < k_len; v += kLongBlock)
            p[v] = __float2half_rn(exp2f((fmaf(__half2float(s[v]), scale, m[v]) - mx) * kLog2e) * inv);
    }
}

typedef void (*KernelFn)(const __half*, const float*, __half*, int64_t, int64_t, int64_t, int64_t, float);

// The smallest group (a power of two) that covers nvec vectors with VPT per thread.
template <int W, int VPT>
KernelFn pick(int64_t nvec, int* block, int* rows_per_block) {
    const int64_t need = (nvec + VPT - 1) / VPT;
    KernelFn fn = nullptr;
    int g = 0;
    if (need <= 4)         { g = 4;    fn = masked_softmax_cached<W, 4, VPT>; }
    else if (need <= 8)    { g = 8;    fn = masked_softmax_cached<W, 8, VPT>; }
    else if (need <= 16)   { g = 16;   fn = masked_softmax_cached<W, 16, VPT>; }
    else if (need <= 32)   { g = 32;   fn = masked_softmax_cached<W, 32, VPT>; }
    else if (need <= 64)   { g = 64;   fn = masked_softmax_cached<W, 64, VPT>; }
    else if (need <= 128)  { g = 128;  fn = masked_softmax_cached<W, 128, VPT>; }
    else if (need <= 256)  { g = 256;  fn = masked_softmax_cached<W, 256, VPT>; }
    else if (need <= 512)  { g = 512;  fn = masked_softmax_cached<W, 512, VPT>; }
    else if (need <= 1024) { g = 1024; fn = masked_softmax_cached<W, 1024, VPT>; }
    else return nullptr;
    *block = g > kRowsBlock ? g : kRowsBlock;
    *rows_per_block = *block / g;
    return fn;
}

}  // namespace

extern "C" int masked_softmax(const __half* scores, const float* mask, __half* probs, int64_t batch,
                              int64_t heads, int64_t q_len, int64_t k_len, float scale, hipStream_t stream) {
    if (batch <= 0 || heads <= 0 || q_len <= 0 || k_len <= 0) return static_cast<int>(hipSuccess);
    const int64_t rows = batch * heads * q_len;
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(scores) | reinterpret_cast<uintptr_t>(mask) |
                                reinterpret_cast<uintptr_t>(probs);
    int block = 0;
    int rows_per_block = 1;
    KernelFn fn = nullptr;
    if (k_len % 8 == 0 && addresses % 16 == 0) {
        fn = pick<8, 2>(k_len / 8, &block, &rows_per_block);
    } else if (k_len % 2 == 0 && addresses % 8 == 0) {
        fn = pick<2, 4>(k_len / 2, &block, &rows_per_block);
    } else {
        fn = pick<1, 8>(k_len, &block, &rows_per_block);
    }
    if (fn != nullptr) {
        const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        const unsigned grid = static_cast<unsigned>(blocks < kMaxGrid ? blocks : kMaxGrid);
        hipLaunchKernelGGL(fn, dim3(grid), dim3(block), 0, stream, scores, mask, probs, rows, heads, q_len, k_len, scale);
    } else {
        const unsigned grid = static_cast<unsigned>(rows < kMaxGrid ? rows : kMaxGrid);
        hipLaunchKernelGGL(masked_softmax_long, dim3(grid), dim3(kLongBlock), 0, stream,
                           scores, mask, probs, rows, heads, q_len, k_len, scale);
    }
    return static_cast<int>(hipGetLastError());
}

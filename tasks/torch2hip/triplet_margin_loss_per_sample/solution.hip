// Reference solution for the per-triplet margin loss:
//   loss[b] = max(margin + ||a_b - p_b + eps|| - ||a_b - n_b + eps||, 0), fp16 in and out.
//
// - One pass: a group of GS consecutive threads (GS = 4..32, a power of two, so a group never
//   straddles a warp or wavefront of 32 or 64 lanes) owns one row; each lane accumulates both
//   squared distances in fp32 over a strided share of the row, the group combines them with
//   xor shuffles, and lane 0 writes the loss. Eager PyTorch writes and re-reads two
//   [batch, dim] fp16 intermediates per distance; this reads each input element once.
// - Vectors of W fp16 elements: 16-byte loads (W = 8) when dim % 8 == 0 and the three input
//   pointers are 16-byte aligned, __half2 (W = 2) when dim is even, single __half otherwise.
// - GS is chosen on the host so each lane has about four vectors of a row (short rows use
//   small groups and keep every lane busy; long rows use 32 lanes).
// - No thread returns early: every lane of every group reaches the shuffles (rows past the
//   end accumulate nothing and store nothing), so the non-sync shuffles are well defined.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;

template <int W> struct Loader;

template <> struct Loader<8> {
    static __device__ __forceinline__ void load(const __half* ptr, float (&f)[8]) {
        const uint4 u = *reinterpret_cast<const uint4*>(ptr);
        const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float2 v = __half22float2(h[k]);
            f[2 * k] = v.x;
            f[2 * k + 1] = v.y;
        }
    }
};

template <> struct Loader<2> {
    static __device__ __forceinline__ void load(const __half* ptr, float (&f)[2]) {
        const float2 v = __half22float2(*reinterpret_cast<const __half2*>(ptr));
        f[0] = v.x;
        f[1] = v.y;
    }
};

template <> struct Loader<1> {
    static __device__ __forceinline__ void load(const __half* ptr, float (&f)[1]) { f[0] = __half2float(*ptr); }
};

template <int W>
__device__ __forceinline__ void accumulate(const __half* a, const __half* p, const __half* n, int64_t i,
                                           float eps, float& sp, float& sn) {
    float fa[W], fp[W], fn[W];
    Loader<W>::load(a + i * W, fa);
    Loader<W>::load(p + i * W, fp);
    Loader<W>::load(n + i * W, fn);
#pragma unroll
    for (int j = 0; j < W; ++j) {
        const float dp = (fa[j] - fp[j]) + eps;
        const float dn = (fa[j] - fn[j]) + eps;
        sp = fmaf(dp, dp, sp);
        sn = fmaf(dn, dn, sn);
    }
}

template <int W, int GS>
__global__ void __launch_bounds__(kBlock)
triplet_rows(const __half* __restrict__ anchor, const __half* __restrict__ positive,
             const __half* __restrict__ negative, __half* __restrict__ loss, int64_t batch, int64_t dim,
             float margin, float eps) {
    constexpr int kRowsPerBlock = kBlock / GS;
    const int lane = threadIdx.x % GS;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / GS;
    float sp0 = 0.0f, sn0 = 0.0f, sp1 = 0.0f, sn1 = 0.0f;
    if (row < batch) {
        const int64_t nvec = dim / W;
        const __half* a = anchor + row * dim;
        const __half* p = positive + row * dim;
        const __half* n = negative + row * dim;
        int64_t i = lane;
        // two vectors per step: both sets of loads are issued before the arithmetic
        for (; i + GS < nvec; i += 2 * GS) {
            accumulate<W>(a, p, n, i, eps, sp0, sn0);
            accumulate<W>(a, p, n, i + GS, eps, sp1, sn1);
        }
        if (i < nvec) accumulate<W>(a, p, n, i, eps, sp0, sn0);
    }
    float sp = sp0 + sp1;
    float sn = sn0 + sn1;
#pragma unroll
    for (int off = GS / 2; off > 0; off >>= 1) {
        sp += __shfl_xor(sp, off);
        sn += __shfl_xor(sn, off);
    }
    if (lane == 0 && row < batch) {
        loss[row] = __float2half_rn(fmaxf(margin + sqrtf(sp) - sqrtf(sn), 0.0f));
    }
}

template <int W>
void launch(const __half* a, const __half* p, const __half* n, __half* loss, int64_t batch, int64_t dim,
            float margin, float eps, hipStream_t stream) {
    const int64_t nvec = dim / W;
    // about four vectors per lane, 4 <= GS <= 32
    int gs = 4;
    while (gs < 32 && static_cast<int64_t>(gs) * 4 < nvec) gs *= 2;
    const int rows_per_block = kBlock / gs;
    const unsigned blocks = static_cast<unsigned>((batch + rows_per_block - 1) / rows_per_block);
    switch (gs) {
        case 4:
            hipLaunchKernelGGL((triplet_rows<W, 4>), dim3(blocks), dim3(kBlock), 0, stream, a, p, n, loss, batch, dim,
                               margin, eps);
            break;
        case 8:
            hipLaunchKernelGGL((triplet_rows<W, 8>), dim3(blocks), dim3(kBlock), 0, stream, a, p, n, loss, batch, dim,
                               margin, eps);
            break;
        case 16:
            hipLaunchKernelGGL((triplet_rows<W, 16>), dim3(blocks), dim3(kBlock), 0, stream, a, p, n, loss, batch,
                               dim, margin, eps);
            break;
        default:
            hipLaunchKernelGGL((triplet_rows<W, 32>), dim3(blocks), dim3(kBlock), 0, stream, a, p, n, loss, batch,
                               dim, margin, eps);
            break;
    }
}

}  // namespace

extern "C" int triplet_margin_loss_per_sample(const __half* anchor, const __half* positive, const __half* negative,
                                              __half* loss, int64_t batch, int64_t dim, float margin, float eps,
                                              hipStream_t stream) {
    if (batch <= 0) return static_cast<int>(hipSuccess);
    const uintptr_t addr = reinterpret_cast<uintptr_t>(anchor) | reinterpret_cast<uintptr_t>(positive) |
                           reinterpret_cast<uintptr_t>(negative);
    if (dim % 8 == 0 && addr % 16 == 0) {
        launch<8>(anchor, positive, negative, loss, batch, dim, margin, eps, stream);
    } else if (dim % 2 == 0 && addr % 4 == 0) {
        launch<2>(anchor, positive, negative, loss, batch, dim, margin, eps, stream);
    } else {
        launch<1>(anchor, positive, negative, loss, batch, dim, margin, eps, stream);
    }
    return static_cast<int>(hipGetLastError());
}

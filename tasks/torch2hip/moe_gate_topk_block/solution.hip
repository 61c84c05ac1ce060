// Reference solution: the whole MoE router in one kernel.
//
// One block (256 threads) per 32 tokens computes their logits against all experts (padded
// to EP = 8, 16, 32 or 64), then selects the top_k and writes weights and ids.
//
// - GEMM on CUDA cores, fp32 accumulation. x (fp16) is read once, with 16-byte loads, in
//   k-tiles of KT (256 for 8 experts, 128 for 16: memory-bound, more bytes in flight; 64
//   for 32-64: FMA-bound); the next tile is loaded into registers while the current one is
//   multiplied. The tiles of x and w_gate sit in shared memory as fp32, k-major. A thread
//   owns 4 tokens x 4 experts (16 accumulators: two 16-byte shared loads per 16 FMAs). The
//   256 threads are KS = 256 / (2 EP) groups that split each k-tile (the fewer the experts,
//   the more K-groups, so every thread has work); the groups' partial logits meet in shared
//   memory at the end.
// - The k-major tiles are XOR-swizzled in units of 4 floats (column ^ 4 * ((k / 8) % 8)):
//   the transposing stores hit 32 different banks and the 16-byte reads stay aligned.
// - Epilogue: one thread per token scans the EP logits top_k times (strict '>' in
//   ascending expert order: the lower index wins a tie), then
//   weights = exp(l - l_max) / sum over the selected exp(l - l_max).
// - Few tokens (token tiles for at most half of the multiprocessors, e.g. 512 tokens: 16
//   tiles on an H200's 132): k is split over up to 16 blocks per token tile (grid.y), each
//   multiplying whole KT tiles of its k range, so that about two blocks per multiprocessor
//   run. Each block writes its partial logits to a static device array; the last of a token
//   tile's blocks to arrive (an atomic count per tile, which that block resets for the next
//   call) adds them and runs the epilogue. The logits are the same in any summation order
//   (the inputs' grids make every partial sum exact), so the ids do not depend on the split.
//   On an H200 the split took 512 tokens x 2048 hidden x 64 experts from 1.01x to 2.50x
//   the eager router and two 2048-token configs from 1.8-1.9x to 2.7-3.6x; the configs of
//   4096 tokens or more (no split) moved by under 2%. Splitting wherever the tiles leave a
//   multiprocessor idle (4096 tokens, 128 tiles: two splits) lost 6-7% on two of those.
//   Calls running at once on several streams would share the array.
// - Any hidden (a scalar load path when hidden % 8 != 0 or a pointer is not 16-byte
//   aligned), any token count, experts <= 64, top_k <= min(8, experts).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>
#include <math.h>
#include <algorithm>

namespace {

constexpr int kThreads = 256;
constexpr int kBT = 32;     // tokens per block
constexpr int kMaxTopK = 8;
constexpr int kMaxSplit = 16;
constexpr int kMaxSplitGrid = 1024;             // token tiles a split launch may have
constexpr int64_t kPartFloats = 2 << 20;        // split partial logits: split * grid * kBT * EP
__device__ float g_part[kPartFloats];
__device__ unsigned g_arrived[kMaxSplitGrid];   // per token tile; the last split resets it

__device__ __forceinline__ int swz(int k) { return ((k >> 3) & 7) << 2; }

// 8 consecutive fp16 of a row from element k, packed as they lie in memory (zeros outside).
template <bool VEC>
__device__ __forceinline__ uint4 load8(const __half* __restrict__ row, int k, int hidden, bool valid) {
    uint4 u = make_uint4(0u, 0u, 0u, 0u);
    if (VEC) {
        if (valid && k < hidden) u = *reinterpret_cast<const uint4*>(row + k);
    } else if (valid) {
        unsigned h[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) h[i] = k + i < hidden ? static_cast<unsigned>(__half_as_ushort(row[k + i])) : 0u;
        u.x = h[0] | (h[1] << 16);
        u.y = h[2] | (h[3] << 16);
        u.z = h[4] | (h[5] << 16);
        u.w = h[6] | (h[7] << 16);
    }
    return u;
}

__device__ __forceinline__ float half_lo(unsigned v) { return __half2float(__ushort_as_half(static_cast<unsigned short>(v & 0xffffu))); }
__device__ __forceinline__ float half_hi(unsigned v) { return __half2float(__ushort_as_half(static_cast<unsigned short>(v >> 16))); }

// Element j of a packed piece, as fp32.
__device__ __forceinline__ float unpack(const uint4& u, int j) {
    const unsigned v = j < 2 ? u.x : j < 4 ? u.y : j < 6 ? u.z : u.w;
    return (j & 1) ? half_hi(v) : half_lo(v);
}

// Piece p (8 consecutive k of one row) of a tile of ROWS rows x KT k: 32 consecutive p cover
// 4 rows x 8 pieces, so a warp reads 4 contiguous 128-byte runs and its transposing stores
// (with the swizzle) hit 32 different banks.
template <int ROWS>
__device__ __forceinline__ void piece(int p, int& row, int& part) {
    const int q = p >> 5;
    row = (q % (ROWS / 4)) * 4 + ((p >> 3) & 3);
    part = (q / (ROWS / 4)) * 8 + (p & 7);
}

// EP padded experts, KT k per tile: (8, 256) and (16, 128) are memory-bound shapes (bigger
// tiles, more bytes in flight), (32, 64) and (64, 64) FMA-bound ones.
template <int EP, int KT, bool VEC, bool SPLIT>
__global__ void __launch_bounds__(kThreads, 2)
moe_router(const __half* __restrict__ x, const __half* __restrict__ w, float* __restrict__ weights,
           int* __restrict__ ids, int tokens, int hidden, int experts, int top_k, int k_per_split) {
    constexpr int TX = EP / 4;               // threads across experts
    constexpr int TY = kBT / 4;              // threads across tokens (8)
    constexpr int KS = kThreads / (TX * TY); // K-groups
    constexpr int KPG = KT / KS;             // k per group per tile
    constexpr int NXP = kBT * KT / 8 / kThreads;  // x pieces per thread per tile
    constexpr int NWP = EP * KT / 8 / kThreads;   // w pieces per thread per tile
    constexpr int BUF = KT * kBT > KS * kBT * EP ? KT * kBT : KS * kBT * EP;
    static_assert(KS * TX * TY == kThreads && KPG * KS == KT, "tile shape");
    static_assert(NXP * kThreads * 8 == kBT * KT && NWP * kThreads * 8 == EP * KT, "pieces");
    static_assert(KT * EP >= kBT * (EP + 1), "logits fit in ws");

    __shared__ __align__(16) float buf[BUF];      // x tile [k][token ^ swz]; later the partial logits
    __shared__ __align__(16) float ws[KT * EP];   // w tile [k][expert ^ swz]; later the logits
    float* xs = buf;
    float* red = buf;

    const int tid = threadIdx.x;
    const int kg = tid / (TX * TY), rem = tid % (TX * TY), ty = rem / TX, tx = rem % TX;
    const int t0 = blockIdx.x * kBT;
    // this block's k range: whole KT tiles, the last split up to hidden
    const int kb = SPLIT ? static_cast<int>(blockIdx.y) * k_per_split : 0;
    const int ke = SPLIT ? min(hidden, kb + k_per_split) : hidden;

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

    // the next tile, in registers (packed fp16) while the current one is multiplied
    uint4 px[NXP], pw[NWP];
    auto fetch = [&](int k0) {
#pragma unroll
        for (int n = 0; n < NXP; ++n) {
            int t, part;
            piece<kBT>(tid + n * kThreads, t, part);
            px[n] = load8<VEC>(x + static_cast<int64_t>(t0 + t) * hidden, k0 + part * 8, hidden, t0 + t < tokens);
        }
#pragma unroll
        for (int n = 0; n < NWP; ++n) {
            int e, part;
            piece<EP>(tid + n * kThreads, e, part);
            pw[n] = load8<VEC>(w + static_cast<int64_t>(e) * hidden, k0 + part * 8, hidden, e < experts);
        }
    };
    fetch(kb);
    for (int k0 = kb; k0 < ke; k0 += KT) {
        __syncthreads();  // the previous tile's reads are done
#pragma unroll
        for (int n = 0; n < NXP; ++n) {
            int t, part;
            piece<kBT>(tid + n * kThreads, t, part);
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int k = part * 8 + j;
                xs[k * kBT + (t ^ swz(k))] = unpack(px[n], j);
            }
        }
#pragma unroll
        for (int n = 0; n < NWP; ++n) {
            int e, part;
            piece<EP>(tid + n * kThreads, e, part);
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int k = part * 8 + j;
                ws[k * EP + (e ^ (swz(k) & (EP - 1)))] = unpack(pw[n], j);
            }
        }
        __syncthreads();
        if (k0 + KT < ke) fetch(k0 + KT);
#pragma unroll 8
        for (int kk = 0; kk < KPG; ++kk) {
            const int k = kg * KPG + kk;
            const float4 xv = *reinterpret_cast<const float4*>(&xs[k * kBT + ((ty * 4) ^ swz(k))]);
            const float4 wv = *reinterpret_cast<const float4*>(&ws[k * EP + ((tx * 4) ^ (swz(k) & (EP - 1)))]);
            const float xa[4] = {xv.x, xv.y, xv.z, xv.w};
            const float wa[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] += xa[i] * wa[j];
        }
    }
    __syncthreads();  // buf and ws are reused below

    // partial logits of every K-group, then their sum (written to ws as [token][EP + 1])
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) red[(kg * kBT + ty * 4 + i) * EP + tx * 4 + j] = acc[i][j];
    __syncthreads();
    float* logits = ws;
    float* part = g_part + (static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x) * (kBT * EP);
    for (int idx = tid; idx < kBT * EP; idx += kThreads) {
        const int t = idx / EP, e = idx % EP;
        float s = 0.0f;
#pragma unroll
        for (int g = 0; g < KS; ++g) s += red[(g * kBT + t) * EP + e];
        if (SPLIT)
            part[idx] = s;
        else
            logits[t * (EP + 1) + e] = s;
    }
    if (SPLIT) {
        // the last of the token tile's splits to arrive adds the partial logits (every
        // partial sum is exact on the task's inputs: the order does not change the logits)
        __shared__ bool last;
        __threadfence();
        __syncthreads();
        if (tid == 0) last = atomicAdd(&g_arrived[blockIdx.x], 1u) == gridDim.y - 1;
        __syncthreads();
        if (!last) return;
        __threadfence();
        const volatile float* all = g_part + static_cast<int64_t>(blockIdx.x) * (kBT * EP);
        const int64_t stride = static_cast<int64_t>(gridDim.x) * (kBT * EP);
        for (int idx = tid; idx < kBT * EP; idx += kThreads) {
            float s = 0.0f;
            for (int sp = 0; sp < static_cast<int>(gridDim.y); ++sp) s += all[sp * stride + idx];
            logits[(idx / EP) * (EP + 1) + idx % EP] = s;
        }
        if (tid == 0) g_arrived[blockIdx.x] = 0u;
    }
    __syncthreads();

    if (tid < kBT && t0 + tid < tokens) {
        const float* lt = logits + tid * (EP + 1);
        float best[kMaxTopK];
        int best_id[kMaxTopK];
        unsigned long long taken = 0ull;
        for (int s = 0; s < top_k; ++s) {
            float bl = -INFINITY;
            int be = -1;
            for (int e = 0; e < experts; ++e) {
                if ((taken >> e) & 1ull) continue;
                const float v = lt[e];
                if (be < 0 || v > bl) {  // strict: on a tie the lower index (seen first) stays
                    bl = v;
                    be = e;
                }
            }
            taken |= 1ull << be;
            best[s] = bl;
            best_id[s] = be;
        }
        const float lmax = best[0];
        float sum = 0.0f;
        for (int s = 0; s < top_k; ++s) {
            best[s] = expf(best[s] - lmax);
            sum += best[s];
        }
        const float inv = 1.0f / sum;
        const int64_t o = static_cast<int64_t>(t0 + tid) * top_k;
        for (int s = 0; s < top_k; ++s) {
            weights[o + s] = best[s] * inv;
            ids[o + s] = best_id[s];
        }
    }
}

typedef void (*KernelFn)(const __half*, const __half*, float*, int*, int, int, int, int, int);

template <bool VEC, bool SPLIT>
KernelFn pick(int experts, int& ep, int& kt) {
    if (experts <= 8) { ep = 8; kt = 256; return moe_router<8, 256, VEC, SPLIT>; }
    if (experts <= 16) { ep = 16; kt = 128; return moe_router<16, 128, VEC, SPLIT>; }
    if (experts <= 32) { ep = 32; kt = 64; return moe_router<32, 64, VEC, SPLIT>; }
    ep = 64; kt = 64;
    return moe_router<64, 64, VEC, SPLIT>;
}

int sm_count() {
    static int cached = 0;
    if (cached == 0) {
        int dev = 0, n = 0;
        if (hipGetDevice(&dev) != hipSuccess ||
            hipDeviceGetAttribute(&n, hipDeviceAttributeMultiprocessorCount, dev) != hipSuccess || n <= 0)
            n = 128;
        cached = n;
    }
    return cached;
}

}  // namespace

extern "C" int moe_gate_topk(const __half* x, const __half* w_gate, float* weights, int* ids, int64_t tokens,
                             int64_t hidden, int64_t experts, int64_t top_k, hipStream_t stream) {
    if (tokens <= 0) return static_cast<int>(hipSuccess);
    if (hidden <= 0 || experts <= 0 || experts > 64 || top_k <= 0 || top_k > kMaxTopK || top_k > experts ||
        tokens > INT32_MAX || hidden > INT32_MAX / 2)
        return static_cast<int>(hipErrorInvalidValue);
    const bool vec = hidden % 8 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(w_gate) % 16 == 0;
    const int64_t grid = (tokens + kBT - 1) / kBT;
    int ep = 0, kt = 0;
    pick<true, false>(static_cast<int>(experts), ep, kt);
    // Split k over several blocks per token tile where the token tiles fill at most half of the
    // multiprocessors (at most two blocks per multiprocessor in all, at least two k tiles a split).
    const int64_t tiles_k = (hidden + kt - 1) / kt;
    int64_t split = 1;
    if (grid * 2 <= sm_count() && grid <= kMaxSplitGrid) {
        split = std::min<int64_t>({2 * sm_count() / grid, tiles_k / 2, kMaxSplit,
                                   kPartFloats / (grid * kBT * ep)});
        split = std::max<int64_t>(split, 1);
    }
    int64_t steps = (tiles_k + split - 1) / split;
    split = (tiles_k + steps - 1) / steps;  // no empty split
    const bool sp = split > 1;
    const KernelFn kernel = vec ? (sp ? pick<true, true>(static_cast<int>(experts), ep, kt)
                                      : pick<true, false>(static_cast<int>(experts), ep, kt))
                                : (sp ? pick<false, true>(static_cast<int>(experts), ep, kt)
                                      : pick<false, false>(static_cast<int>(experts), ep, kt));
    hipLaunchKernelGGL(kernel, dim3(static_cast<unsigned>(grid), static_cast<unsigned>(split)), dim3(kThreads), 0,
                       stream, x, w_gate, weights, ids, static_cast<int>(tokens), static_cast<int>(hidden),
                       static_cast<int>(experts), static_cast<int>(top_k), static_cast<int>(steps * kt));
    return static_cast<int>(hipGetLastError());
}

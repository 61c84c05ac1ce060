// Linear + GroupNorm + Swish + Multiply + Swish, fp32: a general, portable solution in two
// launches (the eager module takes seven).
//
// 1. A register-tiled SIMT GEMM x @ weight^T (both operands k-contiguous): tiles of 128x64
//    (128 threads, 8x8 outputs each), 64x64 (64 threads, 8x8), 32x64 (64 threads, 4x8) or
//    16x64 (64 threads, 2x8). The 8x8 micro-tiles of the two larger tiles need one 128-bit
//    shared-memory load per 16 FMAs (4x4 would need twice that, more than the SM serves). k is staged through double-buffered shared memory (k-major,
//    padded rows) with the next k-slab prefetched into registers while the current one is
//    multiplied (one barrier a slab). Global loads are float4 when in_features % 4 == 0 (and
//    the operands are 16-byte aligned), scalar and bounds-checked per element otherwise; rows,
//    columns and k of any size are zero-filled or guarded. Optional split-K (grid.z, at most
//    8): split s multiplies k in [s*Kc, (s+1)*Kc) and writes its partial product to a static
//    device workspace; with one split the product goes straight into y. The host picks the
//    tile and the split count from a small cost model (blocks per SM, warps per SM, per-slab
//    compute vs latency, split traffic) so that batch 8..2048 rows still spread over the 132
//    SMs of an H100 (the GEMM is plain fp32 FMA; a split only changes where k is cut).
// 2. One team of TPI threads (8..256, a power of two chosen from the group size) per
//    (row, group): each thread sums the split partials of its features in split order
//    (deterministic), adds the Linear bias and keeps the values in registers; the group mean
//    and then the biased variance about it are team sums (shuffles, plus shared memory when a
//    team spans several warps); the normalise, affine, swish, multiply, swish chain is written
//    to y. With one split this runs in place on y.
// The workspaces are static device arrays (nothing is allocated per call); calls running at
// once on several streams would share them. Accurate expf: the fp32 tolerance is 1e-4.

#include <hip/hip_runtime.h>
#include <math.h>
#include <stdint.h>

namespace {

constexpr int kNumSMs = 132;            // the H100 the cost model is tuned for (any GPU works)
constexpr int64_t kWsFloats = 4 << 20;  // split-K workspace: splits * batch * out <= 4M floats
__device__ float g_ws[kWsFloats];

template <int N>
__device__ __forceinline__ void load_frag(const float* p, float (&v)[N]) {
    if constexpr (N % 4 == 0) {
#pragma unroll
        for (int i = 0; i < N / 4; ++i) {
            const float4 t = reinterpret_cast<const float4*>(p)[i];
            v[4 * i] = t.x;
            v[4 * i + 1] = t.y;
            v[4 * i + 2] = t.z;
            v[4 * i + 3] = t.w;
        }
    } else if constexpr (N == 2) {
        const float2 t = *reinterpret_cast<const float2*>(p);
        v[0] = t.x;
        v[1] = t.y;
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = p[i];
    }
}

// c[split] = a[M x K] @ w[N x K]^T over this split's k range [blockIdx.z * Kc, +Kc), cut at K.
// NT threads, each a TM x TN micro-tile (rows ty*TM.., columns tx*TN..). VEC: K % 4 == 0 and
// a, w 16-byte aligned (float4 loads); otherwise scalar loads, each bounds-checked.
template <int BM, int BN, int TM, int TN, int BK, int NT, bool VEC>
__global__ void __launch_bounds__(NT) gemm_nt(const float* __restrict__ a, const float* __restrict__ w,
                                              float* __restrict__ y, int M, int N, int K, int Kc, int vec_out) {
    static_assert((BM / TM) * (BN / TN) == NT, "one micro-tile a thread");
    static_assert(TN % 4 == 0 && BK % 4 == 0, "float4 column groups and k chunks");
    constexpr int TX = BN / TN;            // threads along n
    constexpr int KV = BK / 4;             // float4 chunks a tile row
    static_assert(NT % KV == 0, "a thread keeps its k chunk across passes");
    constexpr int RS = NT / KV;            // tile rows staged a pass
    constexpr int LA = (BM + RS - 1) / RS, LW = (BN + RS - 1) / RS;  // passes
    __shared__ __align__(16) float as[2][BK][BM + 4];
    __shared__ __align__(16) float ws[2][BK][BN + 4];

    const int tid = threadIdx.x;
    const int tx = tid % TX, ty = tid / TX;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int kbeg = blockIdx.z * Kc;
    const int kend = min(K, kbeg + Kc);
    const int nk = (kend - kbeg + BK - 1) / BK;  // >= 1: the host launches no empty split

    // This thread stages k chunk kq..kq+3 (relative to the slab) of tile rows r0 + l * RS.
    const int r0 = tid / KV, kq = 4 * (tid % KV);
    const int64_t a_off = (int64_t)(m0 + r0) * K + kbeg + kq;  // dereferenced only for valid rows
    const int64_t w_off = (int64_t)(n0 + r0) * K + kbeg + kq;
    const int64_t pass_stride = (int64_t)RS * K;

    float4 ra[LA], rw[LW];
    // the chunk of slab kt of the row at element offset off; ok: the row is valid
    auto load_chunk = [&](const float* __restrict__ src, int64_t off, bool ok, int kt) -> float4 {
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        const int left = kend - (kbeg + kt * BK + kq);  // k of this chunk still in range
        if (!ok || left <= 0) return v;
        const float* p = src + off + kt * BK;
        if (VEC) {
            v = *reinterpret_cast<const float4*>(p);  // K % 4 == 0: the chunk is all in range
        } else {
            v.x = p[0];
            if (left > 1) v.y = p[1];
            if (left > 2) v.z = p[2];
            if (left > 3) v.w = p[3];
        }
        return v;
    };
    auto load_tiles = [&](int kt) {
#pragma unroll
        for (int l = 0; l < LA; ++l) {
            const int r = r0 + l * RS;
            ra[l] = load_chunk(a, a_off + l * pass_stride, (BM % RS == 0 || r < BM) && m0 + r < M, kt);
        }
#pragma unroll
        for (int l = 0; l < LW; ++l) {
            const int r = r0 + l * RS;
            rw[l] = load_chunk(w, w_off + l * pass_stride, (BN % RS == 0 || r < BN) && n0 + r < N, kt);
        }
    };
    auto store_tiles = [&](int buf) {
#pragma unroll
        for (int l = 0; l < LA; ++l) {
            const int r = r0 + l * RS;
            if (BM % RS == 0 || r < BM) {
                as[buf][kq + 0][r] = ra[l].x;
                as[buf][kq + 1][r] = ra[l].y;
                as[buf][kq + 2][r] = ra[l].z;
                as[buf][kq + 3][r] = ra[l].w;
            }
        }
#pragma unroll
        for (int l = 0; l < LW; ++l) {
            const int r = r0 + l * RS;
            if (BN % RS == 0 || r < BN) {
                ws[buf][kq + 0][r] = rw[l].x;
                ws[buf][kq + 1][r] = rw[l].y;
                ws[buf][kq + 2][r] = rw[l].z;
                ws[buf][kq + 3][r] = rw[l].w;
            }
        }
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    load_tiles(0);
    store_tiles(0);
    __syncthreads();
    for (int kt = 0; kt < nk; ++kt) {
        const int cur = kt & 1;
        if (kt + 1 < nk) load_tiles(kt + 1);  // in flight while this slab is multiplied
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float av[TM], wv[TN];
            load_frag<TM>(&as[cur][kk][ty * TM], av);
            load_frag<TN>(&ws[cur][kk][tx * TN], wv);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], wv[j], acc[i][j]);
        }
        if (kt + 1 < nk) store_tiles(cur ^ 1);
        __syncthreads();
    }

    // float4 stores: N % 4 == 0 and the output 16-byte aligned (the workspace always is)
    float* c = gridDim.z > 1 ? g_ws + (int64_t)blockIdx.z * M * N : y;
    const bool vec_ok = (gridDim.z > 1 || vec_out) && (N & 3) == 0;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int gm = m0 + ty * TM + i;
        if (gm >= M) continue;
        float* row = c + (int64_t)gm * N;
#pragma unroll
        for (int q = 0; q < TN / 4; ++q) {
            const int gn = n0 + tx * TN + 4 * q;
            if (vec_ok && gn + 3 < N) {
                *reinterpret_cast<float4*>(row + gn) =
                    make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (gn + j < N) row[gn + j] = acc[i][4 * q + j];
            }
        }
    }
}

__device__ __forceinline__ float swish(float v) { return v / (1.0f + expf(-v)); }

constexpr int kEpiThreads = 256;

// Sum over the TPI threads of a team (aligned runs of TPI threads, TPI a power of two); every
// thread of the block must call it (it may use __syncthreads). All team members get the sum.
template <int TPI>
__device__ __forceinline__ float team_sum(float v, float* red) {
    const int width = TPI < warpSize ? TPI : warpSize;
    for (int off = width / 2; off > 0; off /= 2) v += __shfl_xor(v, off);
    if (TPI > warpSize) {
        const int nw = TPI / warpSize;  // warps a team
        const int wid = threadIdx.x / warpSize;
        if (threadIdx.x % warpSize == 0) red[wid] = v;
        __syncthreads();
        const int first = (threadIdx.x / TPI) * nw;
        float t = 0.0f;
        for (int i = 0; i < nw; ++i) t += red[first + i];
        __syncthreads();
        v = t;
    }
    return v;
}

constexpr int kMaxV = 16;  // features a thread keeps in registers (a group <= 16 * TPI)

// One team per (row, group). The GEMM's result: the split partials (g_ws) or, with one
// split, y itself.
template <int TPI>
__global__ void __launch_bounds__(kEpiThreads) group_norm_epilogue(
    float* y, const float* __restrict__ bias, const float* __restrict__ gn_weight,
    const float* __restrict__ gn_bias, const float* __restrict__ mul_weight, int rows, int features,
    int groups, int splits, float eps) {
    __shared__ float red[kEpiThreads];
    const float* part = splits > 1 ? g_ws : y;
    const int64_t plane = (int64_t)rows * features;
    const int gsize = features / groups;
    const int lane = threadIdx.x % TPI;
    const int64_t item = (int64_t)blockIdx.x * (kEpiThreads / TPI) + threadIdx.x / TPI;
    const bool valid = item < (int64_t)rows * groups;
    const int64_t row = valid ? item / groups : 0;
    const int f0 = valid ? (int)(item - row * groups) * gsize : 0;
    const int64_t base = row * features + f0;
    const bool cached = gsize <= kMaxV * TPI;

    auto value = [&](int f) -> float {
        float t = part[base + f];
#pragma unroll 4
        for (int s = 1; s < splits; ++s) t += part[s * plane + base + f];
        return t + bias[f0 + f];
    };

    float v[kMaxV];
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxV; ++i) {
        const int f = lane + i * TPI;
        v[i] = (valid && cached && f < gsize) ? value(f) : 0.0f;
        s += v[i];
    }
    if (valid && !cached)
        for (int f = lane; f < gsize; f += TPI) s += value(f);
    const float mean = team_sum<TPI>(s, red) / (float)gsize;

    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxV; ++i) {
        const int f = lane + i * TPI;
        if (valid && cached && f < gsize) q += (v[i] - mean) * (v[i] - mean);
    }
    if (valid && !cached)
        for (int f = lane; f < gsize; f += TPI) {
            const float d = value(f) - mean;
            q += d * d;
        }
    const float inv_std = 1.0f / sqrtf(team_sum<TPI>(q, red) / (float)gsize + eps);
    if (!valid) return;

    float* yr = y + base;
    if (cached) {
#pragma unroll
        for (int i = 0; i < kMaxV; ++i) {
            const int f = lane + i * TPI;
            if (f < gsize) {
                const int g = f0 + f;
                yr[f] = swish(swish((v[i] - mean) * inv_std * gn_weight[g] + gn_bias[g]) * mul_weight[g]);
            }
        }
    } else {
        for (int f = lane; f < gsize; f += TPI) {
            const int g = f0 + f;
            yr[f] = swish(swish((value(f) - mean) * inv_std * gn_weight[g] + gn_bias[g]) * mul_weight[g]);
        }
    }
}

template <int TPI>
void launch_epilogue(float* y, const float* bias, const float* gw, const float* gb, const float* mw, int M,
                     int N, int G, int splits, float eps, hipStream_t stream) {
    const int64_t items = (int64_t)M * G;
    const int64_t blocks = (items + kEpiThreads / TPI - 1) / (kEpiThreads / TPI);
    hipLaunchKernelGGL((group_norm_epilogue<TPI>), dim3((unsigned int)blocks), dim3(kEpiThreads), 0, stream, y,
                       bias, gw, gb, mw, M, N, G, splits, eps);
}

// ---- host side: tile / split choice --------------------------------------------------------

struct TileCfg {
    int bm, bn, bk, threads, resident;  // resident: blocks an SM holds (registers, shared memory)
    double eff;                         // fraction of the SM's fp32 FMA rate the tile sustains
};
// 0: 128x64, 8x8 a thread; 1: 64x64, 8x8; 2: 32x64, 4x8; 3: 16x64, 2x8 (see launch_plan)
constexpr TileCfg kCfgs[4] = {{128, 64, 16, 128, 3, 0.80},
                              {64, 64, 16, 64, 6, 0.75},
                              {32, 64, 32, 64, 6, 0.50},
                              {16, 64, 32, 64, 8, 0.35}};
constexpr int kMaxSplits = 8;

struct Plan {
    int cfg, splits, kc;
};

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

#ifdef ARENA_TUNE
// Tuning builds only (-DARENA_TUNE): arena_tune_force(cfg, splits) pins the plan, (-1, 0) frees it.
int g_force_cfg = -1, g_force_splits = 0;
#endif

// Estimated cycles of the GEMM (and the split-dependent part of what follows it) for tile cfg
// and `splits` k splits; < 0 when not a valid plan.
double plan_cost(int64_t M, int64_t N, int64_t K, int cfg, int splits, int* kc_out) {
    const TileCfg& c = kCfgs[cfg];
    const int64_t kc = cdiv(cdiv(K, splits), c.bk) * c.bk;
    if (cdiv(K, kc) != splits) return -1.0;  // an empty split: covered by fewer splits
    if (splits > 1 && (int64_t)splits * M * N > kWsFloats) return -1.0;
    const int64_t tiles = cdiv(M, c.bm) * cdiv(N, c.bn), blocks = tiles * splits;
    const int64_t per_sm = cdiv(blocks, kNumSMs);
    const int64_t res = per_sm < c.resident ? per_sm : c.resident;
    const int64_t rounds = cdiv(per_sm, res);
    const double warps = (double)(res * c.threads) / 32.0;
    const double rate = 128.0 * c.eff * (warps < 8.0 ? warps / 8.0 : 1.0);  // FMA a cycle an SM
    const double slab = (double)res * c.bm * c.bn * c.bk / rate;
    double t = (double)rounds * ((double)(kc / c.bk) * (slab > 900.0 ? slab : 900.0) + 2500.0);
    if (splits > 1) t += (double)splits * M * N * 8.0 / 1400.0 + 1500.0;  // partials out and back
    const double l2 = (double)(M * K * cdiv(N, c.bn) + N * K * cdiv(M, c.bm)) * 4.0 / 3000.0;
    if (l2 > t) t = l2;
    *kc_out = (int)kc;
    return t;
}

Plan choose_plan(int64_t M, int64_t N, int64_t K) {
    Plan best{0, 1, (int)K};
    double best_t = -1.0;
    for (int cfg = 0; cfg < 4; ++cfg)
        for (int s = 1; s <= kMaxSplits; ++s) {
            int kc = 0;
            const double t = plan_cost(M, N, K, cfg, s, &kc);
            if (t < 0.0) continue;
#ifdef ARENA_TUNE
            if (g_force_cfg >= 0 && (cfg != g_force_cfg || s != g_force_splits)) continue;
#endif
            if (best_t < 0.0 || t < best_t) {
                best_t = t;
                best = Plan{cfg, s, kc};
            }
        }
    return best;  // one split of cfg 0 is always valid, so best_t >= 0 here
}

template <int BM, int BN, int TM, int TN, int BK, int NT>
void launch_gemm(const float* x, const float* w, float* y, int M, int N, int K, const Plan& p,
                 hipStream_t stream) {
    const bool vec_in = K % 4 == 0 && ((uintptr_t)x % 16) == 0 && ((uintptr_t)w % 16) == 0;
    const int vec_out = ((uintptr_t)y % 16) == 0 ? 1 : 0;
    const dim3 grid((unsigned int)cdiv(N, BN), (unsigned int)cdiv(M, BM), (unsigned int)p.splits);
    if (vec_in)
        hipLaunchKernelGGL((gemm_nt<BM, BN, TM, TN, BK, NT, true>), grid, dim3(NT), 0, stream, x, w,
                           y, M, N, K, p.kc, vec_out);
    else
        hipLaunchKernelGGL((gemm_nt<BM, BN, TM, TN, BK, NT, false>), grid, dim3(NT), 0, stream, x, w,
                           y, M, N, K, p.kc, vec_out);
}

void launch_plan(const float* x, const float* w, float* y, int M, int N, int K, const Plan& p, hipStream_t stream) {
    switch (p.cfg) {
        case 0: launch_gemm<128, 64, 8, 8, 16, 128>(x, w, y, M, N, K, p, stream); break;
        case 1: launch_gemm<64, 64, 8, 8, 16, 64>(x, w, y, M, N, K, p, stream); break;
        case 2: launch_gemm<32, 64, 4, 8, 32, 64>(x, w, y, M, N, K, p, stream); break;
        default: launch_gemm<16, 64, 2, 8, 32, 64>(x, w, y, M, N, K, p, stream); break;
    }
}

}  // namespace

#ifdef ARENA_TUNE
extern "C" void arena_tune_force(int cfg, int splits) {
    g_force_cfg = cfg;
    g_force_splits = splits;
}
#endif

extern "C" int gemm_groupnorm_swish_multiply_swish(const float* x, const float* weight, const float* bias,
                                                   const float* gn_weight, const float* gn_bias,
                                                   const float* multiply_weight, float* y, int64_t batch,
                                                   int64_t in_features, int64_t out_features, int64_t num_groups,
                                                   float eps, hipStream_t stream) {
    if (batch <= 0 || out_features <= 0 || num_groups <= 0) return (int)hipSuccess;
    const int M = (int)batch, N = (int)out_features, K = (int)in_features, G = (int)num_groups;
    const Plan p = choose_plan(M, N, K);
    launch_plan(x, weight, y, M, N, K, p, stream);
    // a team of TPI threads a (row, group), about 8 features a thread (at most 16)
    const int gsize = N / G;
    int tpi = 8;
    while (tpi < 256 && tpi * 8 < gsize) tpi *= 2;
    switch (tpi) {
        case 8: launch_epilogue<8>(y, bias, gn_weight, gn_bias, multiply_weight, M, N, G, p.splits, eps, stream); break;
        case 16: launch_epilogue<16>(y, bias, gn_weight, gn_bias, multiply_weight, M, N, G, p.splits, eps, stream); break;
        case 32: launch_epilogue<32>(y, bias, gn_weight, gn_bias, multiply_weight, M, N, G, p.splits, eps, stream); break;
        case 64: launch_epilogue<64>(y, bias, gn_weight, gn_bias, multiply_weight, M, N, G, p.splits, eps, stream); break;
        case 128: launch_epilogue<128>(y, bias, gn_weight, gn_bias, multiply_weight, M, N, G, p.splits, eps, stream); break;
        default: launch_epilogue<256>(y, bias, gn_weight, gn_bias, multiply_weight, M, N, G, p.splits, eps, stream); break;
    }
    return (int)hipGetLastError();
}

// Reference solution: causal attention probabilities in one kernel.
//
// One block (256 threads) per (batch * head, tile of ROWS query rows). The block computes the
// tile's scores against the keys in chunks of CHUNK, only the chunks at or below the
// diagonal, keeps all of them in registers in fp32, then takes the row maximum and sum
// across the block and writes every probability of its rows once, including the masked
// zeros. Eager PyTorch's fp16 score matrix and its three extra passes over memory disappear;
// what remains is the QK^T work (K = 64) on CUDA cores.
//
// Two tile shapes (ROWS x CHUNK = 4096 = 256 threads x a 4 x 4 register tile):
// - seq > 64: 32 rows x 128-key chunks, up to 4 chunks (seq <= 512).
// - seq <= 64: 64 rows x one 64-key chunk, i.e. one block per (batch, head). With the
//   32 x 128 tile a short sequence (e.g. seq 48 with 2048 heads) ran two blocks per head,
//   each staging a mostly empty 128-key chunk and paying the block's whole fixed chain (q/k
//   loads, five barriers, two serial 32-wide row reductions) for a few rows: no faster than
//   eager. One block per head halves the blocks and the k staging, and the row reductions
//   are 16 wide; the smaller footprint lets 4 blocks share an SM.
//
// - q * scale and a chunk of k sit in shared memory in fp32, dimension-major, so a thread
//   reads 4 query rows and 4 keys of one dimension with two 16-byte loads and does 16 FMAs.
// - Thread t owns rows rg * 4 + [0, 4) and keys kg * 4 + [0, 4) of each chunk, with
//   rg = rw * 4 + ((t >> 3) & 3), kg = kw * 8 + (t & 7), where the 32-thread group t >> 5 is
//   (rw, kw) with CHUNK / 32 values of kw: the 32 threads t .. t | 31 (a warp on NVIDIA)
//   cover 16 rows x 32 keys, and such a group skips the products when all its keys lie above
//   the diagonal or all its rows lie past seq (a warp-uniform branch; on 64-wide wavefronts
//   it is merely divergent). Nothing depends on the warp size for correctness.
// - Row statistics go through shared memory (ROWS rows x CHUNK / 4 key groups), no shuffles.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>
#include <math.h>

namespace {

constexpr int kThreads = 256;
constexpr int kDim = 64;      // head_dim
constexpr int kMaxSeq = 512;
// tile shapes: ROWS query rows x CHUNK keys per chunk, ROWS * CHUNK = 4096 (256 threads x 4 x 4)
constexpr int kRowsL = 32, kChunkL = 128;  // seq > 64: up to 4 chunks
constexpr int kRowsS = 64, kChunkS = 64;   // seq <= 64: one block per (batch, head)

template <bool ALIGNED>
__device__ __forceinline__ void load8(const __half* p, float (&f)[8]) {
    if (ALIGNED) {
        const uint4 u = *reinterpret_cast<const uint4*>(p);
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            f[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] & 0xffffu)));
            f[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] >> 16)));
        }
    } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) f[i] = __half2float(p[i]);
    }
}

template <int kRows, int kChunk, int NC, bool ALIGNED, int MIN_BLOCKS>
__global__ void __launch_bounds__(kThreads, MIN_BLOCKS)
attn_probs(const __half* __restrict__ q, const __half* __restrict__ k, __half* __restrict__ probs,
           int seq, float scale) {
    static_assert(kRows * kChunk == 16 * kThreads, "256 threads x (4 x 4) cover the tile");
    constexpr int kKW = kChunk / 32;        // 32-key column groups (of 8 threads x 4 keys)
    constexpr int kKG = kChunk / 4;         // key groups of 4
    __shared__ __align__(16) float qs[kDim * kRows];     // [d][row], pre-scaled
    __shared__ __align__(16) float ks[kDim * kChunk];    // [d][key]
    __shared__ float red[kRows * (kKG + 1)];             // [row][key group], padded
    __shared__ float row_stat[kRows];

    const int tid = threadIdx.x;
    const unsigned wid = static_cast<unsigned>(tid) >> 5;   // 32-thread group (unsigned: / and % are shifts)
    const int kgi = tid & 7, rgi = (tid >> 3) & 3, kw = static_cast<int>(wid % kKW), rw = static_cast<int>(wid / kKW);
    const int rg = rw * 4 + rgi;   // rows rg * 4 + i
    const int kg = kw * 8 + kgi;   // keys kg * 4 + j of each chunk
    const int64_t bh = blockIdx.y;
    const int r0 = blockIdx.x * kRows;
    const int row_last = min(r0 + kRows - 1, seq - 1);
    const int last_chunk = row_last / kChunk;            // chunks 0 .. last_chunk hold visible keys
    const __half* qb = q + bh * seq * kDim;
    const __half* kb = k + bh * seq * kDim;
    __half* pb = probs + bh * static_cast<int64_t>(seq) * seq;

#pragma unroll
    for (int it = 0; it < kRows / 32; ++it) {   // the query tile: row = (tid & 31) + 32 it, dimensions (tid >> 5) * 8 + [0, 8)
        const int row = (tid & 31) + 32 * it, dg = tid >> 5;
        float f[8];
        if (r0 + row < seq) {
            load8<ALIGNED>(qb + static_cast<int64_t>(r0 + row) * kDim + dg * 8, f);
        } else {
#pragma unroll
            for (int j = 0; j < 8; ++j) f[j] = 0.0f;
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) qs[(dg * 8 + j) * kRows + row] = f[j] * scale;
    }

    float acc[NC][4][4];
#pragma unroll
    for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[c][i][j] = 0.0f;

#pragma unroll
    for (int c = 0; c < NC; ++c) {
        if (c <= last_chunk) {           // the same for the whole block
            __syncthreads();             // the previous chunk's reads are done; qs is visible
#pragma unroll
            for (int it = 0; it < kChunk / 32; ++it) {
                const int key = (tid & 31) + 32 * it, dg = tid >> 5;
                const int gk = c * kChunk + key;
                float f[8];
                if (gk < seq) {
                    load8<ALIGNED>(kb + static_cast<int64_t>(gk) * kDim + dg * 8, f);
                } else {
#pragma unroll
                    for (int j = 0; j < 8; ++j) f[j] = 0.0f;
                }
#pragma unroll
                for (int j = 0; j < 8; ++j) ks[(dg * 8 + j) * kChunk + key] = f[j];
            }
            __syncthreads();
            // this 32-thread group's keys start at wk0; its rows are wr0 .. wr1 (the last one
            // below seq); it skips the products if no key is visible to any of its rows
            const int wk0 = c * kChunk + kw * 32;
            const int wr0 = r0 + rw * 16;
            const int wr1 = min(wr0 + 15, seq - 1);
            if (wr0 < seq && wk0 <= wr1) {
#pragma unroll 8
                for (int d = 0; d < kDim; ++d) {
                    const float4 qv = *reinterpret_cast<const float4*>(&qs[d * kRows + rg * 4]);
                    const float4 kv = *reinterpret_cast<const float4*>(&ks[d * kChunk + kg * 4]);
                    const float qa[4] = {qv.x, qv.y, qv.z, qv.w};
                    const float ka[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
                    for (int i = 0; i < 4; ++i)
#pragma unroll
                        for (int j = 0; j < 4; ++j) acc[c][i][j] += qa[i] * ka[j];
                }
            }
        }
    }

    // row maxima over the visible keys (key <= row; row < seq implies key < seq)
    float part[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int row = r0 + rg * 4 + i;
        part[i] = -INFINITY;
#pragma unroll
        for (int c = 0; c < NC; ++c) {
            if (c <= last_chunk) {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int key = c * kChunk + kg * 4 + j;
                    if (key <= row && row < seq) part[i] = fmaxf(part[i], acc[c][i][j]);
                }
            }
        }
        red[(rg * 4 + i) * (kKG + 1) + kg] = part[i];
    }
    __syncthreads();
    if (tid < kRows) {
        float m = -INFINITY;
        for (int t = 0; t < kKG; ++t) m = fmaxf(m, red[tid * (kKG + 1) + t]);
        row_stat[tid] = m;
    }
    __syncthreads();
    // exponentials (kept in acc; 0 where masked) and their row sums
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int row = r0 + rg * 4 + i;
        const float m = row_stat[rg * 4 + i];
        float s = 0.0f;
#pragma unroll
        for (int c = 0; c < NC; ++c) {
            if (c <= last_chunk) {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int key = c * kChunk + kg * 4 + j;
                    const float e = (key <= row && row < seq) ? __expf(acc[c][i][j] - m) : 0.0f;
                    acc[c][i][j] = e;
                    s += e;
                }
            }
        }
        part[i] = s;
    }
    __syncthreads();   // every thread has read row_stat (the maxima)
#pragma unroll
    for (int i = 0; i < 4; ++i) red[(rg * 4 + i) * (kKG + 1) + kg] = part[i];
    __syncthreads();
    if (tid < kRows) {
        float s = 0.0f;
        for (int t = 0; t < kKG; ++t) s += red[tid * (kKG + 1) + t];
        row_stat[tid] = 1.0f / s;
    }
    __syncthreads();

    // write the computed chunks (probabilities and the masked zeros among them)
    const bool vec4 = ALIGNED && (seq % 4 == 0);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int row = r0 + rg * 4 + i;
        if (row < seq) {
            const float inv = row_stat[rg * 4 + i];
            __half* prow = pb + static_cast<int64_t>(row) * seq;
#pragma unroll
            for (int c = 0; c < NC; ++c) {
                if (c <= last_chunk) {
                    const int key0 = c * kChunk + kg * 4;
                    if (vec4) {
                        if (key0 < seq) {
                            uint2 u;
                            u.x = static_cast<unsigned>(__half_as_ushort(__float2half_rn(acc[c][i][0] * inv))) |
                                  (static_cast<unsigned>(__half_as_ushort(__float2half_rn(acc[c][i][1] * inv))) << 16);
                            u.y = static_cast<unsigned>(__half_as_ushort(__float2half_rn(acc[c][i][2] * inv))) |
                                  (static_cast<unsigned>(__half_as_ushort(__float2half_rn(acc[c][i][3] * inv))) << 16);
                            *reinterpret_cast<uint2*>(prow + key0) = u;
                        }
                    } else {
#pragma unroll
                        for (int j = 0; j < 4; ++j) {
                            if (key0 + j < seq) prow[key0 + j] = __float2half_rn(acc[c][i][j] * inv);
                        }
                    }
                }
            }
        }
    }
    // the keys beyond the computed chunks are all masked: zeros
    const int zstart = (last_chunk + 1) * kChunk;
    if (zstart < seq) {
        const int nz = seq - zstart;
        const int rows_here = row_last - r0 + 1;
        if (vec4) {
            const int nz4 = nz / 4;
            for (int idx = tid; idx < rows_here * nz4; idx += kThreads) {
                const int r = idx / nz4, col = zstart + (idx - r * nz4) * 4;
                *reinterpret_cast<uint2*>(pb + static_cast<int64_t>(r0 + r) * seq + col) = make_uint2(0u, 0u);
            }
        } else {
            for (int idx = tid; idx < rows_here * nz; idx += kThreads) {
                const int r = idx / nz, col = zstart + (idx - r * nz);
                pb[static_cast<int64_t>(r0 + r) * seq + col] = __float2half_rn(0.0f);
            }
        }
    }
}

typedef void (*KernelFn)(const __half*, const __half*, __half*, int, float);

template <bool ALIGNED>
KernelFn pick(int seq) {
    if (seq <= kChunkS) return attn_probs<kRowsS, kChunkS, 1, ALIGNED, 4>;
    switch ((seq + kChunkL - 1) / kChunkL) {
        case 1: return attn_probs<kRowsL, kChunkL, 1, ALIGNED, 2>;
        case 2: return attn_probs<kRowsL, kChunkL, 2, ALIGNED, 2>;
        case 3: return attn_probs<kRowsL, kChunkL, 3, ALIGNED, 2>;
        default: return attn_probs<kRowsL, kChunkL, 4, ALIGNED, 2>;
    }
}

}  // namespace

extern "C" int attn_scores_mask_softmax(const __half* q, const __half* k, __half* probs, int64_t batch,
                                        int64_t heads, int64_t seq, float scale, hipStream_t stream) {
    if (batch <= 0 || heads <= 0 || seq <= 0) return static_cast<int>(hipSuccess);
    const int64_t bh = batch * heads;
    if (seq > kMaxSeq || bh > 65535) return static_cast<int>(hipErrorInvalidValue);
    const bool aligned = (reinterpret_cast<uintptr_t>(q) % 16 == 0) && (reinterpret_cast<uintptr_t>(k) % 16 == 0) &&
                         (reinterpret_cast<uintptr_t>(probs) % 16 == 0);
    const KernelFn kernel = aligned ? pick<true>(static_cast<int>(seq)) : pick<false>(static_cast<int>(seq));
    const int64_t rows = seq <= kChunkS ? kRowsS : kRowsL;
    const dim3 grid(static_cast<unsigned>((seq + rows - 1) / rows), static_cast<unsigned>(bh));
    hipLaunchKernelGGL(kernel, grid, dim3(kThreads), 0, stream, q, k, probs, static_cast<int>(seq), scale);
    return static_cast<int>(hipGetLastError());
}

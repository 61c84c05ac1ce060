// Reference solution for the row-wise inclusive scan cdf[r, :] = cumsum(probs[r, :]), fp32.
//
// - One block of kBlock threads per row walks it in chunks of kBlock * kItems = 4096
//   elements. Warp w of the block owns the contiguous segment [w * warpSize * kItems,
//   (w + 1) * warpSize * kItems) of the chunk; lane l holds the kItems elements
//   w * warpSize * kItems + k * warpSize + l (k = 0 .. kItems - 1), so every load and
//   store is a coalesced access of consecutive floats, whatever the row's alignment.
// - Scan of a segment: for each k, an inclusive shuffle scan over the warpSize values plus
//   the running total of the previous k (broadcast from the last lane). Warp totals go to
//   shared memory (double-buffered by chunk parity: one barrier per chunk), each thread
//   adds the totals of the warps before it and the carry of the previous chunks.
// - The next chunk's loads are issued before the current chunk is scanned, so the DRAM
//   latency overlaps the arithmetic (eager PyTorch loads, then scans, serially).
// - Works for warpSize 32 or 64 (kBlock is a multiple of both; shared arrays sized for
//   kBlock / 32 warps); tail elements load as 0 and are not stored; every thread runs every
//   iteration, so the non-sync shuffles and the barriers are reached by all.

#include <hip/hip_runtime.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kItems = 16;
constexpr int kChunk = kBlock * kItems;
constexpr int kMaxWarps = kBlock / 32;

__device__ __forceinline__ void load_chunk(const float* __restrict__ row, int64_t start, int64_t n, int seg_base,
                                           int lane, float (&v)[kItems]) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
        const int64_t e = start + seg_base + k * warpSize + lane;
        v[k] = e < n ? row[e] : 0.0f;
    }
}

__global__ void __launch_bounds__(kBlock)
cumsum_rows(const float* __restrict__ probs, float* __restrict__ cdf, int64_t rows, int64_t vocab) {
    __shared__ float warp_total[2][kMaxWarps];
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int num_warps = kBlock / warpSize;
    const int seg_base = warp * warpSize * kItems;
    const int64_t row = blockIdx.x;
    const float* __restrict__ src = probs + row * vocab;
    float* __restrict__ dst = cdf + row * vocab;
    const int64_t chunks = (vocab + kChunk - 1) / kChunk;

    float carry = 0.0f;
    float cur[kItems];
    load_chunk(src, 0, vocab, seg_base, lane, cur);
    for (int64_t c = 0; c < chunks; ++c) {
        const int64_t start = c * kChunk;
        float nxt[kItems];
        if (c + 1 < chunks) {
            load_chunk(src, start + kChunk, vocab, seg_base, lane, nxt);
        } else {
#pragma unroll
            for (int k = 0; k < kItems; ++k) nxt[k] = 0.0f;
        }
        // warp-local inclusive scan of the segment
        float run = 0.0f;
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
            float v = cur[k];
            for (int off = 1; off < warpSize; off <<= 1) {
                const float t = __shfl_up(v, off);
                if (lane >= off) v += t;
            }
            v += run;
            cur[k] = v;
            run = __shfl(v, warpSize - 1);
        }
        const int buf = static_cast<int>(c & 1);
        if (lane == 0) warp_total[buf][warp] = run;
        __syncthreads();
        // offsets: the carry of earlier chunks plus the totals of earlier warps
        float before = carry;
        float chunk_total = 0.0f;
        for (int w = 0; w < num_warps; ++w) {
            const float t = warp_total[buf][w];
            if (w < warp) before += t;
            chunk_total += t;
        }
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
            const int64_t e = start + seg_base + k * warpSize + lane;
            if (e < vocab) dst[e] = cur[k] + before;
        }
        carry += chunk_total;
#pragma unroll
        for (int k = 0; k < kItems; ++k) cur[k] = nxt[k];
    }
}

}  // namespace

extern "C" int cumsum_sorted_probs_top_p(const float* probs, float* cdf, int64_t rows, int64_t vocab,
                                         hipStream_t stream) {
    if (rows <= 0 || vocab <= 0) return static_cast<int>(hipSuccess);
    hipLaunchKernelGGL(cumsum_rows, dim3(static_cast<unsigned>(rows)), dim3(kBlock), 0, stream, probs, cdf, rows,
                       vocab);
    return static_cast<int>(hipGetLastError());
}

// Row log-sum-exp, fp16 in, fp32 out: a general, portable solution.
//
// * Few long rows: each row is split into S chunks (S chosen so that there are about
//   1024 blocks in all, with chunks of at least 2048 elements), one block of 256 threads
//   per chunk, so a decode batch of 2-32 rows still spreads over every SM. Many rows: S = 1
//   and the block writes the result directly.
// * One read pass: each thread keeps a running (max m, sum of exp(x - m)) pair ("online"
//   log-sum-exp), fed 8 halves at a time from 16-byte loads (four in flight per thread).
//   Chunks are split into a scalar head up to the first 16-byte boundary, a uint4 body and
//   a scalar tail, so any cols (odd, unaligned rows) takes the vector path.
// * Pairs are merged with a butterfly of __shfl_xor over warpSize lanes (32 or 64), then
//   across the block's warps through shared memory (sized for 1024 / 32 warps).
// * With S > 1 the chunk pairs go to a static device buffer (no allocation per call) and a
//   second kernel, one warp per row, merges them: out = m + log(s).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define LSE_THREADS 256
#define LSE_MAX_WARPS 32          // 1024 threads / 32 lanes
#define LSE_MAX_PARTIALS 65536    // rows * S when S > 1
#define LSE_MIN_CHUNK 2048        // elements per block at least
#define LSE_TARGET_BLOCKS 1024
#define LSE_MAX_GRID 2147483647LL

__device__ float2 lse_partials[LSE_MAX_PARTIALS];

static __device__ __forceinline__ void lse_add(float& m, float& s, float v) {
    if (v > m) {
        s = s * expf(m - v) + 1.0f;  // expf(-inf) = 0 for the first value
        m = v;
    } else {
        s += expf(v - m);
    }
}

static __device__ __forceinline__ void lse_add8(float& m, float& s, const uint4& u) {
    const unsigned int words[4] = {u.x, u.y, u.z, u.w};
    float f[8];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        f[2 * p] = __half2float(__ushort_as_half((unsigned short)(words[p] & 0xffffu)));
        f[2 * p + 1] = __half2float(__ushort_as_half((unsigned short)(words[p] >> 16)));
    }
    float vm = f[0];
#pragma unroll
    for (int q = 1; q < 8; ++q) vm = fmaxf(vm, f[q]);
    if (vm > m) {
        s *= expf(m - vm);
        m = vm;
    }
#pragma unroll
    for (int q = 0; q < 8; ++q) s += expf(f[q] - m);
}

static __device__ __forceinline__ void lse_merge(float& m, float& s, float om, float os) {
    const float nm = fmaxf(m, om);
    if (nm == -INFINITY) return;  // both empty
    s = s * expf(m - nm) + os * expf(om - nm);
    m = nm;
}

static __device__ __forceinline__ void lse_warp_merge(float& m, float& s) {
    for (int off = warpSize / 2; off > 0; off /= 2) {
        const float om = __shfl_xor(m, off);
        const float os = __shfl_xor(s, off);
        lse_merge(m, s, om, os);
    }
}

// Chunk `c` of row `r` per block (grid-stride over rows * S chunks).
__global__ void __launch_bounds__(LSE_THREADS)
logsumexp_chunk_kernel(const __half* __restrict__ x, float* __restrict__ out, int64_t rows, int64_t cols,
                       int64_t nchunks, int64_t chunk) {
    __shared__ float red_m[LSE_MAX_WARPS];
    __shared__ float red_s[LSE_MAX_WARPS];
    const int t = threadIdx.x;
    const int nt = blockDim.x;
    const int lane = t % warpSize;
    const int warp = t / warpSize;
    const int nwarps = nt / warpSize;
    const int64_t total = rows * nchunks;
    for (int64_t blk = blockIdx.x; blk < total; blk += gridDim.x) {
        const int64_t r = blk / nchunks;
        const int64_t c = blk % nchunks;
        const int64_t begin = c * chunk;
        const int64_t end = begin + chunk < cols ? begin + chunk : cols;
        const __half* __restrict__ p = x + r * cols + begin;
        const int64_t len = end > begin ? end - begin : 0;
        // scalar head up to the first 16-byte boundary, uint4 body, scalar tail
        const int64_t past = (int64_t)((reinterpret_cast<uintptr_t>(p) / sizeof(__half)) % 8);
        int64_t head = past == 0 ? 0 : 8 - past;
        if (head > len) head = len;
        const int64_t nvec = (len - head) / 8;

        float m = -INFINITY, s = 0.0f;
        for (int64_t j = t; j < head; j += nt) lse_add(m, s, __half2float(p[j]));
        const uint4* __restrict__ pv = reinterpret_cast<const uint4*>(p + head);
        int64_t i = t;
        for (; i + 3 * nt < nvec; i += 4 * nt) {
            const uint4 a = pv[i], b = pv[i + nt], cc = pv[i + 2 * nt], d = pv[i + 3 * nt];
            lse_add8(m, s, a);
            lse_add8(m, s, b);
            lse_add8(m, s, cc);
            lse_add8(m, s, d);
        }
        for (; i < nvec; i += nt) lse_add8(m, s, pv[i]);
        for (int64_t j = head + 8 * nvec + t; j < len; j += nt) lse_add(m, s, __half2float(p[j]));

        lse_warp_merge(m, s);
        if (lane == 0) {
            red_m[warp] = m;
            red_s[warp] = s;
        }
        __syncthreads();
        if (warp == 0) {
            // nwarps <= warpSize (<= 32 warps of 32 lanes, <= 16 of 64)
            m = lane < nwarps ? red_m[lane] : -INFINITY;
            s = lane < nwarps ? red_s[lane] : 0.0f;
            lse_warp_merge(m, s);
            if (lane == 0) {
                if (nchunks == 1)
                    out[r] = m + logf(s);
                else
                    lse_partials[blk] = make_float2(m, s);
            }
        }
        __syncthreads();  // red_* are reused by the next chunk
    }
}

// One warp per row: merges the row's nchunks pairs.
__global__ void __launch_bounds__(LSE_THREADS)
logsumexp_merge_kernel(float* __restrict__ out, int64_t rows, int64_t nchunks) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t first = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t stride = (int64_t)gridDim.x * warps_per_block;
    for (int64_t r = first; r < rows; r += stride) {
        float m = -INFINITY, s = 0.0f;
        for (int64_t c = lane; c < nchunks; c += warpSize) {
            const float2 q = lse_partials[r * nchunks + c];
            lse_merge(m, s, q.x, q.y);
        }
        lse_warp_merge(m, s);
        if (lane == 0) out[r] = m + logf(s);
    }
}

extern "C" int logsumexp_rows(const __half* x, float* out, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0) return (int)hipSuccess;
    // Chunks per row: about LSE_TARGET_BLOCKS blocks in all, chunks >= LSE_MIN_CHUNK
    // elements, rows * S within the partials buffer.
    int64_t nchunks = (LSE_TARGET_BLOCKS + rows - 1) / rows;
    const int64_t most = (cols + LSE_MIN_CHUNK - 1) / LSE_MIN_CHUNK;
    if (nchunks > most) nchunks = most;
    if (nchunks > LSE_MAX_PARTIALS / rows) nchunks = LSE_MAX_PARTIALS / rows;
    if (nchunks < 1) nchunks = 1;
    int64_t chunk = (cols + nchunks - 1) / nchunks;
    chunk = (chunk + 7) / 8 * 8;  // keeps the chunks of a row on the same 16-byte phase
    nchunks = (cols + chunk - 1) / chunk;
    if (nchunks < 1) nchunks = 1;
    int64_t blocks = rows * nchunks;
    if (blocks > LSE_MAX_GRID) blocks = LSE_MAX_GRID;
    hipLaunchKernelGGL(logsumexp_chunk_kernel, dim3((unsigned int)blocks), dim3(LSE_THREADS), 0, stream, x, out, rows,
                       cols, nchunks, chunk);
    if (nchunks > 1) {
        const int64_t rows_per_block = LSE_THREADS / 32;  // sized for 32-lane warps
        int64_t mblocks = (rows + rows_per_block - 1) / rows_per_block;
        if (mblocks > LSE_MAX_GRID) mblocks = LSE_MAX_GRID;
        hipLaunchKernelGGL(logsumexp_merge_kernel, dim3((unsigned int)mblocks), dim3(LSE_THREADS), 0, stream, out,
                           rows, nchunks);
    }
    return (int)hipGetLastError();
}

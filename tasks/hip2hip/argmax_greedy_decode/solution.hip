// Row argmax (greedy decoding), fp16 logits, int64 out: a general, portable solution.
//
// * One block of 512 threads per row. The row is split into an unaligned head (up to 7
//   elements, so that the body starts on a 16-byte boundary whatever vocab is), a body of
//   16-byte vectors of 8 halves, and a tail; each thread strides the body by the block
//   size with two vector loads in flight, so the whole row streams at full width.
// * Every thread keeps (best value, best index) under the order "larger value, then
//   smaller index", so ties go to the first index whatever order the elements are seen
//   in; the pairs are reduced with __shfl_down inside each warp (any warpSize) and through
//   shared memory across warps (sized for 1024 / 32 warps).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define AM_THREADS 512
#define AM_MAX_WARPS 32  // 1024 threads / 32 lanes, the most warps any block can have

static __device__ __forceinline__ void take(float v, int i, float& best, int& idx) {
    if (v > best || (v == best && i < idx)) {
        best = v;
        idx = i;
    }
}

static __device__ __forceinline__ void take_vec(const uint4& q, int base, float& best, int& idx) {
    const unsigned int w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        take(__half2float(__ushort_as_half((unsigned short)(w[k] & 0xffffu))), base + 2 * k, best, idx);
        take(__half2float(__ushort_as_half((unsigned short)(w[k] >> 16))), base + 2 * k + 1, best, idx);
    }
}

__global__ void argmax_block_per_row_kernel(const __half* __restrict__ logits, int64_t* __restrict__ next,
                                            int64_t vocab) {
    __shared__ float s_best[AM_MAX_WARPS];
    __shared__ int s_idx[AM_MAX_WARPS];
    const int tid = threadIdx.x;
    const int nthreads = blockDim.x;
    const __half* row = logits + (int64_t)blockIdx.x * vocab;
    const int n = (int)vocab;  // vocab <= 2**31 - 1 (checked on the host)

    // head: elements before the first 16-byte boundary of the row
    int head = (int)(((16 - (reinterpret_cast<uintptr_t>(row) & 15)) & 15) / 2);
    if (head > n) head = n;
    const int nvec = (n - head) / 8;
    const int tail_start = head + nvec * 8;

    float best = -INFINITY;
    int idx = 0x7fffffff;
    if (tid < head) take(__half2float(row[tid]), tid, best, idx);
    for (int t = tail_start + tid; t < n; t += nthreads) take(__half2float(row[t]), t, best, idx);

    const uint4* body = reinterpret_cast<const uint4*>(row + head);
    int v = tid;
    for (; v + nthreads < nvec; v += 2 * nthreads) {
        const uint4 a = body[v];
        const uint4 b = body[v + nthreads];
        take_vec(a, head + 8 * v, best, idx);
        take_vec(b, head + 8 * (v + nthreads), best, idx);
    }
    if (v < nvec) take_vec(body[v], head + 8 * v, best, idx);

    // warp reduction, then across warps
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        const float ob = __shfl_down(best, offset);
        const int oi = __shfl_down(idx, offset);
        take(ob, oi, best, idx);
    }
    const int lane = tid % warpSize;
    const int warp = tid / warpSize;
    if (lane == 0) {
        s_best[warp] = best;
        s_idx[warp] = idx;
    }
    __syncthreads();
    if (tid == 0) {
        const int nwarps = (nthreads + warpSize - 1) / warpSize;
        float b = s_best[0];
        int i = s_idx[0];
        for (int w = 1; w < nwarps; ++w) take(s_best[w], s_idx[w], b, i);
        next[blockIdx.x] = (int64_t)i;
    }
}

// Rows longer than 2**31 - 1 (outside the task's shape space): one thread per row.
__global__ void argmax_long_rows_kernel(const __half* __restrict__ logits, int64_t* __restrict__ next, int64_t batch,
                                        int64_t vocab) {
    const int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch) return;
    const __half* row = logits + b * vocab;
    float best = __half2float(row[0]);
    int64_t bi = 0;
    for (int64_t v = 1; v < vocab; ++v) {
        const float x = __half2float(row[v]);
        if (x > best) {
            best = x;
            bi = v;
        }
    }
    next[b] = bi;
}

extern "C" int argmax_greedy_decode(const __half* logits, int64_t* next, int64_t batch, int64_t vocab,
                                    hipStream_t stream) {
    if (batch <= 0 || vocab <= 0) return (int)hipSuccess;
    if (vocab <= 2147483647LL && batch <= 2147483647LL) {
        hipLaunchKernelGGL(argmax_block_per_row_kernel, dim3((unsigned int)batch), dim3(AM_THREADS), 0, stream, logits,
                           next, vocab);
    } else {
        hipLaunchKernelGGL(argmax_long_rows_kernel, dim3((unsigned int)((batch + 63) / 64)), dim3(64), 0, stream, logits,
                           next, batch, vocab);
    }
    return (int)hipGetLastError();
}

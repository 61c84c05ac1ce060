// Per-row top-8 of fp32 scores with indices: one pass over the row.
//
// One block per row. Each thread streams its share of the row once (16-byte loads on the
// 16-byte-aligned body of the row, scalar loads for the unaligned head and the tail) and
// keeps its own top-8 list sorted in registers; most elements are rejected by a single
// compare against the thread's 8th best. Then 8 merge rounds: the block finds the best
// list head (warp shuffles + shared memory), writes it out, and the owning thread pops it.
// Ranking is by (value descending, index ascending) everywhere.

#include <hip/hip_runtime.h>
#include <math.h>
#include <stdint.h>
#include <limits.h>

#define THREADS 256
#define K 8

__device__ __forceinline__ bool ranks_before(float av, int ai, float bv, int bi) {
    return av > bv || (av == bv && ai < bi);
}

struct TopK {
    float v[K];
    int i[K];
};

__device__ __forceinline__ void push(TopK& t, float v, int c) {
    if (!ranks_before(v, c, t.v[K - 1], t.i[K - 1])) return;
    t.v[K - 1] = v;
    t.i[K - 1] = c;
#pragma unroll
    for (int j = K - 1; j > 0; --j) {
        if (ranks_before(t.v[j], t.i[j], t.v[j - 1], t.i[j - 1])) {
            const float tv = t.v[j];
            t.v[j] = t.v[j - 1];
            t.v[j - 1] = tv;
            const int ti = t.i[j];
            t.i[j] = t.i[j - 1];
            t.i[j - 1] = ti;
        }
    }
}

__device__ __forceinline__ void push4(TopK& t, float4 f, int c) {
    push(t, f.x, c);
    push(t, f.y, c + 1);
    push(t, f.z, c + 2);
    push(t, f.w, c + 3);
}

__global__ void __launch_bounds__(THREADS)
topk8_onepass_kernel(const float* __restrict__ scores, float* __restrict__ values, int64_t* __restrict__ indices,
                     int64_t batch, int64_t vocab) {
    __shared__ float s_v[32];
    __shared__ int s_i[32];
    __shared__ int s_best_i;

    const int64_t row = blockIdx.x;
    const float* xr = scores + row * vocab;
    const int tid = threadIdx.x;
    const int lane = tid % warpSize;
    const int warp = tid / warpSize;
    const int nwarps = (THREADS + warpSize - 1) / warpSize;
    const int n = (int)vocab;

    TopK t;
#pragma unroll
    for (int j = 0; j < K; ++j) {
        t.v[j] = -INFINITY;
        t.i[j] = INT_MAX;
    }

    // head: elements before the first 16-byte boundary of the row
    int head = (int)(((16 - ((uintptr_t)xr & 15)) & 15) / 4);
    if (head > n) head = n;
    const int nvec = (n - head) / 4;
    if (tid < head) push(t, xr[tid], tid);

    const float4* xv = reinterpret_cast<const float4*>(xr + head);
    int v4 = tid;
    for (; v4 + THREADS < nvec; v4 += 2 * THREADS) {
        const float4 a = xv[v4];
        const float4 b = xv[v4 + THREADS];
        push4(t, a, head + 4 * v4);
        push4(t, b, head + 4 * (v4 + THREADS));
    }
    if (v4 < nvec) push4(t, xv[v4], head + 4 * v4);

    for (int c = head + 4 * nvec + tid; c < n; c += THREADS) push(t, xr[c], c);

    // merge: K rounds of a block-wide best over the list heads
    for (int j = 0; j < K; ++j) {
        float bv = t.v[0];
        int bi = t.i[0];
        for (int off = warpSize / 2; off > 0; off >>= 1) {
            const float ov = __shfl_xor(bv, off);
            const int oi = __shfl_xor(bi, off);
            if (ranks_before(ov, oi, bv, bi)) {
                bv = ov;
                bi = oi;
            }
        }
        if (lane == 0) {
            s_v[warp] = bv;
            s_i[warp] = bi;
        }
        __syncthreads();
        if (tid == 0) {
            float fv = s_v[0];
            int fi = s_i[0];
            for (int w = 1; w < nwarps; ++w) {
                if (ranks_before(s_v[w], s_i[w], fv, fi)) {
                    fv = s_v[w];
                    fi = s_i[w];
                }
            }
            values[row * K + j] = fv;
            indices[row * K + j] = (int64_t)fi;
            s_best_i = fi;
        }
        __syncthreads();
        if (t.i[0] == s_best_i) {  // indices are unique; the sentinel INT_MAX never wins (vocab >= 8)
#pragma unroll
            for (int q = 0; q < K - 1; ++q) {
                t.v[q] = t.v[q + 1];
                t.i[q] = t.i[q + 1];
            }
            t.v[K - 1] = -INFINITY;
            t.i[K - 1] = INT_MAX;
        }
    }
}

extern "C" int topk8_rows_fp32_sampling(const float* scores, float* values, int64_t* indices, int64_t batch,
                                        int64_t vocab, hipStream_t stream) {
    if (batch <= 0 || vocab <= 0) return (int)hipSuccess;
    hipLaunchKernelGGL(topk8_onepass_kernel, dim3((unsigned int)batch), dim3(THREADS), 0, stream, scores, values,
                       indices, batch, vocab);
    return (int)hipGetLastError();
}

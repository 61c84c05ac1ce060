// Per-row top-8 of fp32 scores with indices: the starting kernel.
//
// One block per row and 8 passes over the row: pass j finds the best element that ranks
// strictly below the (value, index) found by pass j-1, ranking by (value descending,
// index ascending), with a block-wide argmax (warp shuffles, then shared memory).
// Column indices fit in int (vocab <= 262144). Correct for every shape, but the row is read 8 times with scalar loads.

#include <hip/hip_runtime.h>
#include <math.h>
#include <stdint.h>
#include <limits.h>

#define THREADS 256
#define K 8

// true when (av, ai) ranks before (bv, bi)
__device__ __forceinline__ bool ranks_before(float av, int ai, float bv, int bi) {
    return av > bv || (av == bv && ai < bi);
}

__global__ void __launch_bounds__(THREADS)
topk8_multipass_kernel(const float* __restrict__ scores, float* __restrict__ values, int64_t* __restrict__ indices,
                       int64_t batch, int64_t vocab) {
    __shared__ float s_v[32];
    __shared__ int s_i[32];
    __shared__ float s_prev_v;
    __shared__ int s_prev_i;

    const int64_t row = blockIdx.x;
    const float* xr = scores + row * vocab;
    const int tid = threadIdx.x;
    const int lane = tid % warpSize;
    const int warp = tid / warpSize;
    const int nwarps = (THREADS + warpSize - 1) / warpSize;

    float prev_v = INFINITY;
    int prev_i = -1;
    for (int j = 0; j < K; ++j) {
        float best_v = -INFINITY;
        int best_i = INT_MAX;
        for (int c = tid; c < (int)vocab; c += THREADS) {
            const float v = xr[c];
            // eligible: ranks strictly after the previous pick
            if (ranks_before(prev_v, prev_i, v, c) && ranks_before(v, c, best_v, best_i)) {
                best_v = v;
                best_i = c;
            }
        }
        for (int off = warpSize / 2; off > 0; off >>= 1) {
            const float ov = __shfl_xor(best_v, off);
            const int oi = __shfl_xor(best_i, off);
            if (ranks_before(ov, oi, best_v, best_i)) {
                best_v = ov;
                best_i = oi;
            }
        }
        if (lane == 0) {
            s_v[warp] = best_v;
            s_i[warp] = best_i;
        }
        __syncthreads();
        if (tid == 0) {
            float bv = s_v[0];
            int bi = s_i[0];
            for (int w = 1; w < nwarps; ++w) {
                if (ranks_before(s_v[w], s_i[w], bv, bi)) {
                    bv = s_v[w];
                    bi = s_i[w];
                }
            }
            values[row * K + j] = bv;
            indices[row * K + j] = (int64_t)bi;
            s_prev_v = bv;
            s_prev_i = bi;
        }
        __syncthreads();
        prev_v = s_prev_v;
        prev_i = s_prev_i;
    }
}

extern "C" int topk8_rows_fp32_sampling(const float* scores, float* values, int64_t* indices, int64_t batch,
                                        int64_t vocab, hipStream_t stream) {
    if (batch <= 0 || vocab <= 0) return (int)hipSuccess;
    hipLaunchKernelGGL(topk8_multipass_kernel, dim3((unsigned int)batch), dim3(THREADS), 0, stream, scores, values,
                       indices, batch, vocab);
    return (int)hipGetLastError();
}

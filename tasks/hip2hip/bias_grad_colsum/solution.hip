// Column sum (bias gradient), fp16 in, fp32 out: a general, portable solution.
//
// * Parallel over rows as well as columns: a block of 32 x 8 threads owns a strip of 64
//   columns (one half2 per thread; 32 single columns when cols is odd or the pointer is
//   not 4-byte aligned) and one split of the rows; its 8 thread rows walk the split 8 rows
//   apart, four loads in flight per thread, each warp load 128 contiguous bytes. The 8
//   partial sums of a column are added in shared memory.
// * The number of row splits is chosen so that about 1024 blocks run (at least 64 rows
//   per split). With one split the block stores its sums; with several, a first kernel
//   zeroes db and the blocks atomically add their fp32 partials (the order of those few
//   additions varies, within the task's tolerance).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define CS_TX 32
#define CS_TY 8
#define CS_UNROLL 4
#define CS_TARGET_BLOCKS 1024

__global__ void colsum_zero_kernel(float* __restrict__ db, int64_t cols) {
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) db[c] = 0.0f;
}

template <bool PAIR>
__global__ void colsum_split_kernel(const __half* __restrict__ dy, float* __restrict__ db, int64_t rows, int64_t cols,
                                    int64_t rows_per_split, int use_atomics) {
    constexpr int CPB = PAIR ? 2 * CS_TX : CS_TX;  // columns per block
    __shared__ float part[CS_TY][CPB];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t c = (int64_t)blockIdx.x * CPB + (PAIR ? 2 * tx : tx);
    const int64_t r0 = (int64_t)blockIdx.y * rows_per_split;
    const int64_t r1 = r0 + rows_per_split < rows ? r0 + rows_per_split : rows;
    float s0 = 0.0f, s1 = 0.0f;
    if (c < cols) {
        int64_t r = r0 + ty;
        if (PAIR) {
            for (; r + (CS_UNROLL - 1) * CS_TY < r1; r += CS_UNROLL * CS_TY) {
                __half2 v[CS_UNROLL];
#pragma unroll
                for (int k = 0; k < CS_UNROLL; ++k)
                    v[k] = *reinterpret_cast<const __half2*>(dy + (r + k * CS_TY) * cols + c);
#pragma unroll
                for (int k = 0; k < CS_UNROLL; ++k) {
                    s0 += __low2float(v[k]);
                    s1 += __high2float(v[k]);
                }
            }
            for (; r < r1; r += CS_TY) {
                const __half2 v = *reinterpret_cast<const __half2*>(dy + r * cols + c);
                s0 += __low2float(v);
                s1 += __high2float(v);
            }
        } else {
            for (; r + (CS_UNROLL - 1) * CS_TY < r1; r += CS_UNROLL * CS_TY) {
                float v[CS_UNROLL];
#pragma unroll
                for (int k = 0; k < CS_UNROLL; ++k) v[k] = __half2float(dy[(r + k * CS_TY) * cols + c]);
#pragma unroll
                for (int k = 0; k < CS_UNROLL; ++k) s0 += v[k];
            }
            for (; r < r1; r += CS_TY) s0 += __half2float(dy[r * cols + c]);
        }
    }
    if (PAIR) {
        part[ty][2 * tx] = s0;
        part[ty][2 * tx + 1] = s1;
    } else {
        part[ty][tx] = s0;
    }
    __syncthreads();
    const int t = ty * CS_TX + tx;
    if (t < CPB) {
        const int64_t col = (int64_t)blockIdx.x * CPB + t;
        if (col < cols) {
            float s = 0.0f;
#pragma unroll
            for (int k = 0; k < CS_TY; ++k) s += part[k][t];
            if (use_atomics)
                atomicAdd(db + col, s);
            else
                db[col] = s;
        }
    }
}

extern "C" int bias_grad_colsum(const __half* dy, float* db, int64_t rows, int64_t cols, hipStream_t stream) {
    if (cols <= 0) return (int)hipSuccess;
    const bool pair = cols % 2 == 0 && reinterpret_cast<uintptr_t>(dy) % 4 == 0;
    const int64_t cpb = pair ? 2 * CS_TX : CS_TX;
    const int64_t gx = (cols + cpb - 1) / cpb;
    int64_t splits = (CS_TARGET_BLOCKS + gx - 1) / gx;
    const int64_t max_splits = rows / 64 > 1 ? rows / 64 : 1;
    if (splits > max_splits) splits = max_splits;
    const int64_t rows_per_split = rows > 0 ? (rows + splits - 1) / splits : 0;
    if (rows_per_split > 0) splits = (rows + rows_per_split - 1) / rows_per_split;
    const int use_atomics = splits > 1 ? 1 : 0;
    if (use_atomics)
        hipLaunchKernelGGL(colsum_zero_kernel, dim3((unsigned int)((cols + 255) / 256)), dim3(256), 0, stream, db, cols);
    const dim3 grid((unsigned int)gx, (unsigned int)splits);
    const dim3 block(CS_TX, CS_TY);
    if (pair)
        hipLaunchKernelGGL(colsum_split_kernel<true>, grid, block, 0, stream, dy, db, rows, cols, rows_per_split,
                           use_atomics);
    else
        hipLaunchKernelGGL(colsum_split_kernel<false>, grid, block, 0, stream, dy, db, rows, cols, rows_per_split,
                           use_atomics);
    return (int)hipGetLastError();
}

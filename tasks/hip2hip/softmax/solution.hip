// Row softmax, fp32: a general, portable solution.
//
// * Short rows (cols <= 1024): one warp per row; wide rows: one block per row.
// * Coalesced 16-byte loads and stores: each row is split into a scalar head (up to the
//   next 16-byte boundary), a float4 body and a scalar tail, so any cols (odd, prime)
//   still takes the vector path. Used when x and y share their alignment modulo 16.
// * One read pass computes the running (max, sum of exp(x - max)) pair ("online
//   softmax"); the pairs are merged with warp shuffles and, across warps, through
//   shared memory. The write pass reads x again, which is then an L2 hit (a block's row
//   is at most a few KB and was read just before), so DRAM sees x once and y once.
// * Portable: lanes and warps come from warpSize (32 on NVIDIA, 64 on most AMD GPUs);
//   block sizes are multiples of 64, shared scratch holds up to 1024 / 32 = 32 warps,
//   rows go on the x grid dimension with a grid-stride loop.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define SOFTMAX_WARP_PATH_MAX_COLS 1024  // rows up to this length get one warp each
#define SOFTMAX_WARP_BLOCK_THREADS 256   // block size of the warp-per-row kernel
#define SOFTMAX_MAX_WARPS 32             // 1024 threads / 32 lanes (16 warps with 64 lanes)
#define SOFTMAX_MAX_GRID 2147483647LL    // x grid dimension limit; larger loops

// ---- the (max, sum) pair ---------------------------------------------------------------

// Adds one value to a running pair: s is the sum of exp(v - m) over the values seen.
static __device__ __forceinline__ void online_add(float& m, float& s, float v) {
    if (v > m) {
        s = s * expf(m - v) + 1.0f;  // expf(-inf) = 0 for the first value
        m = v;
    } else {
        s += expf(v - m);
    }
}

static __device__ __forceinline__ void online_add4(float& m, float& s, float4 v) {
    const float vm = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    if (vm > m) {
        s *= expf(m - vm);
        m = vm;
    }
    s += expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
}

// Merges pair (om, os) into (m, s).
static __device__ __forceinline__ void merge(float& m, float& s, float om, float os) {
    const float nm = fmaxf(m, om);
    if (nm == -INFINITY) return;  // both sides empty (or all -inf)
    s = s * expf(m - nm) + os * expf(om - nm);
    m = nm;
}

// Butterfly reduction: every lane of the warp ends with the warp's pair.
// All lanes of the warp must call it.
static __device__ __forceinline__ void warp_merge(float& m, float& s) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        const float om = __shfl_xor(m, offset);
        const float os = __shfl_xor(s, offset);
        merge(m, s, om, os);
    }
}

// Every thread of the block ends with the block's pair. blockDim.x must be a multiple
// of warpSize and at most 1024; all threads must call it.
static __device__ __forceinline__ void block_merge(float& m, float& s, float* red_m, float* red_s) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    warp_merge(m, s);
    if (lane == 0) {
        red_m[warp] = m;
        red_s[warp] = s;
    }
    __syncthreads();
    // nwarps <= warpSize for both 32 (<= 32 warps) and 64 lanes (<= 16 warps): every
    // warp reduces the partials itself, so no broadcast step is needed.
    m = lane < nwarps ? red_m[lane] : -INFINITY;
    s = lane < nwarps ? red_s[lane] : 0.0f;
    warp_merge(m, s);
    __syncthreads();  // the scratch is reused for the next row
}

// ---- one row, shared by nthreads cooperating threads (a warp or a block) -----------------

struct RowSplit {
    int64_t head;  // scalar elements before the first 16-byte boundary
    int64_t nvec;  // float4 elements after the head
};

static __device__ __forceinline__ RowSplit split_row(const float* p, int64_t n, bool vec) {
    RowSplit r;
    if (!vec) {
        r.head = n;
        r.nvec = 0;
        return r;
    }
    const int64_t past = (int64_t)((reinterpret_cast<uintptr_t>(p) / sizeof(float)) % 4);
    int64_t head = past == 0 ? 0 : 4 - past;
    if (head > n) head = n;
    r.head = head;
    r.nvec = (n - head) / 4;
    return r;
}

static __device__ __forceinline__ void row_stats(const float* __restrict__ xr, int64_t cols, RowSplit sp,
                                                 int t, int nthreads, float& m, float& s) {
    m = -INFINITY;
    s = 0.0f;
    for (int64_t i = t; i < sp.head; i += nthreads) online_add(m, s, xr[i]);
    const float4* xv = reinterpret_cast<const float4*>(xr + sp.head);
    for (int64_t i = t; i < sp.nvec; i += nthreads) online_add4(m, s, xv[i]);
    for (int64_t i = sp.head + 4 * sp.nvec + t; i < cols; i += nthreads) online_add(m, s, xr[i]);
}

static __device__ __forceinline__ void row_write(const float* __restrict__ xr, float* __restrict__ yr,
                                                 int64_t cols, RowSplit sp, int t, int nthreads,
                                                 float m, float inv_s) {
    for (int64_t i = t; i < sp.head; i += nthreads) yr[i] = expf(xr[i] - m) * inv_s;
    const float4* xv = reinterpret_cast<const float4*>(xr + sp.head);
    float4* yv = reinterpret_cast<float4*>(yr + sp.head);
    for (int64_t i = t; i < sp.nvec; i += nthreads) {
        const float4 v = xv[i];
        float4 o;
        o.x = expf(v.x - m) * inv_s;
        o.y = expf(v.y - m) * inv_s;
        o.z = expf(v.z - m) * inv_s;
        o.w = expf(v.w - m) * inv_s;
        yv[i] = o;
    }
    for (int64_t i = sp.head + 4 * sp.nvec + t; i < cols; i += nthreads) yr[i] = expf(xr[i] - m) * inv_s;
}

// ---- kernels -----------------------------------------------------------------------------

// One warp per row; a block holds blockDim.x / warpSize warps.
__global__ void softmax_warp_per_row_kernel(const float* __restrict__ x, float* __restrict__ y,
                                            int64_t rows, int64_t cols, bool vec) {
    const int lane = threadIdx.x % warpSize;
    const int warps_per_block = blockDim.x / warpSize;
    const int64_t first = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t stride = (int64_t)gridDim.x * warps_per_block;
    // The loop bound depends on the warp only, so whole warps enter the shuffles.
    for (int64_t row = first; row < rows; row += stride) {
        const float* xr = x + row * cols;
        float* yr = y + row * cols;
        const RowSplit sp = split_row(xr, cols, vec);
        float m, s;
        row_stats(xr, cols, sp, lane, warpSize, m, s);
        warp_merge(m, s);
        row_write(xr, yr, cols, sp, lane, warpSize, m, 1.0f / s);
    }
}

// One block per row.
__global__ void softmax_block_per_row_kernel(const float* __restrict__ x, float* __restrict__ y,
                                             int64_t rows, int64_t cols, bool vec) {
    __shared__ float red_m[SOFTMAX_MAX_WARPS];
    __shared__ float red_s[SOFTMAX_MAX_WARPS];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* xr = x + row * cols;
        float* yr = y + row * cols;
        const RowSplit sp = split_row(xr, cols, vec);
        float m, s;
        row_stats(xr, cols, sp, threadIdx.x, blockDim.x, m, s);
        block_merge(m, s, red_m, red_s);
        row_write(xr, yr, cols, sp, threadIdx.x, blockDim.x, m, 1.0f / s);
    }
}

extern "C" int softmax(const float* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    // The float4 body of a row is aligned for x and y alike only if they share their
    // offset from a 16-byte boundary (always true for fresh allocations).
    const bool vec = (reinterpret_cast<uintptr_t>(x) % 16) == (reinterpret_cast<uintptr_t>(y) % 16);
    if (cols <= SOFTMAX_WARP_PATH_MAX_COLS) {
        // The host does not know warpSize: size the grid for 32-lane warps (the most warps
        // per block); with 64-lane warps the grid-stride loop gives each warp two rows.
        const int threads = SOFTMAX_WARP_BLOCK_THREADS;
        const int64_t rows_per_block = threads / 32;
        int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        if (blocks > SOFTMAX_MAX_GRID) blocks = SOFTMAX_MAX_GRID;
        hipLaunchKernelGGL(softmax_warp_per_row_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream,
                           x, y, rows, cols, vec);
    } else {
        // About 16 elements per thread, 128 to 1024 threads (multiples of 64).
        int threads = 128;
        while (threads < 1024 && (int64_t)threads * 16 < cols) threads *= 2;
        const int64_t blocks = rows < SOFTMAX_MAX_GRID ? rows : SOFTMAX_MAX_GRID;
        hipLaunchKernelGGL(softmax_block_per_row_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream,
                           x, y, rows, cols, vec);
    }
    return (int)hipGetLastError();
}

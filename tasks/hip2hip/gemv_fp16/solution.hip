// Decode GEMV y = W x, fp16 in/out, fp32 accumulation: a general, portable solution.
//
// * One warp per GV_ROWS rows (2): the lanes of the warp stride over k together, so the
//   loads of a row are coalesced; each warp-wide load reads 512 contiguous bytes of a row
//   when every lane takes 16 bytes (8 halves, a uint4).
// * Vector path (k % 8 == 0, w and x 16-byte aligned): per step a lane loads one uint4
//   of each of its two rows and of x, twice (unrolled), so four independent 16-byte
//   loads of w are in flight per lane; x (at most 64 KB) stays in L1/L2 and is shared by
//   the two rows.
// * Any other k (odd, not a multiple of 8) or alignment: each row is split into a scalar
//   head up to its first 16-byte boundary, a uint4 body and a scalar tail, so w is still
//   read with 16-byte loads; x is then read with scalar loads (L1 hits).
// * The per-lane fp32 partial sums are combined with a butterfly of __shfl_xor over
//   warpSize lanes (32 on NVIDIA, 64 on most AMD GPUs): no shared memory, no barrier.
// * The grid is sized for 32-lane warps (the most warps per block); with 64-lane warps the
//   grid-stride loop gives each warp more rows. Loop bounds depend on the warp only, so
//   whole warps reach the shuffles.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define GV_THREADS 256
#define GV_ROWS 2
#define GV_MAX_GRID 2147483647LL

static __device__ __forceinline__ float gv_lo(unsigned int bits) {
    return __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
}
static __device__ __forceinline__ float gv_hi(unsigned int bits) {
    return __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}

// acc += dot(8 halves of a, 8 halves of b), in element order.
static __device__ __forceinline__ float gv_dot8(const uint4& a, const uint4& b, float acc) {
    acc = fmaf(gv_lo(a.x), gv_lo(b.x), acc);
    acc = fmaf(gv_hi(a.x), gv_hi(b.x), acc);
    acc = fmaf(gv_lo(a.y), gv_lo(b.y), acc);
    acc = fmaf(gv_hi(a.y), gv_hi(b.y), acc);
    acc = fmaf(gv_lo(a.z), gv_lo(b.z), acc);
    acc = fmaf(gv_hi(a.z), gv_hi(b.z), acc);
    acc = fmaf(gv_lo(a.w), gv_lo(b.w), acc);
    acc = fmaf(gv_hi(a.w), gv_hi(b.w), acc);
    return acc;
}

// acc += dot(8 halves of a, the 8 halves at p), p with any 2-byte alignment.
static __device__ __forceinline__ float gv_dot8_scalar(const uint4& a, const __half* __restrict__ p, float acc) {
    acc = fmaf(gv_lo(a.x), __half2float(p[0]), acc);
    acc = fmaf(gv_hi(a.x), __half2float(p[1]), acc);
    acc = fmaf(gv_lo(a.y), __half2float(p[2]), acc);
    acc = fmaf(gv_hi(a.y), __half2float(p[3]), acc);
    acc = fmaf(gv_lo(a.z), __half2float(p[4]), acc);
    acc = fmaf(gv_hi(a.z), __half2float(p[5]), acc);
    acc = fmaf(gv_lo(a.w), __half2float(p[6]), acc);
    acc = fmaf(gv_hi(a.w), __half2float(p[7]), acc);
    return acc;
}

static __device__ __forceinline__ float gv_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// Requires k % 8 == 0 and 16-byte aligned w and x.
__global__ void __launch_bounds__(GV_THREADS)
gemv_vec8_kernel(const __half* __restrict__ w, const __half* __restrict__ x, __half* __restrict__ y, int64_t n,
                 int64_t k) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t warp = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t nwarps = (int64_t)gridDim.x * warps_per_block;
    const int64_t nvec = k / 8;
    const int64_t ws = warpSize;
    const uint4* __restrict__ xv = reinterpret_cast<const uint4*>(x);
    for (int64_t row0 = warp * GV_ROWS; row0 < n; row0 += nwarps * GV_ROWS) {
        // A missing second row (odd n) re-reads the last row and is not stored.
        const int64_t row1 = row0 + 1 < n ? row0 + 1 : row0;
        const uint4* __restrict__ w0 = reinterpret_cast<const uint4*>(w + row0 * k);
        const uint4* __restrict__ w1 = reinterpret_cast<const uint4*>(w + row1 * k);
        float a0 = 0.0f, a1 = 0.0f, b0 = 0.0f, b1 = 0.0f;
        int64_t i = lane;
        for (; i + ws < nvec; i += 2 * ws) {
            const uint4 p0 = w0[i], p1 = w1[i], q0 = w0[i + ws], q1 = w1[i + ws];
            const uint4 xp = xv[i], xq = xv[i + ws];
            a0 = gv_dot8(p0, xp, a0);
            a1 = gv_dot8(p1, xp, a1);
            b0 = gv_dot8(q0, xq, b0);
            b1 = gv_dot8(q1, xq, b1);
        }
        if (i < nvec) {
            const uint4 xp = xv[i];
            a0 = gv_dot8(w0[i], xp, a0);
            a1 = gv_dot8(w1[i], xp, a1);
        }
        const float s0 = gv_warp_sum(a0 + b0);
        const float s1 = gv_warp_sum(a1 + b1);
        if (lane == 0) {
            y[row0] = __float2half_rn(s0);
            if (row0 + 1 < n) y[row0 + 1] = __float2half_rn(s1);
        }
    }
}

// Any k and alignment: per row a scalar head, a uint4 body of w and a scalar tail.
__global__ void __launch_bounds__(GV_THREADS)
gemv_any_kernel(const __half* __restrict__ w, const __half* __restrict__ x, __half* __restrict__ y, int64_t n,
                int64_t k) {
    const int lane = threadIdx.x % warpSize;
    const int64_t warps_per_block = blockDim.x / warpSize;
    const int64_t warp = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
    const int64_t nwarps = (int64_t)gridDim.x * warps_per_block;
    const int64_t ws = warpSize;
    for (int64_t row = warp; row < n; row += nwarps) {
        const __half* __restrict__ wr = w + row * k;
        const int64_t past = (int64_t)((reinterpret_cast<uintptr_t>(wr) / sizeof(__half)) % 8);
        int64_t head = past == 0 ? 0 : 8 - past;
        if (head > k) head = k;
        const int64_t nvec = (k - head) / 8;
        const int64_t body_end = head + 8 * nvec;
        float acc = 0.0f, acc2 = 0.0f;
        for (int64_t j = lane; j < head; j += ws) acc = fmaf(__half2float(wr[j]), __half2float(x[j]), acc);
        const uint4* __restrict__ wv = reinterpret_cast<const uint4*>(wr + head);
        const __half* __restrict__ xb = x + head;
        int64_t i = lane;
        for (; i + ws < nvec; i += 2 * ws) {
            const uint4 p = wv[i], q = wv[i + ws];
            acc = gv_dot8_scalar(p, xb + 8 * i, acc);
            acc2 = gv_dot8_scalar(q, xb + 8 * (i + ws), acc2);
        }
        if (i < nvec) acc = gv_dot8_scalar(wv[i], xb + 8 * i, acc);
        for (int64_t j = body_end + lane; j < k; j += ws) acc = fmaf(__half2float(wr[j]), __half2float(x[j]), acc);
        const float s = gv_warp_sum(acc + acc2);
        if (lane == 0) y[row] = __float2half_rn(s);
    }
}

extern "C" int gemv_fp16(const __half* w, const __half* x, __half* y, int64_t n, int64_t k, hipStream_t stream) {
    if (n <= 0) return (int)hipSuccess;
    const bool aligned = k % 8 == 0 && (reinterpret_cast<uintptr_t>(w) % 16) == 0 &&
                         (reinterpret_cast<uintptr_t>(x) % 16) == 0;
    // Warps per block assuming 32 lanes; with 64 lanes the grid-stride loops cover the rest.
    const int64_t warps_per_block = GV_THREADS / 32;
    if (aligned) {
        const int64_t rows_per_block = warps_per_block * GV_ROWS;
        int64_t blocks = (n + rows_per_block - 1) / rows_per_block;
        if (blocks > GV_MAX_GRID) blocks = GV_MAX_GRID;
        hipLaunchKernelGGL(gemv_vec8_kernel, dim3((unsigned int)blocks), dim3(GV_THREADS), 0, stream, w, x, y, n, k);
    } else {
        int64_t blocks = (n + warps_per_block - 1) / warps_per_block;
        if (blocks > GV_MAX_GRID) blocks = GV_MAX_GRID;
        hipLaunchKernelGGL(gemv_any_kernel, dim3((unsigned int)blocks), dim3(GV_THREADS), 0, stream, w, x, y, n, k);
    }
    return (int)hipGetLastError();
}

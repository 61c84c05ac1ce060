// Log-softmax over the last dimension, fp16 in, fp32 out: a general, portable solution.
//
// Two kernels over a grid of (rows, splits) blocks, splits chosen so that a few hundred
// blocks work even for a handful of rows (each block a contiguous chunk of >= 4096 values):
// 1. lsm_partial_kernel: one read of the chunk, an online (running max, rescaled sum of
//    exponentials) reduction per thread with one rescale per 8-value vector, combined
//    across the block; (max, sum) per chunk go to a fixed __device__ buffer.
// 2. lsm_write_kernel: every block combines its row's partials into log Z and writes
//    y = x - log Z for its chunk (the chunk was just read: mostly an L2 hit for few rows).
// Vector width by shape and alignment: 8 halves (16-byte loads, two 16-byte stores) when
// cols % 8 == 0 and x, y are 16-byte aligned; 2 when cols is even; else scalar.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define LSM_THREADS 256
#define LSM_MAX_WARPS 32
#define LSM_MAX_PARTIALS (1 << 20)   // rows * splits
#define LSM_TARGET_BLOCKS 512
#define LSM_MIN_VECS_PER_BLOCK 512

__device__ float2 g_lsm_partials[LSM_MAX_PARTIALS];

static __device__ __forceinline__ void lsm_unpack2(unsigned int bits, float* f) {
    f[0] = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    f[1] = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}

template <int V>
static __device__ __forceinline__ void lsm_load(const __half* __restrict__ p, int64_t i, float* f) {
    if constexpr (V == 8) {
        const uint4 u = reinterpret_cast<const uint4*>(p)[i];
        lsm_unpack2(u.x, f);
        lsm_unpack2(u.y, f + 2);
        lsm_unpack2(u.z, f + 4);
        lsm_unpack2(u.w, f + 6);
    } else if constexpr (V == 2) {
        lsm_unpack2(reinterpret_cast<const unsigned int*>(p)[i], f);
    } else {
        f[0] = __half2float(p[i]);
    }
}

template <int V>
static __device__ __forceinline__ void lsm_store(float* __restrict__ p, int64_t i, const float* f) {
    if constexpr (V == 8) {
        float4* q = reinterpret_cast<float4*>(p) + 2 * i;
        q[0] = make_float4(f[0], f[1], f[2], f[3]);
        q[1] = make_float4(f[4], f[5], f[6], f[7]);
    } else if constexpr (V == 2) {
        reinterpret_cast<float2*>(p)[i] = make_float2(f[0], f[1]);
    } else {
        p[i] = f[0];
    }
}

// (m, s) represents s * exp(m); an empty state is (-inf, 0).
static __device__ __forceinline__ void lsm_combine(float& m, float& s, float m2, float s2) {
    const float mn = fmaxf(m, m2);
    if (mn == -INFINITY) return;  // both empty
    s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
    m = mn;
}

template <int V>
__global__ void __launch_bounds__(LSM_THREADS)
lsm_partial_kernel(const __half* __restrict__ x, int64_t cols, int64_t chunk) {
    __shared__ float pm[LSM_MAX_WARPS];
    __shared__ float ps[LSM_MAX_WARPS];
    const int64_t row = blockIdx.x;
    const int64_t k = blockIdx.y;
    const int64_t nvec = cols / V;
    const int64_t start = k * chunk;
    const int64_t end = start + chunk < nvec ? start + chunk : nvec;
    const __half* xr = x + row * cols;
    float m = -INFINITY, s = 0.0f;
    for (int64_t i = start + threadIdx.x; i < end; i += LSM_THREADS) {
        float f[V];
        lsm_load<V>(xr, i, f);
        float vm = f[0];
#pragma unroll
        for (int q = 1; q < V; ++q) vm = fmaxf(vm, f[q]);
        const float mn = fmaxf(m, vm);
        float vs = 0.0f;
#pragma unroll
        for (int q = 0; q < V; ++q) vs += __expf(f[q] - mn);
        s = s * __expf(m - mn) + vs;  // m = -inf at first: exp(-inf) = 0
        m = mn;
    }
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        const float m2 = __shfl_xor(m, offset);
        const float s2 = __shfl_xor(s, offset);
        lsm_combine(m, s, m2, s2);
    }
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    if (lane == 0) {
        pm[warp] = m;
        ps[warp] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / warpSize); ++w) lsm_combine(m, s, pm[w], ps[w]);
        g_lsm_partials[row * gridDim.y + k] = make_float2(m, s);
    }
}

template <int V>
__global__ void __launch_bounds__(LSM_THREADS)
lsm_write_kernel(const __half* __restrict__ x, float* __restrict__ y, int64_t cols, int64_t chunk) {
    const int64_t row = blockIdx.x;
    const int64_t k = blockIdx.y;
    const int64_t splits = gridDim.y;
    // Every thread combines the row's partials in the same order (a few dozen at most).
    float m = -INFINITY, s = 0.0f;
    for (int64_t j = 0; j < splits; ++j) {
        const float2 p = g_lsm_partials[row * splits + j];
        lsm_combine(m, s, p.x, p.y);
    }
    const float lse = m + logf(s);
    const int64_t nvec = cols / V;
    const int64_t start = k * chunk;
    const int64_t end = start + chunk < nvec ? start + chunk : nvec;
    const __half* xr = x + row * cols;
    float* yr = y + row * cols;
    for (int64_t i = start + threadIdx.x; i < end; i += LSM_THREADS) {
        float f[V];
        lsm_load<V>(xr, i, f);
#pragma unroll
        for (int q = 0; q < V; ++q) f[q] -= lse;
        lsm_store<V>(yr, i, f);
    }
}

template <int V>
static void lsm_launch(const __half* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    const int64_t nvec = cols / V;
    int64_t splits = (LSM_TARGET_BLOCKS + rows - 1) / rows;
    const int64_t by_size = (nvec + LSM_MIN_VECS_PER_BLOCK * 8 / V - 1) / (LSM_MIN_VECS_PER_BLOCK * 8 / V);
    if (splits > by_size) splits = by_size;
    if (splits > LSM_MAX_PARTIALS / rows) splits = LSM_MAX_PARTIALS / rows;
    if (splits > 65535) splits = 65535;
    if (splits < 1) splits = 1;
    const int64_t chunk = (nvec + splits - 1) / splits;
    const dim3 grid((unsigned int)rows, (unsigned int)splits);
    hipLaunchKernelGGL(lsm_partial_kernel<V>, grid, dim3(LSM_THREADS), 0, stream, x, cols, chunk);
    hipLaunchKernelGGL(lsm_write_kernel<V>, grid, dim3(LSM_THREADS), 0, stream, x, y, cols, chunk);
}

extern "C" int log_softmax_vocab(const __half* x, float* y, int64_t rows, int64_t cols, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    if (rows > LSM_MAX_PARTIALS || rows > 2147483647LL) return (int)hipErrorInvalidValue;
    const uintptr_t any = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
    if (cols % 8 == 0 && any % 16 == 0)
        lsm_launch<8>(x, y, rows, cols, stream);
    else if (cols % 2 == 0 && any % 8 == 0)
        lsm_launch<2>(x, y, rows, cols, stream);
    else
        lsm_launch<1>(x, y, rows, cols, stream);
    return (int)hipGetLastError();
}

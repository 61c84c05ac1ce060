// Log-softmax backward over the last dimension, fp16: a general, portable solution.
//
// Two kernels over a grid of (rows, splits) blocks, splits chosen so that a few hundred
// blocks work even for a handful of rows (each block a contiguous chunk of >= 4096 values):
// 1. lsmb_partial_kernel: the chunk's sum of dy (16-byte loads, two in flight per thread,
//    shuffle + cross-warp reduction) into a fixed __device__ buffer.
// 2. lsmb_write_kernel: every block adds up its row's partial sums (in the same order) and
//    writes dx = dy - exp(logp) * sum for its chunk, 16 bytes at a time.
// Vector width by shape and alignment: 8 halves when vocab % 8 == 0 and the pointers are
// 16-byte aligned; 2 when vocab is even; else scalar.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define LSMB_THREADS 256
#define LSMB_MAX_WARPS 32
#define LSMB_MAX_PARTIALS (1 << 20)  // rows * splits
#define LSMB_TARGET_BLOCKS 512
#define LSMB_MIN_VALUES_PER_BLOCK 4096

__device__ float g_lsmb_partials[LSMB_MAX_PARTIALS];

static __device__ __forceinline__ void lsmb_unpack2(unsigned int bits, float* f) {
    f[0] = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    f[1] = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}
static __device__ __forceinline__ unsigned int lsmb_pack2(float lo, float hi) {
    return (unsigned int)__half_as_ushort(__float2half_rn(lo)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(hi)) << 16);
}

template <int V>
static __device__ __forceinline__ void lsmb_load(const __half* __restrict__ p, int64_t i, float* f) {
    if constexpr (V == 8) {
        const uint4 u = reinterpret_cast<const uint4*>(p)[i];
        lsmb_unpack2(u.x, f);
        lsmb_unpack2(u.y, f + 2);
        lsmb_unpack2(u.z, f + 4);
        lsmb_unpack2(u.w, f + 6);
    } else if constexpr (V == 2) {
        lsmb_unpack2(reinterpret_cast<const unsigned int*>(p)[i], f);
    } else {
        f[0] = __half2float(p[i]);
    }
}
template <int V>
static __device__ __forceinline__ void lsmb_store(__half* __restrict__ p, int64_t i, const float* f) {
    if constexpr (V == 8) {
        uint4 u;
        u.x = lsmb_pack2(f[0], f[1]);
        u.y = lsmb_pack2(f[2], f[3]);
        u.z = lsmb_pack2(f[4], f[5]);
        u.w = lsmb_pack2(f[6], f[7]);
        reinterpret_cast<uint4*>(p)[i] = u;
    } else if constexpr (V == 2) {
        reinterpret_cast<unsigned int*>(p)[i] = lsmb_pack2(f[0], f[1]);
    } else {
        p[i] = __float2half_rn(f[0]);
    }
}

template <int V>
__global__ void __launch_bounds__(LSMB_THREADS)
lsmb_partial_kernel(const __half* __restrict__ dy, int64_t vocab, int64_t chunk) {
    __shared__ float part[LSMB_MAX_WARPS];
    const int64_t row = blockIdx.x;
    const int64_t k = blockIdx.y;
    const int64_t nvec = vocab / V;
    const int64_t start = k * chunk;
    const int64_t end = start + chunk < nvec ? start + chunk : nvec;
    const __half* g = dy + row * vocab;
    float s0 = 0.0f, s1 = 0.0f;
    int64_t i = start + threadIdx.x;
    for (; i + LSMB_THREADS < end; i += 2 * LSMB_THREADS) {  // two independent loads in flight
        float a[V], b[V];
        lsmb_load<V>(g, i, a);
        lsmb_load<V>(g, i + LSMB_THREADS, b);
#pragma unroll
        for (int q = 0; q < V; ++q) {
            s0 += a[q];
            s1 += b[q];
        }
    }
    if (i < end) {
        float a[V];
        lsmb_load<V>(g, i, a);
#pragma unroll
        for (int q = 0; q < V; ++q) s0 += a[q];
    }
    float s = s0 + s1;
    for (int offset = warpSize / 2; offset > 0; offset /= 2) s += __shfl_xor(s, offset);
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    if (lane == 0) part[warp] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / warpSize); ++w) s += part[w];
        g_lsmb_partials[row * gridDim.y + k] = s;
    }
}

template <int V>
__global__ void __launch_bounds__(LSMB_THREADS)
lsmb_write_kernel(const __half* __restrict__ dy, const __half* __restrict__ logp, __half* __restrict__ dx,
                  int64_t vocab, int64_t chunk) {
    const int64_t row = blockIdx.x;
    const int64_t k = blockIdx.y;
    const int64_t splits = gridDim.y;
    float sum = 0.0f;
    for (int64_t j = 0; j < splits; ++j) sum += g_lsmb_partials[row * splits + j];
    const int64_t nvec = vocab / V;
    const int64_t start = k * chunk;
    const int64_t end = start + chunk < nvec ? start + chunk : nvec;
    const int64_t off = row * vocab;
    for (int64_t i = start + threadIdx.x; i < end; i += LSMB_THREADS) {
        float g[V], lp[V];
        lsmb_load<V>(dy + off, i, g);
        lsmb_load<V>(logp + off, i, lp);
#pragma unroll
        for (int q = 0; q < V; ++q) g[q] -= __expf(lp[q]) * sum;
        lsmb_store<V>(dx + off, i, g);
    }
}

template <int V>
static void lsmb_launch(const __half* dy, const __half* logp, __half* dx, int64_t rows, int64_t vocab,
                        hipStream_t stream) {
    const int64_t nvec = vocab / V;
    const int64_t min_vecs = LSMB_MIN_VALUES_PER_BLOCK / V;
    int64_t splits = (LSMB_TARGET_BLOCKS + rows - 1) / rows;
    const int64_t by_size = (nvec + min_vecs - 1) / min_vecs;
    if (splits > by_size) splits = by_size;
    if (splits > LSMB_MAX_PARTIALS / rows) splits = LSMB_MAX_PARTIALS / rows;
    if (splits > 65535) splits = 65535;
    if (splits < 1) splits = 1;
    const int64_t chunk = (nvec + splits - 1) / splits;
    const dim3 grid((unsigned int)rows, (unsigned int)splits);
    hipLaunchKernelGGL(lsmb_partial_kernel<V>, grid, dim3(LSMB_THREADS), 0, stream, dy, vocab, chunk);
    hipLaunchKernelGGL(lsmb_write_kernel<V>, grid, dim3(LSMB_THREADS), 0, stream, dy, logp, dx, vocab, chunk);
}

extern "C" int log_softmax_backward(const __half* dy, const __half* logp, __half* dx, int64_t rows, int64_t vocab,
                                    hipStream_t stream) {
    if (rows <= 0 || vocab <= 0) return (int)hipSuccess;
    if (rows > LSMB_MAX_PARTIALS) return (int)hipErrorInvalidValue;
    const uintptr_t any =
        reinterpret_cast<uintptr_t>(dy) | reinterpret_cast<uintptr_t>(logp) | reinterpret_cast<uintptr_t>(dx);
    if (vocab % 8 == 0 && any % 16 == 0)
        lsmb_launch<8>(dy, logp, dx, rows, vocab, stream);
    else if (vocab % 2 == 0 && any % 4 == 0)
        lsmb_launch<2>(dy, logp, dx, rows, vocab, stream);
    else
        lsmb_launch<1>(dy, logp, dx, rows, vocab, stream);
    return (int)hipGetLastError();
}

// Per-token cross-entropy with label smoothing and ignore_index, fp16 logits: a general,
// portable solution.
//
// * One read of the logits: each thread keeps an online (running max, rescaled sum of
//   exponentials) pair and a plain sum of x, with one rescale per 8-value vector; the
//   triples are combined with shuffles and across warps.
// * A grid of (rows, splits) blocks, splits chosen so that a few hundred blocks work even
//   for a handful of rows (each block a contiguous chunk of >= 4096 logits); the partial
//   triples go to a fixed __device__ buffer and a second small kernel (one thread per row)
//   combines them, reads the target logit and writes the loss. Rows whose target is
//   ignore_index are not read at all.
// * 16-byte loads of 8 halves when vocab % 8 == 0 and x is 16-byte aligned; 4-byte loads
//   of 2 when vocab is even; scalar otherwise.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define CE_THREADS 256
#define CE_MAX_WARPS 32
#define CE_MAX_PARTIALS (1 << 20)   // rows * splits
#define CE_TARGET_BLOCKS 512
#define CE_MIN_VALUES_PER_BLOCK 4096

__device__ float4 g_ce_partials[CE_MAX_PARTIALS];   // (max, sum of exp(x - max), sum of x, unused)

static __device__ __forceinline__ void ce_unpack2(unsigned int bits, float* f) {
    f[0] = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    f[1] = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}

template <int V>
static __device__ __forceinline__ void ce_load(const __half* __restrict__ p, int64_t i, float* f) {
    if constexpr (V == 8) {
        const uint4 u = reinterpret_cast<const uint4*>(p)[i];
        ce_unpack2(u.x, f);
        ce_unpack2(u.y, f + 2);
        ce_unpack2(u.z, f + 4);
        ce_unpack2(u.w, f + 6);
    } else if constexpr (V == 2) {
        ce_unpack2(reinterpret_cast<const unsigned int*>(p)[i], f);
    } else {
        f[0] = __half2float(p[i]);
    }
}

// (m, s) represents s * exp(m); an empty state is (-inf, 0).
static __device__ __forceinline__ void ce_combine(float& m, float& s, float m2, float s2) {
    const float mn = fmaxf(m, m2);
    if (mn == -INFINITY) return;  // both empty
    s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
    m = mn;
}

template <int V>
__global__ void __launch_bounds__(CE_THREADS)
ce_partial_kernel(const __half* __restrict__ x, const int32_t* __restrict__ target, int64_t vocab, int64_t chunk,
                  int64_t ignore_index) {
    __shared__ float pm[CE_MAX_WARPS];
    __shared__ float ps[CE_MAX_WARPS];
    __shared__ float px[CE_MAX_WARPS];
    const int64_t row = blockIdx.x;
    const int64_t k = blockIdx.y;
    if ((int64_t)target[row] == ignore_index) return;  // the same for the whole block; its partial is never read
    const int64_t nvec = vocab / V;
    const int64_t start = k * chunk;
    const int64_t end = start + chunk < nvec ? start + chunk : nvec;
    const __half* xr = x + row * vocab;
    float m = -INFINITY, s = 0.0f, sx = 0.0f;
    for (int64_t i = start + threadIdx.x; i < end; i += CE_THREADS) {
        float f[V];
        ce_load<V>(xr, i, f);
        float vm = f[0];
#pragma unroll
        for (int q = 1; q < V; ++q) vm = fmaxf(vm, f[q]);
        const float mn = fmaxf(m, vm);
        float vs = 0.0f;
#pragma unroll
        for (int q = 0; q < V; ++q) {
            vs += __expf(f[q] - mn);
            sx += f[q];
        }
        s = s * __expf(m - mn) + vs;  // m = -inf at first: exp(-inf) = 0
        m = mn;
    }
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        const float m2 = __shfl_xor(m, offset);
        const float s2 = __shfl_xor(s, offset);
        sx += __shfl_xor(sx, offset);
        ce_combine(m, s, m2, s2);
    }
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    if (lane == 0) {
        pm[warp] = m;
        ps[warp] = s;
        px[warp] = sx;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / warpSize); ++w) {
            ce_combine(m, s, pm[w], ps[w]);
            sx += px[w];
        }
        g_ce_partials[row * gridDim.y + k] = make_float4(m, s, sx, 0.0f);
    }
}

__global__ void ce_finalize_kernel(const __half* __restrict__ x, const int32_t* __restrict__ target,
                                   float* __restrict__ loss, int64_t rows, int64_t vocab, int64_t splits,
                                   int64_t ignore_index, float label_smoothing) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const int64_t tgt = target[row];
    if (tgt == ignore_index) {
        loss[row] = 0.0f;
        return;
    }
    float m = -INFINITY, s = 0.0f, sx = 0.0f;
    for (int64_t j = 0; j < splits; ++j) {
        const float4 p = g_ce_partials[row * splits + j];
        ce_combine(m, s, p.x, p.y);
        sx += p.z;
    }
    const float lse = m + logf(s);
    const float nll = lse - __half2float(x[row * vocab + tgt]);
    const float smooth = lse - sx / (float)vocab;
    loss[row] = (1.0f - label_smoothing) * nll + label_smoothing * smooth;
}

template <int V>
static void ce_launch(const __half* x, const int32_t* target, float* loss, int64_t rows, int64_t vocab,
                      int64_t ignore_index, float label_smoothing, hipStream_t stream) {
    const int64_t nvec = vocab / V;
    const int64_t min_vecs = CE_MIN_VALUES_PER_BLOCK / V;
    int64_t splits = (CE_TARGET_BLOCKS + rows - 1) / rows;
    const int64_t by_size = (nvec + min_vecs - 1) / min_vecs;
    if (splits > by_size) splits = by_size;
    if (splits > CE_MAX_PARTIALS / rows) splits = CE_MAX_PARTIALS / rows;
    if (splits > 65535) splits = 65535;
    if (splits < 1) splits = 1;
    const int64_t chunk = (nvec + splits - 1) / splits;
    hipLaunchKernelGGL(ce_partial_kernel<V>, dim3((unsigned int)rows, (unsigned int)splits), dim3(CE_THREADS), 0,
                       stream, x, target, vocab, chunk, ignore_index);
    hipLaunchKernelGGL(ce_finalize_kernel, dim3((unsigned int)((rows + 255) / 256)), dim3(256), 0, stream, x, target,
                       loss, rows, vocab, splits, ignore_index, label_smoothing);
}

extern "C" int cross_entropy_label_smoothing(const __half* x, const int32_t* target, float* loss, int64_t rows,
                                             int64_t vocab, int64_t ignore_index, float label_smoothing,
                                             hipStream_t stream) {
    if (rows <= 0 || vocab <= 0) return (int)hipSuccess;
    if (rows > CE_MAX_PARTIALS) return (int)hipErrorInvalidValue;
    const uintptr_t a = reinterpret_cast<uintptr_t>(x);
    if (vocab % 8 == 0 && a % 16 == 0)
        ce_launch<8>(x, target, loss, rows, vocab, ignore_index, label_smoothing, stream);
    else if (vocab % 2 == 0 && a % 4 == 0)
        ce_launch<2>(x, target, loss, rows, vocab, ignore_index, label_smoothing, stream);
    else
        ce_launch<1>(x, target, loss, rows, vocab, ignore_index, label_smoothing, stream);
    return (int)hipGetLastError();
}

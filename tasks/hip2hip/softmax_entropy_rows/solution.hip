// Entropy of softmax(x / T) per row, fp16 logits, fp32 out: a general, portable solution.
//
// * One read of the logits: each thread keeps an online state (m, s, t) with
//   s = sum exp(z - m) and t = sum exp(z - m) * (z - m) over the values it has seen,
//   rescaled once per 8-value vector when the running max m grows
//   (t <- a * (t + d * s), s <- a * s with d = m_old - m_new, a = exp(d)); the states are
//   merged the same way across lanes (shuffles), warps and blocks. entropy = log s - t / s.
// * A grid of (rows, splits) blocks, splits chosen so that a few hundred blocks work even
//   for a handful of rows (each block a contiguous chunk of >= 4096 logits); the partial
//   states go to a fixed __device__ buffer and a small kernel (one thread per row) merges them.
// * 16-byte loads of 8 halves when vocab % 8 == 0 and x is 16-byte aligned; 4-byte loads
//   of 2 when vocab is even; scalar otherwise.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define ENT_THREADS 256
#define ENT_MAX_WARPS 32
#define ENT_MAX_PARTIALS (1 << 20)   // rows * splits
#define ENT_TARGET_BLOCKS 512
#define ENT_MIN_VALUES_PER_BLOCK 4096

__device__ float4 g_ent_partials[ENT_MAX_PARTIALS];   // (m, s, t, unused)

static __device__ __forceinline__ void ent_unpack2(unsigned int bits, float* f) {
    f[0] = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    f[1] = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}

template <int V>
static __device__ __forceinline__ void ent_load(const __half* __restrict__ p, int64_t i, float* f) {
    if constexpr (V == 8) {
        const uint4 u = reinterpret_cast<const uint4*>(p)[i];
        ent_unpack2(u.x, f);
        ent_unpack2(u.y, f + 2);
        ent_unpack2(u.z, f + 4);
        ent_unpack2(u.w, f + 6);
    } else if constexpr (V == 2) {
        ent_unpack2(reinterpret_cast<const unsigned int*>(p)[i], f);
    } else {
        f[0] = __half2float(p[i]);
    }
}

// Merges state (m2, s2, t2) into (m, s, t); an empty state is (-inf, 0, 0).
static __device__ __forceinline__ void ent_merge(float& m, float& s, float& t, float m2, float s2, float t2) {
    if (m2 == -INFINITY) return;
    if (m == -INFINITY) {
        m = m2;
        s = s2;
        t = t2;
        return;
    }
    const float mn = fmaxf(m, m2);
    const float d1 = m - mn, d2 = m2 - mn;
    const float a1 = __expf(d1), a2 = __expf(d2);
    t = a1 * (t + d1 * s) + a2 * (t2 + d2 * s2);
    s = a1 * s + a2 * s2;
    m = mn;
}

template <int V>
__global__ void __launch_bounds__(ENT_THREADS)
ent_partial_kernel(const __half* __restrict__ x, int64_t vocab, int64_t chunk, float inv_t) {
    __shared__ float pm[ENT_MAX_WARPS];
    __shared__ float ps[ENT_MAX_WARPS];
    __shared__ float pt[ENT_MAX_WARPS];
    const int64_t row = blockIdx.x;
    const int64_t k = blockIdx.y;
    const int64_t nvec = vocab / V;
    const int64_t start = k * chunk;
    const int64_t end = start + chunk < nvec ? start + chunk : nvec;
    const __half* xr = x + row * vocab;
    float m = -INFINITY, s = 0.0f, t = 0.0f;
    for (int64_t i = start + threadIdx.x; i < end; i += ENT_THREADS) {
        float z[V];
        ent_load<V>(xr, i, z);
        float vm = -INFINITY;
#pragma unroll
        for (int q = 0; q < V; ++q) {
            z[q] *= inv_t;
            vm = fmaxf(vm, z[q]);
        }
        if (vm > m) {  // rescale the state to the new max (nothing to rescale while empty)
            if (s > 0.0f) {
                const float d = m - vm;
                const float a = __expf(d);
                t = a * (t + d * s);
                s *= a;
            }
            m = vm;
        }
#pragma unroll
        for (int q = 0; q < V; ++q) {
            const float d = z[q] - m;
            const float e = __expf(d);
            s += e;
            t += e * d;
        }
    }
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        const float m2 = __shfl_xor(m, offset);
        const float s2 = __shfl_xor(s, offset);
        const float t2 = __shfl_xor(t, offset);
        ent_merge(m, s, t, m2, s2, t2);
    }
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    if (lane == 0) {
        pm[warp] = m;
        ps[warp] = s;
        pt[warp] = t;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / warpSize); ++w) ent_merge(m, s, t, pm[w], ps[w], pt[w]);
        g_ent_partials[row * gridDim.y + k] = make_float4(m, s, t, 0.0f);
    }
}

__global__ void ent_finalize_kernel(float* __restrict__ entropy, int64_t rows, int64_t splits) {
    const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float m = -INFINITY, s = 0.0f, t = 0.0f;
    for (int64_t j = 0; j < splits; ++j) {
        const float4 p = g_ent_partials[row * splits + j];
        ent_merge(m, s, t, p.x, p.y, p.z);
    }
    entropy[row] = logf(s) - t / s;
}

template <int V>
static void ent_launch(const __half* x, float* entropy, int64_t rows, int64_t vocab, float temperature,
                       hipStream_t stream) {
    const int64_t nvec = vocab / V;
    const int64_t min_vecs = ENT_MIN_VALUES_PER_BLOCK / V;
    int64_t splits = (ENT_TARGET_BLOCKS + rows - 1) / rows;
    const int64_t by_size = (nvec + min_vecs - 1) / min_vecs;
    if (splits > by_size) splits = by_size;
    if (splits > ENT_MAX_PARTIALS / rows) splits = ENT_MAX_PARTIALS / rows;
    if (splits > 65535) splits = 65535;
    if (splits < 1) splits = 1;
    const int64_t chunk = (nvec + splits - 1) / splits;
    hipLaunchKernelGGL(ent_partial_kernel<V>, dim3((unsigned int)rows, (unsigned int)splits), dim3(ENT_THREADS), 0,
                       stream, x, vocab, chunk, 1.0f / temperature);
    hipLaunchKernelGGL(ent_finalize_kernel, dim3((unsigned int)((rows + 255) / 256)), dim3(256), 0, stream, entropy,
                       rows, splits);
}

extern "C" int softmax_entropy_rows(const __half* x, float* entropy, int64_t rows, int64_t vocab, float temperature,
                                    hipStream_t stream) {
    if (rows <= 0 || vocab <= 0) return (int)hipSuccess;
    if (rows > ENT_MAX_PARTIALS) return (int)hipErrorInvalidValue;
    const uintptr_t a = reinterpret_cast<uintptr_t>(x);
    if (vocab % 8 == 0 && a % 16 == 0)
        ent_launch<8>(x, entropy, rows, vocab, temperature, stream);
    else if (vocab % 2 == 0 && a % 4 == 0)
        ent_launch<2>(x, entropy, rows, vocab, temperature, stream);
    else
        ent_launch<1>(x, entropy, rows, vocab, temperature, stream);
    return (int)hipGetLastError();
}

// Masked mean pooling over the sequence axis, fp16 in, fp32 out: a general, portable
// solution.
//
// * A block is a 2-D tile: 32 lanes along the features (each a vector of V halves: 16-byte
//   loads when hidden_size % 8 == 0 and hidden is 16-byte aligned, 4-byte when it is even,
//   else 2-byte) times 8 lanes along the sequence, each walking every 8th position with two
//   independent loads in flight. The 8 partial sums are combined in shared memory.
// * Padded positions are not read (the mask byte is tested first).
// * The grid is (feature tiles, batch, seq splits); splits is chosen so that about a
//   thousand blocks work even for a handful of sequences. With one split the block writes
//   out directly; with several, out is zeroed first and each split adds its share of the
//   mean with an fp32 atomicAdd.
// * Every block counts its sequence's mask (a few KB at most) itself: no extra pass.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define MMP_TX 32
#define MMP_TY 8
#define MMP_THREADS (MMP_TX * MMP_TY)
#define MMP_MAX_WARPS 32
#define MMP_TARGET_BLOCKS 1024
#define MMP_MIN_POSITIONS_PER_SPLIT 128

static __device__ __forceinline__ void mmp_unpack2(unsigned int bits, float* f) {
    f[0] = __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
    f[1] = __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}

template <int V>
static __device__ __forceinline__ void mmp_load(const __half* __restrict__ p, int64_t i, float* f) {
    if constexpr (V == 8) {
        const uint4 u = reinterpret_cast<const uint4*>(p)[i];
        mmp_unpack2(u.x, f);
        mmp_unpack2(u.y, f + 2);
        mmp_unpack2(u.z, f + 4);
        mmp_unpack2(u.w, f + 6);
    } else if constexpr (V == 2) {
        mmp_unpack2(reinterpret_cast<const unsigned int*>(p)[i], f);
    } else {
        f[0] = __half2float(p[i]);
    }
}

__global__ void mmp_zero_kernel(float* __restrict__ out, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = 0.0f;
}

template <int V>
__global__ void __launch_bounds__(MMP_THREADS)
mmp_kernel(const __half* __restrict__ hidden, const bool* __restrict__ mask, float* __restrict__ out, int64_t batch,
           int64_t seq, int64_t hs, int64_t chunk, int accumulate) {
    __shared__ float red[MMP_TY][MMP_TX * V];
    __shared__ float cpart[MMP_MAX_WARPS];
    const int tx = threadIdx.x % MMP_TX;
    const int ty = threadIdx.x / MMP_TX;
    const int64_t hv = hs / V;
    const int64_t vec = (int64_t)blockIdx.x * MMP_TX + tx;
    const int64_t s_begin = (int64_t)blockIdx.z * chunk;
    const int64_t s_end = s_begin + chunk < seq ? s_begin + chunk : seq;
    // The batch loop is uniform per block, so every thread reaches the barriers.
    for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
        const bool* m = mask + b * seq;
        // Number of real tokens of sequence b.
        float c = 0.0f;
        for (int64_t s = threadIdx.x; s < seq; s += MMP_THREADS) c += m[s] ? 1.0f : 0.0f;
        for (int offset = warpSize / 2; offset > 0; offset /= 2) c += __shfl_xor(c, offset);
        if (threadIdx.x % warpSize == 0) cpart[threadIdx.x / warpSize] = c;

        float acc[V];
#pragma unroll
        for (int q = 0; q < V; ++q) acc[q] = 0.0f;
        if (vec < hv) {
            const __half* x = hidden + b * seq * hs;
            int64_t s = s_begin + ty;
            for (; s + MMP_TY < s_end; s += 2 * MMP_TY) {
                const bool m0 = m[s], m1 = m[s + MMP_TY];
                float f0[V], f1[V];
#pragma unroll
                for (int q = 0; q < V; ++q) {
                    f0[q] = 0.0f;
                    f1[q] = 0.0f;
                }
                if (m0) mmp_load<V>(x + s * hs, vec, f0);
                if (m1) mmp_load<V>(x + (s + MMP_TY) * hs, vec, f1);
#pragma unroll
                for (int q = 0; q < V; ++q) acc[q] += f0[q] + f1[q];
            }
            if (s < s_end && m[s]) {
                float f0[V];
                mmp_load<V>(x + s * hs, vec, f0);
#pragma unroll
                for (int q = 0; q < V; ++q) acc[q] += f0[q];
            }
        }
#pragma unroll
        for (int q = 0; q < V; ++q) red[ty][tx * V + q] = acc[q];
        __syncthreads();
        if (ty == 0 && vec < hv) {
            float count = 0.0f;
            for (int w = 0; w < MMP_THREADS / warpSize; ++w) count += cpart[w];
            const float inv = 1.0f / fmaxf(count, 1e-9f);
            float* o = out + b * hs + vec * V;
#pragma unroll
            for (int q = 0; q < V; ++q) {
                float sum = 0.0f;
#pragma unroll
                for (int y = 0; y < MMP_TY; ++y) sum += red[y][tx * V + q];
                if (accumulate) atomicAdd(o + q, sum * inv);
                else o[q] = sum * inv;
            }
        }
        __syncthreads();  // red and cpart are reused for the next sequence
    }
}

template <int V>
static void mmp_launch(const __half* hidden, const bool* mask, float* out, int64_t batch, int64_t seq, int64_t hs,
                       hipStream_t stream) {
    const int64_t hv = hs / V;
    const int64_t tiles = (hv + MMP_TX - 1) / MMP_TX;
    const int64_t grid_y = batch < 65535 ? batch : 65535;
    int64_t splits = (MMP_TARGET_BLOCKS + tiles * grid_y - 1) / (tiles * grid_y);
    const int64_t by_len = (seq + MMP_MIN_POSITIONS_PER_SPLIT - 1) / MMP_MIN_POSITIONS_PER_SPLIT;
    if (splits > by_len) splits = by_len;
    if (splits > 65535) splits = 65535;
    if (splits < 1) splits = 1;
    const int64_t chunk = (seq + splits - 1) / splits;
    if (splits > 1) {
        const int64_t n = batch * hs;
        int64_t zb = (n + 255) / 256;
        if (zb > 4096) zb = 4096;
        hipLaunchKernelGGL(mmp_zero_kernel, dim3((unsigned int)zb), dim3(256), 0, stream, out, n);
    }
    hipLaunchKernelGGL(mmp_kernel<V>, dim3((unsigned int)tiles, (unsigned int)grid_y, (unsigned int)splits),
                       dim3(MMP_THREADS), 0, stream, hidden, mask, out, batch, seq, hs, chunk, splits > 1 ? 1 : 0);
}

extern "C" int masked_mean_pooling(const __half* hidden, const bool* attention_mask, float* out, int64_t batch,
                                   int64_t seq, int64_t hidden_size, hipStream_t stream) {
    if (batch <= 0 || hidden_size <= 0) return (int)hipSuccess;
    if (seq <= 0) {  // no tokens: every mean is 0 / 1e-9 = 0
        const int64_t n = batch * hidden_size;
        int64_t zb = (n + 255) / 256;
        if (zb > 4096) zb = 4096;
        hipLaunchKernelGGL(mmp_zero_kernel, dim3((unsigned int)zb), dim3(256), 0, stream, out, n);
        return (int)hipGetLastError();
    }
    const uintptr_t a = reinterpret_cast<uintptr_t>(hidden);
    if (hidden_size % 8 == 0 && a % 16 == 0)
        mmp_launch<8>(hidden, attention_mask, out, batch, seq, hidden_size, stream);
    else if (hidden_size % 2 == 0 && a % 4 == 0)
        mmp_launch<2>(hidden, attention_mask, out, batch, seq, hidden_size, stream);
    else
        mmp_launch<1>(hidden, attention_mask, out, batch, seq, hidden_size, stream);
    return (int)hipGetLastError();
}

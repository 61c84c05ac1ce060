// Reference solution: Gemma 2 soft-capped, causal sliding-window softmax in one kernel.
//
// - One block per row (batch * heads * q_len rows, grid x). Query i of the row sits at
//   p = k_len - q_len + i; only the visible band lo..p (lo = max(0, p - window + 1)) is read
//   from memory, the masked keys are written as 0 directly.
// - The capped logits c = tanh(s / softcap) * softcap of the band are kept in dynamic shared
//   memory (fp32, k_len floats: at most 8 KB in the task's shape space), so scores are read
//   once and each probability written once; exp is computed once per key. Rows longer than 8192
//   keys (outside the shape space) recompute c from global memory.
// - Each thread only ever touches the shared slots j = tid + k * blockDim.x that it wrote
//   itself, so the only barriers are those of the two block reductions (max, then sum).
// - Reductions: butterflies of __shfl_xor over warpSize lanes, then one value per warp in a
//   shared array sized for 1024 / 32 warps; nothing assumes a warp width.
// - fp32 throughout (IEEE division by softcap, tanhf, expf); the row maximum is subtracted
//   before exp; one reciprocal of the sum per row; each probability rounded to fp16 once.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kMaxWarps = 1024 / 32;
constexpr int64_t kMaxCachedKeys = 8192;  // 32 KB of fp32 (plus the static reduction array, under 48 KB)

__device__ __forceinline__ float block_max(float v, float* red) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int num_warps = (blockDim.x + warpSize - 1) / warpSize;
    for (int off = warpSize / 2; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor(v, off));
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < num_warps ? red[lane] : -INFINITY;
    for (int off = warpSize / 2; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor(v, off));
    __syncthreads();
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* red) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int num_warps = (blockDim.x + warpSize - 1) / warpSize;
    for (int off = warpSize / 2; off > 0; off >>= 1) v += __shfl_xor(v, off);
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = lane < num_warps ? red[lane] : 0.0f;
    for (int off = warpSize / 2; off > 0; off >>= 1) v += __shfl_xor(v, off);
    __syncthreads();
    return v;
}

__device__ __forceinline__ float cap(__half s, float softcap) {
    return tanhf(__half2float(s) / softcap) * softcap;
}

template <bool CACHE>
__global__ void __launch_bounds__(kBlock)
softcap_band_softmax(const __half* __restrict__ scores, __half* __restrict__ probs, int64_t q_len,
                     int64_t k_len, int64_t window, float softcap) {
    extern __shared__ float cache[];
    __shared__ float red[kMaxWarps];
    const int64_t row = blockIdx.x;
    const int64_t i = row % q_len;
    const int64_t p = k_len - q_len + i;                       // last visible key
    const int64_t lo = p - window + 1 > 0 ? p - window + 1 : 0;  // first visible key
    const __half* src = scores + row * k_len;
    __half* dst = probs + row * k_len;
    const int64_t n = p - lo + 1;                             // visible keys, >= 1

    // masked keys: exactly 0
    const __half zero = __float2half(0.0f);
    for (int64_t j = threadIdx.x; j < lo; j += blockDim.x) dst[j] = zero;
    for (int64_t j = p + 1 + threadIdx.x; j < k_len; j += blockDim.x) dst[j] = zero;

    float m = -INFINITY;
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
        const float c = cap(src[lo + t], softcap);
        if (CACHE) cache[t] = c;
        m = fmaxf(m, c);
    }
    m = block_max(m, red);

    float s = 0.0f;
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
        const float c = CACHE ? cache[t] : cap(src[lo + t], softcap);
        const float e = expf(c - m);
        if (CACHE) cache[t] = e;
        s += e;
    }
    s = block_sum(s, red);
    const float inv = 1.0f / s;

    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
        const float e = CACHE ? cache[t] : expf(cap(src[lo + t], softcap) - m);
        dst[lo + t] = __float2half(e * inv);
    }
}

}  // namespace

extern "C" int gemma2_softcap_sliding_causal_softmax(const __half* scores, __half* probs, int64_t batch,
                                                     int64_t heads, int64_t q_len, int64_t k_len,
                                                     int64_t window, float softcap, hipStream_t stream) {
    const int64_t rows = batch * heads * q_len;
    if (rows <= 0 || k_len <= 0) return static_cast<int>(hipSuccess);
    if (q_len > k_len || window < 1 || rows > 0x7fffffffLL) return static_cast<int>(hipErrorInvalidValue);
    const dim3 grid(static_cast<unsigned>(rows));
    if (k_len <= kMaxCachedKeys) {
        const size_t smem = static_cast<size_t>(k_len) * sizeof(float);
        hipLaunchKernelGGL(softcap_band_softmax<true>, grid, dim3(kBlock), smem, stream, scores, probs, q_len,
                           k_len, window, softcap);
    } else {
        hipLaunchKernelGGL(softcap_band_softmax<false>, grid, dim3(kBlock), 0, stream, scores, probs, q_len,
                           k_len, window, softcap);
    }
    return static_cast<int>(hipGetLastError());
}

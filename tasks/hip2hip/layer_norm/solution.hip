// LayerNorm forward, fp16 in/out with fp32 mean and rstd: a general, portable solution.
//
// * One block per row (grid-stride over rows on the x grid dimension), coalesced accesses,
//   __half2 loads and stores when cols is even (scalar path otherwise).
// * The row is read from global memory once: pass 1 sums it and copies it into dynamic
//   shared memory; pass 2 sums the squared deviations from that copy (two-pass variance,
//   as the reference: mean((x - mean)^2)); pass 3 writes y from it. Every thread reads
//   back only the elements it stored itself, so the copy needs no barrier. Rows too long
//   for the copy (cols > 24576) re-read x from global memory instead.
// * Reductions: warp shuffles (butterfly, warpSize-portable), then one shared partial per
//   warp that every thread adds up in the same order. fp32 throughout.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define LN_MAX_WARPS 32                // 1024 threads / 32 lanes (16 warps with 64 lanes)
#define LN_MAX_CACHE_BYTES (48 * 1024)  // dynamic shared memory without an opt-in
#define LN_MAX_GRID 2147483647LL

// Every lane ends with the warp's sum. All lanes of the warp must call it.
static __device__ __forceinline__ float warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// Every thread ends with the block's sum. blockDim.x must be a multiple of warpSize and
// at most 1024; all threads must call it.
static __device__ __forceinline__ float block_sum(float v, float* partials) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    v = warp_sum(v);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < nwarps; ++w) total += partials[w];
    __syncthreads();  // the partials are reused by the next call
    return total;
}

__global__ void layer_norm_block_per_row_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                                const __half* __restrict__ bias, __half* __restrict__ y,
                                                float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                                int64_t rows, int64_t cols, float eps, bool use_half2,
                                                bool cache_row) {
    extern __shared__ float4 ln_cache_storage[];  // float4: 16-byte aligned
    __shared__ float partials[LN_MAX_WARPS];
    __half* cache = reinterpret_cast<__half*>(ln_cache_storage);
    __half2* cache2 = reinterpret_cast<__half2*>(ln_cache_storage);
    const int t = threadIdx.x;
    const int nthreads = blockDim.x;
    const float inv_cols = 1.0f / (float)cols;

    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const __half* xr = x + row * cols;
        __half* yr = y + row * cols;

        // Pass 1: mean (and the copy of the row).
        float sum = 0.0f;
        if (use_half2) {
            const __half2* x2 = reinterpret_cast<const __half2*>(xr);
            for (int64_t i = t; i < cols / 2; i += nthreads) {
                const __half2 v = x2[i];
                if (cache_row) cache2[i] = v;
                const float2 f = __half22float2(v);
                sum += f.x + f.y;
            }
        } else {
            for (int64_t i = t; i < cols; i += nthreads) {
                const __half v = xr[i];
                if (cache_row) cache[i] = v;
                sum += __half2float(v);
            }
        }
        const float mean = block_sum(sum, partials) * inv_cols;

        // Pass 2: variance from the squared deviations.
        float sq = 0.0f;
        if (use_half2) {
            const __half2* src = cache_row ? cache2 : reinterpret_cast<const __half2*>(xr);
            for (int64_t i = t; i < cols / 2; i += nthreads) {
                const float2 f = __half22float2(src[i]);
                const float a = f.x - mean;
                const float b = f.y - mean;
                sq += a * a + b * b;
            }
        } else {
            const __half* src = cache_row ? cache : xr;
            for (int64_t i = t; i < cols; i += nthreads) {
                const float a = __half2float(src[i]) - mean;
                sq += a * a;
            }
        }
        const float rstd = 1.0f / sqrtf(block_sum(sq, partials) * inv_cols + eps);
        if (t == 0) {
            mean_out[row] = mean;
            rstd_out[row] = rstd;
        }

        // Pass 3: y = (x - mean) * rstd * weight + bias.
        if (use_half2) {
            const __half2* src = cache_row ? cache2 : reinterpret_cast<const __half2*>(xr);
            const __half2* w2 = reinterpret_cast<const __half2*>(weight);
            const __half2* b2 = reinterpret_cast<const __half2*>(bias);
            __half2* y2 = reinterpret_cast<__half2*>(yr);
            for (int64_t i = t; i < cols / 2; i += nthreads) {
                const float2 f = __half22float2(src[i]);
                const float2 w = __half22float2(w2[i]);
                const float2 b = __half22float2(b2[i]);
                y2[i] = __floats2half2_rn((f.x - mean) * rstd * w.x + b.x, (f.y - mean) * rstd * w.y + b.y);
            }
        } else {
            const __half* src = cache_row ? cache : xr;
            for (int64_t i = t; i < cols; i += nthreads) {
                const float v = (__half2float(src[i]) - mean) * rstd * __half2float(weight[i]) + __half2float(bias[i]);
                yr[i] = __float2half(v);
            }
        }
    }
}

extern "C" int layer_norm(const __half* x, const __half* weight, const __half* bias, __half* y, float* mean,
                          float* rstd, int64_t rows, int64_t cols, float eps, hipStream_t stream) {
    if (rows <= 0 || cols <= 0) return (int)hipSuccess;
    // __half2 accesses need an even row length and 4-byte aligned tensors.
    const bool aligned4 = reinterpret_cast<uintptr_t>(x) % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0 &&
                          reinterpret_cast<uintptr_t>(weight) % 4 == 0 &&
                          reinterpret_cast<uintptr_t>(bias) % 4 == 0;
    const bool use_half2 = cols % 2 == 0 && aligned4;
    // About 8 elements per thread, 64 to 1024 threads (multiples of 64, so whole warps
    // for 32 and 64 lanes).
    int threads = 64;
    while (threads < 1024 && (int64_t)threads * 8 < cols) threads *= 2;
    int64_t cache_bytes = ((cols * (int64_t)sizeof(__half) + 15) / 16) * 16;
    const bool cache_row = cache_bytes <= LN_MAX_CACHE_BYTES;
    if (!cache_row) cache_bytes = 0;
    const int64_t blocks = rows < LN_MAX_GRID ? rows : LN_MAX_GRID;
    hipLaunchKernelGGL(layer_norm_block_per_row_kernel, dim3((unsigned int)blocks), dim3(threads),
                       (unsigned int)cache_bytes, stream, x, weight, bias, y, mean, rstd, rows, cols, eps, use_half2,
                       cache_row);
    return (int)hipGetLastError();
}

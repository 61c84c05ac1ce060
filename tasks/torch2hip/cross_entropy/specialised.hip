// Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
// wrong on others.
//
// The solution's kernel with one assumption baked in: vocab is a multiple of 4 (true for
// every seen vocabulary, all multiples of 128), so every row would start on a 16-byte
// boundary. The scalar head and tail are gone and rows are addressed in float4s, row r
// starting at float4 r * (vocab / 4). When vocab % 4 != 0 that stride is short: row r scans
// a window that drifts back by r * (vocab % 4) logits into the previous row, so its
// logsumexp, and the loss, are wrong by an error growing with r (~1e-2 for the later rows of
// the odd-vocab held-out shapes; the fp32 normwise bound is 1e-5); the target logit is still
// read from the right place. Every access stays inside the buffer and on a 16-byte boundary
// (the host checks the base pointer): it never faults.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <float.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 512;
constexpr int kMinWarpSize = 32;                  // narrowest warp on any target
constexpr int kMaxWarps = kBlock / kMinWarpSize;  // per-warp scratch slots for any warp width
constexpr unsigned kMaxGrid = 1u << 20;           // blocks; more rows are walked grid-stride
constexpr float kLog2e = 1.4426950408889634f;
constexpr int64_t kIgnoreIndex = -100;
// A finite "minus infinity": merging two empty states gives (m - m) = 0, never inf - inf.
constexpr float kLowest = -FLT_MAX;

// Merge (m2, s2) into (m, s).
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    const float mn = fmaxf(m, m2);
    s = s * exp2f((m - mn) * kLog2e) + s2 * exp2f((m2 - mn) * kLog2e);
    m = mn;
}

__device__ __forceinline__ float max4(const float4& v) {
    return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
}

__device__ __forceinline__ float sum_exp4(const float4& v, float m) {
    return (exp2f((v.x - m) * kLog2e) + exp2f((v.y - m) * kLog2e)) +
           (exp2f((v.z - m) * kLog2e) + exp2f((v.w - m) * kLog2e));
}

// Butterfly over the warp: afterwards every lane holds the merged state of the whole warp.
__device__ __forceinline__ void warp_merge(float& m, float& s) {
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) {
        const float m2 = __shfl_xor(m, offset);
        const float s2 = __shfl_xor(s, offset);
        merge(m, s, m2, s2);
    }
}

__global__ void __launch_bounds__(kBlock)
cross_entropy_rows(const float* __restrict__ logits, const int64_t* __restrict__ targets,
                   float* __restrict__ loss, int64_t rows, int vocab) {
    __shared__ float warp_m[kMaxWarps];
    __shared__ float warp_s[kMaxWarps];

    const int tid = threadIdx.x;
    const int lane = tid % warpSize;
    const int warp = tid / warpSize;
    const int num_warps = kBlock / warpSize;

    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* p = logits + row * static_cast<int64_t>(vocab);

        int64_t target = 0;
        float target_logit = 0.0f;
        if (tid == 0) {
            target = targets[row];
            if (target >= 0 && target < vocab) target_logit = p[target];
        }

        // Assumes vocab % 4 == 0: the row is num_vec float4s, row r at float4 r * num_vec.
        const int num_vec = vocab >> 2;
        const float4* v = reinterpret_cast<const float4*>(logits) + row * num_vec;

        float m = kLowest;
        float s = 0.0f;
        int i = tid;
        for (; i + 3 * kBlock < num_vec; i += 4 * kBlock) {
            const float4 a = v[i];
            const float4 b = v[i + kBlock];
            const float4 c = v[i + 2 * kBlock];
            const float4 d = v[i + 3 * kBlock];
            const float mn = fmaxf(m, fmaxf(fmaxf(max4(a), max4(b)), fmaxf(max4(c), max4(d))));
            s = s * exp2f((m - mn) * kLog2e) +
                ((sum_exp4(a, mn) + sum_exp4(b, mn)) + (sum_exp4(c, mn) + sum_exp4(d, mn)));
            m = mn;
        }
        for (; i < num_vec; i += kBlock) {
            const float4 a = v[i];
            const float mn = fmaxf(m, max4(a));
            s = s * exp2f((m - mn) * kLog2e) + sum_exp4(a, mn);
            m = mn;
        }

        warp_merge(m, s);
        if (lane == 0) {
            warp_m[warp] = m;
            warp_s[warp] = s;
        }
        __syncthreads();
        if (warp == 0) {
            m = lane < num_warps ? warp_m[lane] : kLowest;
            s = lane < num_warps ? warp_s[lane] : 0.0f;
            warp_merge(m, s);
            if (lane == 0) {  // thread 0: it also holds the target
                float out;
                if (target == kIgnoreIndex) {
                    out = 0.0f;
                } else if (target < 0 || target >= vocab) {
                    out = __int_as_float(0x7fc00000);  // NaN
                } else {
                    out = (m - target_logit) + logf(s);  // cancel the large parts first
                }
                loss[row] = out;
            }
        }
        __syncthreads();  // warp_m / warp_s are rewritten for the next row
    }
}

}  // namespace

extern "C" int cross_entropy(const float* logits, const int64_t* targets, float* loss,
                             int64_t rows, int64_t vocab, hipStream_t stream) {
    if (rows <= 0) return static_cast<int>(hipSuccess);
    if (vocab <= 0 || vocab > INT32_MAX - 16) return static_cast<int>(hipErrorInvalidValue);
    if (reinterpret_cast<uintptr_t>(logits) % 16 != 0) return static_cast<int>(hipErrorInvalidValue);
    const unsigned grid = rows < static_cast<int64_t>(kMaxGrid) ? static_cast<unsigned>(rows) : kMaxGrid;
    hipLaunchKernelGGL(cross_entropy_rows, dim3(grid), dim3(kBlock), 0, stream,
                       logits, targets, loss, rows, static_cast<int>(vocab));
    return static_cast<int>(hipGetLastError());
}

// Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
// wrong on others.
//
// The solution's kernel with one assumption baked in: vocab is a multiple of 4 (true for every
// seen vocabulary), so every row would start on a 16-byte boundary. The scalar head and tail
// are gone and the logits are addressed as float4s, row r starting at float4 r * (vocab / 4).
// When vocab % 4 != 0 that stride is short: row r scans a window that drifts back by
// r * (vocab % 4) logits into the previous rows (with their own offsets and temperatures) and
// misses its last vocab % 4 logits, so lse, the smoothing mean and the loss go wrong by an
// error growing with r; the target logit is still read from the right place. Every access
// stays inside the buffer and on a 16-byte boundary (the host checks the base pointer): it
// never faults.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <float.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 512;
constexpr int kMaxWarps = kBlock / 32;  // enough slots for any warp width >= 32
constexpr unsigned kMaxGrid = 1u << 20;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kNegBig = -FLT_MAX;  // finite: merging two empty states never computes inf - inf

struct State {
    float m;    // running maximum
    float s;    // sum of exp(x - m)
    float sum;  // plain sum of x
};

__device__ __forceinline__ float ex(float v) { return exp2f(v * kLog2e); }

__device__ __forceinline__ void merge(State& a, const State& b) {
    const float mn = fmaxf(a.m, b.m);
    a.s = a.s * ex(a.m - mn) + b.s * ex(b.m - mn);
    a.m = mn;
    a.sum += b.sum;
}

__device__ __forceinline__ float vmax(const float4& v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }
__device__ __forceinline__ float vsum(const float4& v) { return (v.x + v.y) + (v.z + v.w); }
__device__ __forceinline__ float vexp(const float4& v, float m) {
    return (ex(v.x - m) + ex(v.y - m)) + (ex(v.z - m) + ex(v.w - m));
}

__device__ __forceinline__ void warp_merge(State& st) {
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) {
        State o;
        o.m = __shfl_xor(st.m, offset);
        o.s = __shfl_xor(st.s, offset);
        o.sum = __shfl_xor(st.sum, offset);
        merge(st, o);
    }
}

__global__ void __launch_bounds__(kBlock)
ce_smoothing_zloss_rows(const float* __restrict__ logits, const int64_t* __restrict__ targets,
                        float* __restrict__ loss, float* __restrict__ lse_out, int64_t rows, int vocab,
                        float label_smoothing, float z_loss) {
    __shared__ float sh_m[kMaxWarps];
    __shared__ float sh_s[kMaxWarps];
    __shared__ float sh_sum[kMaxWarps];

    const int tid = threadIdx.x;
    const int lane = tid % warpSize;
    const int warp = tid / warpSize;
    const int num_warps = (kBlock + warpSize - 1) / warpSize;

    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* p = logits + row * static_cast<int64_t>(vocab);

        int64_t target = 0;
        float target_logit = 0.0f;
        if (tid == 0) {
            target = targets[row];
            if (target >= 0 && target < vocab) target_logit = p[target];
        }

        const int num_vec = vocab >> 2;  // assumes vocab % 4 == 0
        const float4* v = reinterpret_cast<const float4*>(logits) + row * static_cast<int64_t>(num_vec);

        State st = {kNegBig, 0.0f, 0.0f};
        int i = tid;
        for (; i + 3 * kBlock < num_vec; i += 4 * kBlock) {
            const float4 a = v[i];
            const float4 b = v[i + kBlock];
            const float4 c = v[i + 2 * kBlock];
            const float4 d = v[i + 3 * kBlock];
            const float mn = fmaxf(st.m, fmaxf(fmaxf(vmax(a), vmax(b)), fmaxf(vmax(c), vmax(d))));
            st.s = st.s * ex(st.m - mn) + ((vexp(a, mn) + vexp(b, mn)) + (vexp(c, mn) + vexp(d, mn)));
            st.m = mn;
            st.sum += (vsum(a) + vsum(b)) + (vsum(c) + vsum(d));
        }
        for (; i < num_vec; i += kBlock) {
            const float4 a = v[i];
            const float mn = fmaxf(st.m, vmax(a));
            st.s = st.s * ex(st.m - mn) + vexp(a, mn);
            st.m = mn;
            st.sum += vsum(a);
        }

        warp_merge(st);
        if (lane == 0) {
            sh_m[warp] = st.m;
            sh_s[warp] = st.s;
            sh_sum[warp] = st.sum;
        }
        __syncthreads();
        if (warp == 0) {
            if (lane < num_warps) {
                st.m = sh_m[lane];
                st.s = sh_s[lane];
                st.sum = sh_sum[lane];
            } else {
                st.m = kNegBig;
                st.s = 0.0f;
                st.sum = 0.0f;
            }
            warp_merge(st);
            if (lane == 0) {  // thread 0 also holds the target logit
                const float lse = st.m + logf(st.s);
                float out;
                if (target < 0 || target >= vocab) {
                    out = __int_as_float(0x7fc00000);  // NaN
                } else {
                    const float mean = st.sum / static_cast<float>(vocab);
                    out = (1.0f - label_smoothing) * (lse - target_logit) + label_smoothing * (lse - mean) +
                          z_loss * lse * lse;
                }
                loss[row] = out;
                lse_out[row] = lse;
            }
        }
        __syncthreads();  // the shared slots are rewritten for the next row
    }
}

}  // namespace

extern "C" int cross_entropy_smoothing_zloss(const float* logits, const int64_t* targets, float* loss, float* lse,
                                             int64_t rows, int64_t vocab, float label_smoothing, float z_loss,
                                             hipStream_t stream) {
    if (rows <= 0) return static_cast<int>(hipSuccess);
    if (vocab <= 0 || vocab > INT32_MAX - 16) return static_cast<int>(hipErrorInvalidValue);
    if (reinterpret_cast<uintptr_t>(logits) % 16 != 0) return static_cast<int>(hipErrorInvalidValue);
    const unsigned grid = rows < static_cast<int64_t>(kMaxGrid) ? static_cast<unsigned>(rows) : kMaxGrid;
    hipLaunchKernelGGL(ce_smoothing_zloss_rows, dim3(grid), dim3(kBlock), 0, stream, logits, targets, loss, lse,
                       rows, static_cast<int>(vocab), label_smoothing, z_loss);
    return static_cast<int>(hipGetLastError());
}

// Reference solution for torch.logsumexp(x, dim=1) on a [batch, length, channels] fp32 tensor.
//
// - One pass over x (4 bytes per element, against ~6 passes for eager PyTorch's amax,
//   subtract, exp, sum, log, add): each thread keeps an online pair (running max m, sum s of
//   exp(v - m)) for one output column, updated with a single exp per element (the sum is
//   rescaled only when a new maximum arrives).
// - Output columns (b, c) are flattened; a block covers 32 consecutive columns (threadIdx.x,
//   contiguous in memory for channels >= 32, so each row segment is one coalesced access) and
//   TY slices of the reduced axis (threadIdx.y takes n = ty, ty + TY, ...). The TY partial
//   pairs of a column are merged through shared memory. TY grows (8, 16, 32) when there are
//   few columns, so long reductions over few columns still fill the GPU.
// - The loop over n is unrolled by kUnroll with all loads issued before the updates.
// - No warp-level intrinsics: the 32 is a tile width, not a lane count (correct for 32- and
//   64-wide warps).

#include <hip/hip_runtime.h>
#include <stdint.h>
#include <math.h>

namespace {

constexpr int kTileX = 32;
constexpr int kUnroll = 4;

__device__ __forceinline__ void lse_update(float v, float& m, float& s) {
    const float d = v - m;
    if (d > 0.0f) {          // new maximum (always taken for the first value: m = -inf)
        s = s * __expf(-d) + 1.0f;
        m = v;
    } else {
        s += __expf(d);
    }
}

template <int TY>
__global__ void __launch_bounds__(kTileX * TY)
lse_middle(const float* __restrict__ x, float* __restrict__ out, int64_t batch, int64_t length, int64_t channels) {
    __shared__ float sm[TY][kTileX];
    __shared__ float ss[TY][kTileX];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int64_t cols = batch * channels;
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kTileX + tx;
    float m = -INFINITY;
    float s = 0.0f;
    if (col < cols) {
        const int64_t b = col / channels;
        const int64_t c = col - b * channels;
        const float* p = x + b * length * channels + c;
        int64_t n = ty;
        for (; n + (kUnroll - 1) * TY < length; n += kUnroll * TY) {
            float v[kUnroll];
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) v[k] = p[(n + k * TY) * channels];
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) lse_update(v[k], m, s);
        }
        for (; n < length; n += TY) lse_update(p[n * channels], m, s);
    }
    sm[ty][tx] = m;
    ss[ty][tx] = s;
    __syncthreads();
    if (ty == 0 && col < cols) {
        float mx = sm[0][tx];
#pragma unroll
        for (int i = 1; i < TY; ++i) mx = fmaxf(mx, sm[i][tx]);
        float total = 0.0f;
#pragma unroll
        for (int i = 0; i < TY; ++i) {
            // a slice with no elements (length < TY) has m = -inf, s = 0: contributes 0
            total += ss[i][tx] * __expf(sm[i][tx] - mx);
        }
        out[col] = mx + logf(total);
    }
}

}  // namespace

extern "C" int logsumexp_middle_dim(const float* x, float* out, int64_t batch, int64_t length, int64_t channels,
                                    hipStream_t stream) {
    if (batch <= 0 || channels <= 0) return static_cast<int>(hipSuccess);
    const int64_t cols = batch * channels;
    const int64_t blocks = (cols + kTileX - 1) / kTileX;
    const dim3 grid(static_cast<unsigned>(blocks));
    if (blocks >= 1024) {
        hipLaunchKernelGGL(lse_middle<8>, grid, dim3(kTileX, 8), 0, stream, x, out, batch, length, channels);
    } else if (blocks >= 256) {
        hipLaunchKernelGGL(lse_middle<16>, grid, dim3(kTileX, 16), 0, stream, x, out, batch, length, channels);
    } else {
        hipLaunchKernelGGL(lse_middle<32>, grid, dim3(kTileX, 32), 0, stream, x, out, batch, length, channels);
    }
    return static_cast<int>(hipGetLastError());
}

// Reference solution for the bicubic resize (A = -0.75, align_corners=False, clamped
// borders), fp16 in and out, fp32 arithmetic.
//
// - One thread per output element: grid x/y tile the output image (a block of bx * by =
//   256 threads, bx = the smallest of 32/64/128/256 covering out_w, so small images do not
//   leave most of a block idle), grid z walks the batch * channels planes (grid-stride past
//   65535). Eager PyTorch instead runs only out_h * out_w threads, each looping over every
//   plane: with small images and many planes a handful of blocks do all the work serially.
// - Each thread computes its source position, the four clamped column / row indices and
//   the Keys weights once, with the same fp32 formulas as PyTorch (scale = in / out,
//   u = scale * (j + 0.5) - 0.5, floor, t = u - floor), then per plane loads its 4 x 4
//   neighbours (shared with its neighbours through the cache), interpolates the four rows
//   and then the column, and stores one fp16 value. Loads and stores of a warp are to
//   consecutive columns.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxGridZ = 65535;
constexpr float kA = -0.75f;

__device__ __forceinline__ float cubic_near(float d) {  // |d| <= 1
    return ((kA + 2.0f) * d - (kA + 3.0f)) * d * d + 1.0f;
}

__device__ __forceinline__ float cubic_far(float d) {  // 1 < |d| < 2
    return ((kA * d - 5.0f * kA) * d + 8.0f * kA) * d - 4.0f * kA;
}

// Source taps and weights along one axis for output index o.
__device__ __forceinline__ void taps(int64_t o, float scale, int64_t size, int64_t (&idx)[4], float (&w)[4]) {
    const float u = scale * (static_cast<float>(o) + 0.5f) - 0.5f;
    const float f = floorf(u);
    const float t = u - f;
    const int64_t i0 = static_cast<int64_t>(f);
    w[0] = cubic_far(t + 1.0f);
    w[1] = cubic_near(t);
    const float s = 1.0f - t;
    w[2] = cubic_near(s);
    w[3] = cubic_far(s + 1.0f);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        int64_t i = i0 - 1 + k;
        i = i < 0 ? 0 : (i > size - 1 ? size - 1 : i);
        idx[k] = i;
    }
}

__global__ void __launch_bounds__(kThreads)
bicubic_resize(const __half* __restrict__ x, __half* __restrict__ out, int64_t planes, int64_t in_h, int64_t in_w,
               int64_t out_h, int64_t out_w, float scale_h, float scale_w) {
    const int64_t ox = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t oy = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
    if (ox >= out_w || oy >= out_h) return;  // no barriers or shuffles below
    int64_t xs[4], ys[4];
    float wx[4], wy[4];
    taps(ox, scale_w, in_w, xs, wx);
    taps(oy, scale_h, in_h, ys, wy);
    const int64_t in_plane = in_h * in_w;
    const int64_t out_plane = out_h * out_w;
    for (int64_t p = blockIdx.z; p < planes; p += gridDim.z) {
        const __half* src = x + p * in_plane;
        float v[4][4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const __half* row = src + ys[r] * in_w;
#pragma unroll
            for (int c = 0; c < 4; ++c) v[r][c] = __half2float(row[xs[c]]);
        }
        float rows[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            rows[r] = v[r][0] * wx[0] + v[r][1] * wx[1] + v[r][2] * wx[2] + v[r][3] * wx[3];
        }
        const float acc = rows[0] * wy[0] + rows[1] * wy[1] + rows[2] * wy[2] + rows[3] * wy[3];
        out[p * out_plane + oy * out_w + ox] = __float2half_rn(acc);
    }
}

}  // namespace

extern "C" int interpolate_bicubic(const __half* x, __half* out, int64_t batch, int64_t channels, int64_t in_h,
                                   int64_t in_w, int64_t out_h, int64_t out_w, hipStream_t stream) {
    const int64_t planes = batch * channels;
    if (planes <= 0 || out_h <= 0 || out_w <= 0) return static_cast<int>(hipSuccess);
    int bx = 32;
    while (bx < kThreads && bx < out_w) bx *= 2;
    const int by = kThreads / bx;
    const float scale_h = static_cast<float>(in_h) / static_cast<float>(out_h);
    const float scale_w = static_cast<float>(in_w) / static_cast<float>(out_w);
    const int64_t gx = (out_w + bx - 1) / bx;
    const int64_t gy = (out_h + by - 1) / by;
    const int64_t gz = planes < kMaxGridZ ? planes : kMaxGridZ;
    hipLaunchKernelGGL(bicubic_resize, dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                                            static_cast<unsigned>(gz)),
                       dim3(bx, by), 0, stream, x, out, planes, in_h, in_w, out_h, out_w, scale_h, scale_w);
    return static_cast<int>(hipGetLastError());
}

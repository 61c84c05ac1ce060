// Reference solution for the per-anchor sigmoid focal loss:
//   loss[a] = sum_c alpha_t * ce(x, t) * (1 - p_t)^gamma,  t = (c == labels[a])
//
// - One pass: every logit is read once, the label once per row, one fp32 written per anchor;
//   the one-hot targets are never materialised (eager PyTorch builds them in int64 and then
//   runs ~15 kernels over full-size fp32 intermediates).
// - A group of G lanes per anchor row (G a power of two in 4..32 chosen from the class
//   count, so 20-class rows do not leave most of a warp idle and 1203-class rows still use
//   32 lanes); the groups of a warp take consecutive rows, so a warp reads a contiguous
//   stretch of logits. Each lane keeps 4 loads in flight. The row sum is a __shfl_xor
//   butterfly inside the group (offsets < G <= 32 never leave it, whatever the warp width).
// - Loops are uniform per warp (a row past the end contributes nothing but still takes part
//   in the shuffles), so every lane of a warp reaches every shuffle.
// - Math in fp32 with accurate expf / log1pf: e = exp(-|x|) gives the sigmoid, 1 - sigmoid
//   (without cancellation) and the BCE term log(1 + e); gamma == 2 is a square, any other
//   gamma goes through powf. A label outside [0, classes] gives NaN.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kUnroll = 4;
constexpr int64_t kMaxBlocks = 1 << 20;

__device__ __forceinline__ float focal_term(float x, bool pos, float alpha, float gamma, bool gamma_is_two) {
    const float e = expf(-fabsf(x));
    const float inv = 1.0f / (1.0f + e);
    const float sig = x >= 0.0f ? inv : e * inv;          // sigmoid(x)
    const float one_minus_sig = x >= 0.0f ? e * inv : inv;  // 1 - sigmoid(x), no cancellation
    const float ce = fmaxf(x, 0.0f) - (pos ? x : 0.0f) + log1pf(e);
    const float q = pos ? one_minus_sig : sig;             // 1 - p_t
    const float mod = gamma_is_two ? q * q : powf(q, gamma);
    const float w = pos ? alpha : 1.0f - alpha;
    return w * ce * mod;
}

template <int G>
__global__ void __launch_bounds__(kBlock)
focal_rows(const float* __restrict__ logits, const int64_t* __restrict__ labels, float* __restrict__ loss,
           int64_t anchors, int64_t classes, float alpha, float gamma) {
    const bool gamma_is_two = gamma == 2.0f;
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int warps_per_block = kBlock / warpSize;
    const int rows_per_warp = warpSize / G;
    const int group = lane / G;
    const int g_lane = lane % G;

    const int64_t step = static_cast<int64_t>(gridDim.x) * warps_per_block * rows_per_warp;
    for (int64_t row0 = (static_cast<int64_t>(blockIdx.x) * warps_per_block + warp) * rows_per_warp;
         row0 < anchors; row0 += step) {
        const int64_t row = row0 + group;
        const bool valid = row < anchors;
        const float* x = logits + (valid ? row : 0) * classes;
        const int64_t label = valid ? labels[row] : classes;
        float acc = 0.0f;
        for (int64_t base = 0; base < classes; base += kUnroll * G) {
            float v[kUnroll];
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) {
                const int64_t c = base + k * G + g_lane;
                v[k] = (valid && c < classes) ? x[c] : 0.0f;
            }
#pragma unroll
            for (int k = 0; k < kUnroll; ++k) {
                const int64_t c = base + k * G + g_lane;
                if (valid && c < classes) acc += focal_term(v[k], c == label, alpha, gamma, gamma_is_two);
            }
        }
#pragma unroll
        for (int offset = G / 2; offset > 0; offset >>= 1) acc += __shfl_xor(acc, offset);
        if (valid && g_lane == 0) {
            loss[row] = (label < 0 || label > classes) ? __int_as_float(0x7fc00000) : acc;
        }
    }
}

template <int G>
void launch(const float* logits, const int64_t* labels, float* loss, int64_t anchors, int64_t classes, float alpha,
            float gamma, hipStream_t stream) {
    // kBlock / G rows per block and pass, whatever the warp width
    const int64_t rows_per_block = static_cast<int64_t>(kBlock) / G;
    int64_t blocks = (anchors + rows_per_block - 1) / rows_per_block;
    if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    hipLaunchKernelGGL(focal_rows<G>, dim3(static_cast<unsigned>(blocks)), dim3(kBlock), 0, stream, logits, labels,
                       loss, anchors, classes, alpha, gamma);
}

}  // namespace

extern "C" int sigmoid_focal_loss(const float* logits, const int64_t* labels, float* loss, int64_t anchors,
                                  int64_t classes, float alpha, float gamma, hipStream_t stream) {
    if (anchors <= 0) return static_cast<int>(hipSuccess);
    if (classes <= 0) return static_cast<int>(hipErrorInvalidValue);
    // about two classes per lane before growing the group; 32 lanes for wide rows
    const int64_t want = (classes + 1) / 2;
    if (want <= 4) {
        launch<4>(logits, labels, loss, anchors, classes, alpha, gamma, stream);
    } else if (want <= 8) {
        launch<8>(logits, labels, loss, anchors, classes, alpha, gamma, stream);
    } else if (want <= 16) {
        launch<16>(logits, labels, loss, anchors, classes, alpha, gamma, stream);
    } else {
        launch<32>(logits, labels, loss, anchors, classes, alpha, gamma, stream);
    }
    return static_cast<int>(hipGetLastError());
}

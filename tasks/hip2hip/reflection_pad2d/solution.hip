// 2-D reflection padding, fp16: a general, portable solution.
//
// The output is taken as a flat stream of 16-byte vectors of 8 halves. Each thread fills
// one vector: two 32-bit divisions give the (plane, row, column) of its first element,
// then it walks the 8 elements, wrapping to the next row (and plane) as it goes, issues 8
// independent 2-byte loads of the reflected sources (neighbouring threads read
// neighbouring sources, so the loads of a warp hit the same cache lines) and writes one
// coalesced 16-byte store. The total % 8 trailing outputs are done by the first threads
// of block 0; an output pointer that is not 16-byte aligned goes to a scalar kernel.
// Signed 32-bit indices when the tensors have < 2**31 elements (64-bit otherwise).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define RP_THREADS 256

template <typename Index>
static __device__ __forceinline__ Index reflect_index(Index k, Index len) {
    if (k < 0) return -k;
    if (k >= len) return 2 * (len - 1) - k;
    return k;
}

// One output element by its flat index (tail and unaligned path).
template <typename Index>
static __device__ __forceinline__ __half padded_value(const __half* __restrict__ x, Index o, Index H, Index W,
                                                      Index pad, Index Ho, Index Wo) {
    const Index row = o / Wo;
    const Index j = o - row * Wo;
    const Index nc = row / Ho;
    const Index i = row - nc * Ho;
    return x[(nc * H + reflect_index<Index>(i - pad, H)) * W + reflect_index<Index>(j - pad, W)];
}

template <typename Index>
__global__ void reflection_pad2d_vec8_kernel(const __half* __restrict__ x, __half* __restrict__ y, Index nvec,
                                             Index total, Index H, Index W, Index pad, Index Ho, Index Wo) {
    const Index v = (Index)blockIdx.x * RP_THREADS + threadIdx.x;
    if (v < nvec) {
        const Index o = v * 8;
        Index row = o / Wo;
        Index j = o - row * Wo;
        Index nc = row / Ho;
        Index i = row - nc * Ho;
        const __half* src = x + (nc * H + reflect_index<Index>(i - pad, H)) * W;
        unsigned short h[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            h[k] = __half_as_ushort(src[reflect_index<Index>(j - pad, W)]);
            if (++j == Wo) {  // next output row (Wo >= 4, so at most one wrap per step)
                j = 0;
                if (++i == Ho) {
                    i = 0;
                    ++nc;
                }
                src = x + (nc * H + reflect_index<Index>(i - pad, H)) * W;  // not read past the last row
            }
        }
        uint4 out;
        out.x = (unsigned int)h[0] | ((unsigned int)h[1] << 16);
        out.y = (unsigned int)h[2] | ((unsigned int)h[3] << 16);
        out.z = (unsigned int)h[4] | ((unsigned int)h[5] << 16);
        out.w = (unsigned int)h[6] | ((unsigned int)h[7] << 16);
        reinterpret_cast<uint4*>(y)[v] = out;
    }
    if (blockIdx.x == 0) {
        const Index o = nvec * 8 + (Index)threadIdx.x;  // at most 7 tail outputs
        if (o < total) y[o] = padded_value<Index>(x, o, H, W, pad, Ho, Wo);
    }
}

template <typename Index>
__global__ void reflection_pad2d_scalar_kernel(const __half* __restrict__ x, __half* __restrict__ y, Index total,
                                               Index H, Index W, Index pad, Index Ho, Index Wo) {
    const Index stride = (Index)gridDim.x * RP_THREADS;
    for (Index o = (Index)blockIdx.x * RP_THREADS + threadIdx.x; o < total; o += stride)
        y[o] = padded_value<Index>(x, o, H, W, pad, Ho, Wo);
}

template <typename Index>
static void launch(const __half* x, __half* y, int64_t total, int64_t H, int64_t W, int64_t pad, bool aligned16,
                   hipStream_t stream) {
    const Index Ho = (Index)(H + 2 * pad), Wo = (Index)(W + 2 * pad);
    if (aligned16) {
        const int64_t nvec = total / 8;
        int64_t blocks = (nvec + RP_THREADS - 1) / RP_THREADS;
        if (blocks < 1) blocks = 1;  // total < 8: block 0 does the tail alone
        hipLaunchKernelGGL(reflection_pad2d_vec8_kernel<Index>, dim3((unsigned int)blocks), dim3(RP_THREADS), 0, stream,
                           x, y, (Index)nvec, (Index)total, (Index)H, (Index)W, (Index)pad, Ho, Wo);
    } else {
        int64_t blocks = (total + RP_THREADS * 4 - 1) / (RP_THREADS * 4);
        if (blocks > 65536) blocks = 65536;
        hipLaunchKernelGGL(reflection_pad2d_scalar_kernel<Index>, dim3((unsigned int)blocks), dim3(RP_THREADS), 0,
                           stream, x, y, (Index)total, (Index)H, (Index)W, (Index)pad, Ho, Wo);
    }
}

extern "C" int reflection_pad2d(const __half* x, __half* y, int64_t batch, int64_t channels, int64_t height,
                                int64_t width, int64_t pad, hipStream_t stream) {
    const int64_t total = batch * channels * (height + 2 * pad) * (width + 2 * pad);
    if (total <= 0) return (int)hipSuccess;
    const bool aligned16 = reinterpret_cast<uintptr_t>(y) % 16 == 0;
    const int64_t in_total = batch * channels * height * width;
    if (total + RP_THREADS * 8 < (int64_t)INT32_MAX && in_total < (int64_t)INT32_MAX)
        launch<int32_t>(x, y, total, height, width, pad, aligned16, stream);
    else
        launch<int64_t>(x, y, total, height, width, pad, aligned16, stream);
    return (int)hipGetLastError();
}

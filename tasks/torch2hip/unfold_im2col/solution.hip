// Reference solution for F.unfold (im2col, dilation 1) of an NCHW fp16 batch.
//
// - One launch for the whole batch (eager PyTorch launches one im2col kernel per image from
//   a host loop: small kernels with launch gaps between them).
// - Output-major: grid x walks the batch * channels * kernel^2 output rows (b, c, i, j), whose
//   decomposition is computed once per thread; grid y and the threads walk the row's
//   out_h * out_w window positions, so the stores (the bulk of the traffic) are contiguous
//   and coalesced: V consecutive positions per thread, stored as one 8-byte (V = 4) or 4-byte
//   (V = 2) access when out_h * out_w is a multiple of V, one fp16 otherwise.
// - Reads of x are gathers from one input plane (row of windows ow * stride + j), reused
//   across neighbouring output rows through the caches; zero for positions in the padding.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int64_t kMaxGridY = 65535;

template <int V> struct Store;
template <> struct Store<4> {
    static __device__ __forceinline__ void run(__half* p, const unsigned short (&h)[4]) {
        *reinterpret_cast<uint2*>(p) = make_uint2(static_cast<unsigned>(h[0]) | (static_cast<unsigned>(h[1]) << 16),
                                                  static_cast<unsigned>(h[2]) | (static_cast<unsigned>(h[3]) << 16));
    }
};
template <> struct Store<2> {
    static __device__ __forceinline__ void run(__half* p, const unsigned short (&h)[2]) {
        *reinterpret_cast<unsigned*>(p) = static_cast<unsigned>(h[0]) | (static_cast<unsigned>(h[1]) << 16);
    }
};
template <> struct Store<1> {
    static __device__ __forceinline__ void run(__half* p, const unsigned short (&h)[1]) { *p = __ushort_as_half(h[0]); }
};

// V divides L (checked on the host), so a vector never straddles the end of a row.
template <int V>
__global__ void __launch_bounds__(256)
im2col_batch(const __half* __restrict__ x, __half* __restrict__ out, int64_t channels, int height, int width,
             int kernel, int stride, int padding, int out_w, int64_t L, int64_t ckk) {
    const int64_t row = blockIdx.x;            // b * ckk + r
    const int64_t b = row / ckk;
    const int r = static_cast<int>(row - b * ckk);
    const int kk = kernel * kernel;
    const int c = r / kk;
    const int rem = r - c * kk;
    const int ki = rem / kernel;
    const int kj = rem - ki * kernel;
    const unsigned short* plane =
        reinterpret_cast<const unsigned short*>(x) + (b * channels + c) * static_cast<int64_t>(height) * width;
    __half* orow = out + row * L;
    const int64_t step = static_cast<int64_t>(gridDim.y) * blockDim.x * V;
    for (int64_t l0 = (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x) * V; l0 < L; l0 += step) {
        unsigned short h[V];
#pragma unroll
        for (int j = 0; j < V; ++j) {
            const int l = static_cast<int>(l0) + j;
            const int oh = l / out_w;
            const int ow = l - oh * out_w;
            const int ih = oh * stride - padding + ki;
            const int iw = ow * stride - padding + kj;
            const bool inside = ih >= 0 && ih < height && iw >= 0 && iw < width;
            h[j] = inside ? plane[static_cast<int64_t>(ih) * width + iw] : static_cast<unsigned short>(0);
        }
        Store<V>::run(orow + l0, h);
    }
}

template <int V>
void launch(const __half* x, __half* out, int64_t batch, int64_t channels, int64_t height, int64_t width,
            int64_t kernel, int64_t stride, int64_t padding, int64_t out_w, int64_t L, hipStream_t stream) {
    const int64_t ckk = channels * kernel * kernel;
    const int64_t vecs = L / V;
    int64_t threads = (vecs + 63) / 64 * 64;
    if (threads > 256) threads = 256;
    int64_t chunks = (vecs + threads - 1) / threads;
    if (chunks > kMaxGridY) chunks = kMaxGridY;
    hipLaunchKernelGGL(im2col_batch<V>, dim3(static_cast<unsigned>(batch * ckk), static_cast<unsigned>(chunks)),
                       dim3(static_cast<unsigned>(threads)), 0, stream, x, out, channels, static_cast<int>(height),
                       static_cast<int>(width), static_cast<int>(kernel), static_cast<int>(stride),
                       static_cast<int>(padding), static_cast<int>(out_w), L, ckk);
}

}  // namespace

extern "C" int unfold_im2col(const __half* x, __half* out, int64_t batch, int64_t channels, int64_t height,
                             int64_t width, int64_t kernel, int64_t stride, int64_t padding, hipStream_t stream) {
    const int64_t out_h = (height + 2 * padding - kernel) / stride + 1;
    const int64_t out_w = (width + 2 * padding - kernel) / stride + 1;
    const int64_t L = out_h * out_w;
    if (batch <= 0 || channels <= 0 || out_h <= 0 || out_w <= 0) return static_cast<int>(hipSuccess);
    const uintptr_t o = reinterpret_cast<uintptr_t>(out);
    if (L % 4 == 0 && o % 8 == 0) {
        launch<4>(x, out, batch, channels, height, width, kernel, stride, padding, out_w, L, stream);
    } else if (L % 2 == 0 && o % 4 == 0) {
        launch<2>(x, out, batch, channels, height, width, kernel, stride, padding, out_w, L, stream);
    } else {
        launch<1>(x, out, batch, channels, height, width, kernel, stride, padding, out_w, L, stream);
    }
    return static_cast<int>(hipGetLastError());
}

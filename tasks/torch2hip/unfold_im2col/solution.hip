// Reference solution for F.unfold (im2col, dilation 1) of an NCHW fp16 batch.
//
// - One launch for the whole batch (eager PyTorch launches one im2col kernel per image from
//   a host loop: small kernels with launch gaps between them).
// - Position-major threads: a thread owns one window position l = oh * out_w + ow of one
//   image b and a run of R consecutive output rows r = (c * kernel + i) * kernel + j of that
//   image (R chosen on the host so that ~2^20 threads run). It splits l into (oh, ow) and
//   its first row into (c, i, j) once, then walks its rows with counters: per element one
//   (predicated) 2-byte load and one 2-byte store, no division. Threads are numbered
//   (b, row group, l) with l fastest, so a warp stores 32 consecutive positions of one row
//   (64 contiguous bytes, coalesced whatever out_h * out_w is, odd included) and
//   neighbouring warps and blocks fill the rest of the row at the same time.
// - Why: the previous design (a block per output row, every element of it decomposed with
//   an integer division by out_w, vector stores only when out_h * out_w is even) was
//   instruction-bound and fell to scalar stores plus two divisions per element on odd
//   window counts, slower than eager there.
// - Reads of x: for a fixed (c, i) the kernel taps j are consecutive columns of one input
//   row, and the thread revisits the same rows for the next i and c, so they come from L1;
//   zero for positions in the padding. The taps of one (c, i) are loaded 4 at a time before
//   their stores (independent loads in flight).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kThreads = 256;
constexpr int64_t kTargetThreads = int64_t(1) << 20;

__global__ void __launch_bounds__(kThreads)
im2col_runs(const unsigned short* __restrict__ x, unsigned short* __restrict__ out, unsigned total, unsigned L,
            unsigned out_w, unsigned groups, int rows_per, int ckk, int channels, int height, int width,
            int kernel, int stride, int padding) {
    const unsigned t = blockIdx.x * static_cast<unsigned>(kThreads) + threadIdx.x;
    if (t >= total) return;  // no barriers below
    const unsigned q = t / L;          // b * groups + g
    const unsigned l = t - q * L;
    const unsigned b = q / groups;
    const unsigned g = q - b * groups;
    const int r0 = static_cast<int>(g) * rows_per;
    const int r1 = min(r0 + rows_per, ckk);
    const int kk = kernel * kernel;
    int c = r0 / kk;
    const int rem = r0 - c * kk;
    int i = rem / kernel;
    int j = rem - i * kernel;
    const int oh = static_cast<int>(l / out_w);
    const int ow = static_cast<int>(l) - oh * static_cast<int>(out_w);
    const int bh = oh * stride - padding, bw = ow * stride - padding;
    const int64_t hw = static_cast<int64_t>(height) * width;
    const unsigned short* plane = x + (static_cast<int64_t>(b) * channels + c) * hw;
    unsigned short* o = out + (static_cast<int64_t>(b) * ckk + r0) * static_cast<int64_t>(L) + l;
    const int64_t ls = L;
    int r = r0;
    while (r < r1) {
        const int n = min(kernel - j, r1 - r);  // taps j .. j + n - 1 of row (c, i)
        const int ih = bh + i;
        int e = 0;
        if (static_cast<unsigned>(ih) < static_cast<unsigned>(height)) {
            const unsigned short* rowp = plane + ih * width;
            const int iw = bw + j;
            for (; e + 4 <= n; e += 4) {
                unsigned short v[4];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const int w = iw + e + u;
                    v[u] = static_cast<unsigned>(w) < static_cast<unsigned>(width) ? rowp[w]
                                                                                   : static_cast<unsigned short>(0);
                }
#pragma unroll
                for (int u = 0; u < 4; ++u) o[u * ls] = v[u];
                o += 4 * ls;
            }
            for (; e < n; ++e) {
                const int w = iw + e;
                *o = static_cast<unsigned>(w) < static_cast<unsigned>(width) ? rowp[w] : static_cast<unsigned short>(0);
                o += ls;
            }
        } else {
            for (; e < n; ++e) {
                *o = static_cast<unsigned short>(0);
                o += ls;
            }
        }
        r += n;
        j += n;
        if (j == kernel) {
            j = 0;
            if (++i == kernel) {
                i = 0;
                plane += hw;  // next channel
            }
        }
    }
}

}  // namespace

extern "C" int unfold_im2col(const __half* x, __half* out, int64_t batch, int64_t channels, int64_t height,
                             int64_t width, int64_t kernel, int64_t stride, int64_t padding, hipStream_t stream) {
    if (batch <= 0 || channels <= 0 || kernel <= 0 || stride <= 0) return static_cast<int>(hipSuccess);
    const int64_t out_h = (height + 2 * padding - kernel) / stride + 1;
    const int64_t out_w = (width + 2 * padding - kernel) / stride + 1;
    if (out_h <= 0 || out_w <= 0) return static_cast<int>(hipSuccess);
    const int64_t L = out_h * out_w;
    const int64_t ckk = channels * kernel * kernel;
    // row groups per image: enough threads (~2^20) for the GPU, never more groups than rows
    const int64_t bl = batch * L;
    int64_t groups = (kTargetThreads + bl - 1) / bl;
    if (groups > ckk) groups = ckk;
    if (groups < 1) groups = 1;
    const int64_t rows_per = (ckk + groups - 1) / groups;
    groups = (ckk + rows_per - 1) / rows_per;
    const int64_t total = bl * groups;
    if (total > UINT32_MAX - kThreads || ckk > INT32_MAX || height * width > INT32_MAX)
        return static_cast<int>(hipErrorInvalidValue);
    const int64_t blocks = (total + kThreads - 1) / kThreads;
    hipLaunchKernelGGL(im2col_runs, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, stream,
                       reinterpret_cast<const unsigned short*>(x), reinterpret_cast<unsigned short*>(out),
                       static_cast<unsigned>(total), static_cast<unsigned>(L), static_cast<unsigned>(out_w),
                       static_cast<unsigned>(groups), static_cast<int>(rows_per), static_cast<int>(ckk),
                       static_cast<int>(channels), static_cast<int>(height), static_cast<int>(width),
                       static_cast<int>(kernel), static_cast<int>(stride), static_cast<int>(padding));
    return static_cast<int>(hipGetLastError());
}

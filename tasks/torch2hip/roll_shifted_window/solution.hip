// Reference solution for Swin's cyclic shift: y[b, h, w, :] = x[b, (h + s) % H, (w + s) % W, :].
//
// - A shift along H and W moves whole [channels] vectors, so output row (b, h) (width *
//   channels contiguous elements) is a rotation of source row (b, (h + s) % H):
//   y_row[j] = x_row[(j + o) % L] with L = width * channels and o = (s % width) * channels.
//   No per-element division: one compare-and-subtract per vector.
// - One pass with wide accesses: vectors of V fp16 elements, V = 8 (16 bytes) when L and o
//   are multiples of 8 and both pointers are 16-byte aligned, else 2 (4 bytes) or 1. Eager
//   PyTorch runs two elementwise roll kernels (one per dimension) through an intermediate.
// - Grid y walks the batch * height rows (grid-stride past 65535); grid x splits a row into
//   chunks of kBlock * kUnroll vectors; each thread issues its loads before its stores.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kUnroll = 4;
constexpr int64_t kMaxGridY = 65535;

template <int V> struct Chunk;
template <> struct Chunk<8> { using T = uint4; };
template <> struct Chunk<2> { using T = unsigned int; };
template <> struct Chunk<1> { using T = unsigned short; };

template <int V>
__global__ void __launch_bounds__(kBlock)
roll_rows(const __half* __restrict__ xh, __half* __restrict__ yh, int64_t rows, int64_t height,
          int64_t row_vecs, int64_t offset_vecs, int64_t shift_h) {
    using T = typename Chunk<V>::T;
    const T* __restrict__ x = reinterpret_cast<const T*>(xh);
    T* __restrict__ y = reinterpret_cast<T*>(yh);
    const int64_t chunk = static_cast<int64_t>(kBlock) * kUnroll;
    const int64_t base = static_cast<int64_t>(blockIdx.x) * chunk + threadIdx.x;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const int64_t b = r / height;
        const int64_t h = r - b * height;
        int64_t hs = h + shift_h;
        if (hs >= height) hs -= height;
        const T* src = x + (b * height + hs) * row_vecs;
        T* dst = y + r * row_vecs;
        T v[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const int64_t j = base + k * kBlock;
            if (j < row_vecs) {
                int64_t s = j + offset_vecs;
                if (s >= row_vecs) s -= row_vecs;
                v[k] = src[s];
            }
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const int64_t j = base + k * kBlock;
            if (j < row_vecs) dst[j] = v[k];
        }
    }
}

template <int V>
void launch(const __half* x, __half* y, int64_t rows, int64_t height, int64_t row_len, int64_t offset,
            int64_t shift_h, hipStream_t stream) {
    const int64_t row_vecs = row_len / V;
    const int64_t chunk = static_cast<int64_t>(kBlock) * kUnroll;
    const int64_t gx = (row_vecs + chunk - 1) / chunk;
    const int64_t gy = rows < kMaxGridY ? rows : kMaxGridY;
    hipLaunchKernelGGL(roll_rows<V>, dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), dim3(kBlock), 0,
                       stream, x, y, rows, height, row_vecs, offset / V, shift_h);
}

}  // namespace

extern "C" int roll_shifted_window(const __half* x, __half* y, int64_t batch, int64_t height, int64_t width,
                                   int64_t channels, int64_t shift, hipStream_t stream) {
    if (batch <= 0 || height <= 0 || width <= 0 || channels <= 0) return static_cast<int>(hipSuccess);
    // roll by -shift: source index = (index + shift) mod size, for any sign of shift
    const int64_t shift_h = ((shift % height) + height) % height;
    const int64_t shift_w = ((shift % width) + width) % width;
    const int64_t rows = batch * height;
    const int64_t row_len = width * channels;
    const int64_t offset = shift_w * channels;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y);
    if (row_len % 8 == 0 && offset % 8 == 0 && addr % 16 == 0) {
        launch<8>(x, y, rows, height, row_len, offset, shift_h, stream);
    } else if (row_len % 2 == 0 && offset % 2 == 0 && addr % 4 == 0) {
        launch<2>(x, y, rows, height, row_len, offset, shift_h, stream);
    } else {
        launch<1>(x, y, rows, height, row_len, offset, shift_h, stream);
    }
    return static_cast<int>(hipGetLastError());
}

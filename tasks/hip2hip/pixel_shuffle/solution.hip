// Pixel shuffle, fp32: a general, portable solution.
//
// One thread per source pixel (n, c, h, w) of the output channel c: it loads the r * r
// values x[n, c*r*r + i*r + j, h, w] (each load coalesced across the warp, consecutive w
// on consecutive threads, all issued before any store) and writes them as r runs of r
// contiguous values y[n, c, h*r + i, w*r .. w*r + r - 1]. For r = 2 and r = 4 each run is
// one 8- or 16-byte vector store (aligned: w * r and the row length width * r are
// multiples of r), so a warp's store covers one contiguous span. r = 8 has two threads
// per source pixel, each owning half of every run (4 contiguous values, one aligned
// 16-byte store per run, 32 loads): a warp's stores again cover one contiguous span (one
// thread per pixel storing 8 scalars per run, lanes 32 bytes apart, split every 32-byte
// sector over 8 store instructions and ran slower than the one-thread-per-output
// baseline). Other factors store r scalars per run. The index decomposition is two
// divisions per thread (32-bit when the tensor has < 2**32 elements), amortised over
// r * r (r = 8: 32) elements instead of seven 64-bit ones per element.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define PS_THREADS 256

// One run of R contiguous output values as one vector store.
template <int R>
static __device__ __forceinline__ void store_run(float* dst, const float* v);
template <>
__device__ __forceinline__ void store_run<2>(float* dst, const float* v) {
    *reinterpret_cast<float2*>(dst) = make_float2(v[0], v[1]);
}
template <>
__device__ __forceinline__ void store_run<4>(float* dst, const float* v) {
    *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
}

// R = 2 or 4: vector stores. P = batch * channels * height * width source pixels.
template <int R, typename Index>
__global__ void pixel_shuffle_vec_kernel(const float* __restrict__ x, float* __restrict__ y, Index P, Index H,
                                         Index W) {
    const Index p = (Index)blockIdx.x * PS_THREADS + threadIdx.x;
    if (p >= P) return;
    const Index w = p % W;
    const Index q = p / W;  // nc * H + h
    const Index h = q % H;
    const Index nc = q / H;
    const Index plane = H * W;
    const float* src = x + nc * (Index)(R * R) * plane + h * W + w;
    float v[R * R];
#pragma unroll
    for (int k = 0; k < R * R; ++k) v[k] = src[(Index)k * plane];
    const Index wo = W * R;
    float* dst = y + (nc * H * R + h * R) * wo + w * R;
#pragma unroll
    for (int i = 0; i < R; ++i) store_run<R>(dst + (Index)i * wo, v + i * R);
}

// r = 8: two threads per source pixel; thread `half` owns sub-columns j = 4 * half .. + 3
// of the 8 runs. P2 = 2 * batch * channels * height * width.
template <typename Index>
__global__ void pixel_shuffle_x8_kernel(const float* __restrict__ x, float* __restrict__ y, Index P2, Index H,
                                        Index W) {
    const Index t = (Index)blockIdx.x * PS_THREADS + threadIdx.x;
    if (t >= P2) return;
    const Index half = t & 1;
    const Index p = t >> 1;
    const Index w = p % W;
    const Index q = p / W;  // nc * H + h
    const Index h = q % H;
    const Index nc = q / H;
    const Index plane = H * W;
    const float* src = x + (nc * 64 + half * 4) * plane + h * W + w;
    const Index wo = W * 8;
    float* dst = y + (nc * H * 8 + h * 8) * wo + w * 8 + half * 4;
    float v[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) {  // run i = k / 4, sub-column j = 4 * half + k % 4: channel i * 8 + j
        v[k] = src[(Index)((k / 4) * 8 + k % 4) * plane];
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        *reinterpret_cast<float4*>(dst + (Index)i * wo) =
            make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
    }
}

// Any factor r: scalar stores, r runs of r values.
template <typename Index>
__global__ void pixel_shuffle_any_kernel(const float* __restrict__ x, float* __restrict__ y, Index P, Index H, Index W,
                                         Index r) {
    const Index p = (Index)blockIdx.x * PS_THREADS + threadIdx.x;
    if (p >= P) return;
    const Index w = p % W;
    const Index q = p / W;
    const Index h = q % H;
    const Index nc = q / H;
    const Index plane = H * W;
    const float* src = x + nc * r * r * plane + h * W + w;
    const Index wo = W * r;
    float* dst = y + (nc * H * r + h * r) * wo + w * r;
    for (Index i = 0; i < r; ++i) {
        float v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j)
            if ((Index)j < r) v[j] = src[(i * r + j) * plane];
#pragma unroll
        for (int j = 0; j < 8; ++j)
            if ((Index)j < r) dst[i * wo + j] = v[j];
        for (Index j = 8; j < r; ++j) dst[i * wo + j] = src[(i * r + j) * plane];  // r > 8
    }
}

template <typename Index>
static void launch(const float* x, float* y, int64_t P, int64_t H, int64_t W, int64_t r, bool aligned16,
                   hipStream_t stream) {
    const unsigned int blocks = (unsigned int)((P + PS_THREADS - 1) / PS_THREADS);
    if (r == 2 && aligned16) {
        hipLaunchKernelGGL((pixel_shuffle_vec_kernel<2, Index>), dim3(blocks), dim3(PS_THREADS), 0, stream, x, y,
                           (Index)P, (Index)H, (Index)W);
    } else if (r == 4 && aligned16) {
        hipLaunchKernelGGL((pixel_shuffle_vec_kernel<4, Index>), dim3(blocks), dim3(PS_THREADS), 0, stream, x, y,
                           (Index)P, (Index)H, (Index)W);
    } else if (r == 8 && aligned16) {
        const unsigned int blocks2 = (unsigned int)((2 * P + PS_THREADS - 1) / PS_THREADS);
        hipLaunchKernelGGL(pixel_shuffle_x8_kernel<Index>, dim3(blocks2), dim3(PS_THREADS), 0, stream, x, y,
                           (Index)(2 * P), (Index)H, (Index)W);
    } else {
        hipLaunchKernelGGL(pixel_shuffle_any_kernel<Index>, dim3(blocks), dim3(PS_THREADS), 0, stream, x, y, (Index)P,
                           (Index)H, (Index)W, (Index)r);
    }
}

extern "C" int pixel_shuffle(const float* x, float* y, int64_t batch, int64_t channels, int64_t height, int64_t width,
                             int64_t upscale, hipStream_t stream) {
    const int64_t P = batch * channels * height * width;
    const int64_t total = P * upscale * upscale;
    if (total <= 0) return (int)hipSuccess;
    const bool aligned16 = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    if (total + PS_THREADS < (int64_t)UINT32_MAX)
        launch<uint32_t>(x, y, P, height, width, upscale, aligned16, stream);
    else
        launch<int64_t>(x, y, P, height, width, upscale, aligned16, stream);
    return (int)hipGetLastError();
}

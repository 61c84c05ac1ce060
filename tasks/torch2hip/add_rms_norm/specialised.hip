// Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
// wrong on others.
//
// The solution's design with 16-byte accesses (8 fp16 per load and store) and one assumption
// baked in: hidden is a multiple of 8 (true for every seen shape). Rows are addressed in
// 8-element vectors, row r starting at vector r * (hidden / 8). When hidden % 8 != 0 that
// stride is short: each row reads and writes the wrong elements (drifting back by
// hidden % 8 per row) and the end of the buffers is never written. The results are wrong
// values and unwritten elements, quietly; every access stays inside the buffers and on a
// 16-byte boundary (the host checks the base pointers), so it never faults.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kMinWarpSize = 32;
constexpr unsigned kMaxGrid = 1u << 20;

__device__ __forceinline__ void unpack2(unsigned bits, float& lo, float& hi) {
    lo = __half2float(__ushort_as_half(static_cast<unsigned short>(bits & 0xffffu)));
    hi = __half2float(__ushort_as_half(static_cast<unsigned short>(bits >> 16)));
}

__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    return static_cast<unsigned>(__half_as_ushort(__float2half_rn(lo))) |
           (static_cast<unsigned>(__half_as_ushort(__float2half_rn(hi))) << 16);
}

__device__ __forceinline__ void load8(const uint4* p, float (&f)[8]) {
    const uint4 u = *p;
    unpack2(u.x, f[0], f[1]);
    unpack2(u.y, f[2], f[3]);
    unpack2(u.z, f[4], f[5]);
    unpack2(u.w, f[6], f[7]);
}

__device__ __forceinline__ void store8(uint4* p, const float (&f)[8]) {
    uint4 u;
    u.x = pack2(f[0], f[1]);
    u.y = pack2(f[2], f[3]);
    u.z = pack2(f[4], f[5]);
    u.w = pack2(f[6], f[7]);
    *p = u;
}

__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int num_warps = kBlock / warpSize;
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float t = lane < num_warps ? scratch[lane] : 0.0f;
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) t += __shfl_xor(t, offset);
    __syncthreads();
    return t;
}

template <int VPT>
__global__ void __launch_bounds__(kBlock)
add_rms_norm_vec8(const uint4* __restrict__ x, const uint4* __restrict__ residual,
                  const uint4* __restrict__ weight, uint4* __restrict__ y,
                  uint4* __restrict__ residual_out, int64_t rows, int hidden, float eps) {
    __shared__ float scratch[kBlock / kMinWarpSize];
    const int num_vec = hidden / 8;  // assumes hidden % 8 == 0

    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t base = row * num_vec;  // == row * hidden / 8 only when hidden % 8 == 0
        float h[VPT][8];
        uint4 w[VPT];  // packed: unpacked only when used
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int i = threadIdx.x + k * kBlock;
            if (i < num_vec) {
                float r[8];
                load8(x + base + i, h[k]);
                load8(residual + base + i, r);
                w[k] = weight[i];
#pragma unroll
                for (int j = 0; j < 8; ++j) h[k][j] += r[j];
            }
        }
        float sum_sq = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int i = threadIdx.x + k * kBlock;
            if (i < num_vec) {
#pragma unroll
                for (int j = 0; j < 8; ++j) h[k][j] = __half2float(__float2half_rn(h[k][j]));
                store8(residual_out + base + i, h[k]);
#pragma unroll
                for (int j = 0; j < 8; ++j) sum_sq += h[k][j] * h[k][j];
            }
        }
        const float inv_rms = rsqrtf(block_sum(sum_sq, scratch) / static_cast<float>(hidden) + eps);
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int i = threadIdx.x + k * kBlock;
            if (i < num_vec) {
                float o[8], wf[8];
                load8(&w[k], wf);
#pragma unroll
                for (int j = 0; j < 8; ++j) o[j] = h[k][j] * inv_rms * wf[j];
                store8(y + base + i, o);
            }
        }
    }
}

typedef void (*KernelFn)(const uint4*, const uint4*, const uint4*, uint4*, uint4*, int64_t, int, float);

}  // namespace

extern "C" int add_rms_norm(const __half* x, const __half* residual, const __half* weight,
                            __half* y, __half* residual_out, int64_t rows, int64_t hidden,
                            float eps, hipStream_t stream) {
    if (rows <= 0 || hidden <= 0) return static_cast<int>(hipSuccess);
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(residual) |
                                reinterpret_cast<uintptr_t>(weight) | reinterpret_cast<uintptr_t>(y) |
                                reinterpret_cast<uintptr_t>(residual_out);
    if (addresses % 16 != 0) return static_cast<int>(hipErrorInvalidValue);
    const int64_t num_vec = hidden / 8;
    KernelFn kernel;
    if (num_vec <= kBlock) kernel = add_rms_norm_vec8<1>;
    else if (num_vec <= 2 * kBlock) kernel = add_rms_norm_vec8<2>;
    else if (num_vec <= 4 * kBlock) kernel = add_rms_norm_vec8<4>;
    else if (num_vec <= 8 * kBlock) kernel = add_rms_norm_vec8<8>;
    else return static_cast<int>(hipErrorInvalidValue);  // hidden > 16384: not specialised for
    const unsigned grid = rows < static_cast<int64_t>(kMaxGrid) ? static_cast<unsigned>(rows) : kMaxGrid;
    hipLaunchKernelGGL(kernel, dim3(grid), dim3(kBlock), 0, stream,
                       reinterpret_cast<const uint4*>(x), reinterpret_cast<const uint4*>(residual),
                       reinterpret_cast<const uint4*>(weight), reinterpret_cast<uint4*>(y),
                       reinterpret_cast<uint4*>(residual_out), rows, static_cast<int>(hidden), eps);
    return static_cast<int>(hipGetLastError());
}

// Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
// wrong on others.
//
// The solution's register-resident design with 16-byte accesses only, and one assumption
// baked in: hidden is a multiple of 8 (true for every seen shape). Rows are addressed in
// 8-element vectors, row r starting at vector r * (hidden / 8); when hidden % 8 != 0 that
// stride is short, so every row after the first reads and writes the wrong elements and the
// end of the outputs is never written. Every access stays inside the buffers (the base
// pointers of torch tensors are 16-byte aligned), so it fails quietly instead of faulting.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kMinWarp = 32;
constexpr unsigned kMaxGrid = 1u << 20;

__device__ __forceinline__ void load8(const uint4* p, float (&f)[8]) {
    const uint4 u = *p;
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] & 0xffffu)));
        f[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[i] >> 16)));
    }
}

__device__ __forceinline__ void store8(uint4* p, const float (&f)[8]) {
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        w[i] = static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * i]))) |
               (static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * i + 1]))) << 16);
    }
    uint4 u;
    u.x = w[0]; u.y = w[1]; u.z = w[2]; u.w = w[3];
    *p = u;
}

template <int BLOCK>
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int num_warps = (BLOCK + warpSize - 1) / warpSize;
    for (int off = warpSize / 2; off > 0; off >>= 1) v += __shfl_xor(v, off);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float t = lane < num_warps ? scratch[lane] : 0.0f;
    for (int off = warpSize / 2; off > 0; off >>= 1) t += __shfl_xor(t, off);
    __syncthreads();
    return t;
}

template <int BLOCK, int VPT>
__global__ void __launch_bounds__(BLOCK)
ln_residual_vec8(const uint4* __restrict__ x, const uint4* __restrict__ bias, const uint4* __restrict__ residual,
                 const uint4* __restrict__ ln_weight, const uint4* __restrict__ ln_bias, uint4* __restrict__ y,
                 uint4* __restrict__ residual_out, int64_t rows, int hidden, float eps) {
    __shared__ float scratch[BLOCK / kMinWarp];
    const int num_vec = hidden / 8;  // assumes hidden % 8 == 0
    const float inv_n = 1.0f / static_cast<float>(hidden);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t base = row * num_vec;  // == row * hidden / 8 only when hidden % 8 == 0
        float h[VPT][8];
        float sum = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int i = threadIdx.x + k * BLOCK;
            if (i < num_vec) {
                float b[8], r[8];
                load8(x + base + i, h[k]);
                load8(bias + i, b);
                load8(residual + base + i, r);
#pragma unroll
                for (int j = 0; j < 8; ++j) h[k][j] = __half2float(__float2half_rn((h[k][j] + b[j]) + r[j]));
                store8(residual_out + base + i, h[k]);
#pragma unroll
                for (int j = 0; j < 8; ++j) sum += h[k][j];
            }
        }
        const float mean = block_sum<BLOCK>(sum, scratch) * inv_n;
        float sq = 0.0f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            if (threadIdx.x + k * BLOCK < num_vec) {
#pragma unroll
                for (int j = 0; j < 8; ++j) sq += (h[k][j] - mean) * (h[k][j] - mean);
            }
        }
        const float rstd = rsqrtf(block_sum<BLOCK>(sq, scratch) * inv_n + eps);
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int i = threadIdx.x + k * BLOCK;
            if (i < num_vec) {
                float g[8], b[8], o[8];
                load8(ln_weight + i, g);
                load8(ln_bias + i, b);
#pragma unroll
                for (int j = 0; j < 8; ++j) o[j] = (h[k][j] - mean) * rstd * g[j] + b[j];
                store8(y + base + i, o);
            }
        }
    }
}

typedef void (*KernelFn)(const uint4*, const uint4*, const uint4*, const uint4*, const uint4*, uint4*, uint4*,
                         int64_t, int, float);

}  // namespace

extern "C" int layer_norm_residual(const __half* x, const __half* bias, const __half* residual,
                                   const __half* ln_weight, const __half* ln_bias, __half* y,
                                   __half* residual_out, int64_t rows, int64_t hidden, float eps,
                                   hipStream_t stream) {
    if (rows <= 0 || hidden < 8) return static_cast<int>(hipSuccess);
    const int num_vec = static_cast<int>(hidden / 8);
    int block;
    KernelFn kernel;
    if (num_vec <= 128)       { block = 128;  kernel = ln_residual_vec8<128, 1>; }
    else if (num_vec <= 256)  { block = 256;  kernel = ln_residual_vec8<256, 1>; }
    else if (num_vec <= 512)  { block = 256;  kernel = ln_residual_vec8<256, 2>; }
    else if (num_vec <= 1024) { block = 256;  kernel = ln_residual_vec8<256, 4>; }
    else                      { block = 1024; kernel = ln_residual_vec8<1024, 2>; }  // hidden <= 16384
    const unsigned grid = rows < static_cast<int64_t>(kMaxGrid) ? static_cast<unsigned>(rows) : kMaxGrid;
    hipLaunchKernelGGL(kernel, dim3(grid), dim3(block), 0, stream,
                       reinterpret_cast<const uint4*>(x), reinterpret_cast<const uint4*>(bias),
                       reinterpret_cast<const uint4*>(residual), reinterpret_cast<const uint4*>(ln_weight),
                       reinterpret_cast<const uint4*>(ln_bias), reinterpret_cast<uint4*>(y),
                       reinterpret_cast<uint4*>(residual_out), rows, static_cast<int>(hidden), eps);
    return static_cast<int>(hipGetLastError());
}

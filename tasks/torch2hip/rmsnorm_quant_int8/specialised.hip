// Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
// wrong on others.
//
// The solution's register-resident kernel with 16-byte loads only and two assumptions baked
// in, both true for every seen shape: hidden is a multiple of 8, and 512 threads x 2 vectors
// hold a row (hidden <= 8192). Rows are addressed in 8-element vectors, row r starting at
// vector r * (hidden / 8): when hidden % 8 != 0 every row after the first is read and written
// at the wrong place and the end of q is never written; every access stays in bounds.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 512;
constexpr int kVpt = 2;
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

__global__ void __launch_bounds__(kBlock)
rmsnorm_quant_vec8(const uint4* __restrict__ x, const uint4* __restrict__ weight, uint2* __restrict__ q,
                   float* __restrict__ scale, int64_t rows, int hidden, float eps) {
    __shared__ float scratch[2 * (kBlock / kMinWarp)];
    const int num_vec = hidden / 8;  // assumes hidden % 8 == 0
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    const int num_warps = (kBlock + warpSize - 1) / warpSize;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t base = row * num_vec;  // == row * hidden / 8 only when hidden % 8 == 0
        float z[kVpt][8];
        float ss = 0.0f, amax = 0.0f;
#pragma unroll
        for (int k = 0; k < kVpt; ++k) {
            const int i = threadIdx.x + k * kBlock;
            if (i < num_vec) {
                float xv[8], wv[8];
                load8(x + base + i, xv);
                load8(weight + i, wv);
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    ss += xv[j] * xv[j];
                    z[k][j] = xv[j] * wv[j];
                    amax = fmaxf(amax, fabsf(z[k][j]));
                }
            }
        }
        for (int off = warpSize / 2; off > 0; off >>= 1) {
            ss += __shfl_xor(ss, off);
            amax = fmaxf(amax, __shfl_xor(amax, off));
        }
        if (lane == 0) {
            scratch[warp] = ss;
            scratch[kBlock / kMinWarp + warp] = amax;
        }
        __syncthreads();
        ss = lane < num_warps ? scratch[lane] : 0.0f;
        amax = lane < num_warps ? scratch[kBlock / kMinWarp + lane] : 0.0f;
        for (int off = warpSize / 2; off > 0; off >>= 1) {
            ss += __shfl_xor(ss, off);
            amax = fmaxf(amax, __shfl_xor(amax, off));
        }
        __syncthreads();
        if (threadIdx.x == 0) scale[row] = amax * rsqrtf(ss / static_cast<float>(hidden) + eps) / 127.0f;
#pragma unroll
        for (int k = 0; k < kVpt; ++k) {
            const int i = threadIdx.x + k * kBlock;
            if (i < num_vec) {
                unsigned lo = 0, hi = 0;
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int q0 = static_cast<int>(rintf(__fdiv_rn(__fmul_rn(z[k][j], 127.0f), amax)));
                    const int q1 = static_cast<int>(rintf(__fdiv_rn(__fmul_rn(z[k][j + 4], 127.0f), amax)));
                    lo |= (static_cast<unsigned>(q0) & 0xffu) << (8 * j);
                    hi |= (static_cast<unsigned>(q1) & 0xffu) << (8 * j);
                }
                q[base + i] = make_uint2(lo, hi);
            }
        }
    }
}

}  // namespace

extern "C" int rmsnorm_quant_int8(const __half* x, const __half* weight, int8_t* q, float* scale, int64_t rows,
                                  int64_t hidden, float eps, hipStream_t stream) {
    if (rows <= 0 || hidden < 8 || hidden > 8 * kBlock * kVpt) return static_cast<int>(hipSuccess);
    const unsigned grid = rows < static_cast<int64_t>(kMaxGrid) ? static_cast<unsigned>(rows) : kMaxGrid;
    hipLaunchKernelGGL(rmsnorm_quant_vec8, dim3(grid), dim3(kBlock), 0, stream, reinterpret_cast<const uint4*>(x),
                       reinterpret_cast<const uint4*>(weight), reinterpret_cast<uint2*>(q), scale, rows,
                       static_cast<int>(hidden), eps);
    return static_cast<int>(hipGetLastError());
}

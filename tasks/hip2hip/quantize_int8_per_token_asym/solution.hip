// Dynamic per-token asymmetric fp16 -> int8 quantisation: one block per token.
//
// The block's threads stride over the row together (coalesced), with 16-byte loads of
// 8 halves and 8-byte stores of 8 int8 when hidden is a multiple of 8 (rows then stay
// 16-byte aligned), scalar accesses otherwise. Min and max are reduced with warp shuffles
// and a small shared array; the second pass re-reads the row, which is mostly an L2 hit.
// The arithmetic per element is exactly the reference's (IEEE division, rintf).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <math.h>
#include <stdint.h>

#define THREADS 256

__device__ __forceinline__ int8_t quant_one(float v, float s, float z) {
    float r = rintf(v / s) + z;
    r = fminf(fmaxf(r, -128.0f), 127.0f);
    return (int8_t)(int)r;
}

__global__ void __launch_bounds__(THREADS)
quant_row_per_block_kernel(const __half* __restrict__ x, int8_t* __restrict__ q, float* __restrict__ scale,
                           int32_t* __restrict__ zp, int64_t tokens, int64_t hidden) {
    __shared__ float s_mn[32];
    __shared__ float s_mx[32];
    __shared__ float s_s, s_z;

    const int64_t row = blockIdx.x;
    const __half* xr = x + row * hidden;
    int8_t* qr = q + row * hidden;
    const int tid = threadIdx.x;
    const bool vec = (hidden % 8) == 0;

    float mn = INFINITY, mx = -INFINITY;
    if (vec) {
        const int64_t nv = hidden / 8;
        const uint4* xv = reinterpret_cast<const uint4*>(xr);
        for (int64_t i = tid; i < nv; i += THREADS) {
            uint4 u = xv[i];
            const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const float2 f = __half22float2(h[k]);
                mn = fminf(mn, fminf(f.x, f.y));
                mx = fmaxf(mx, fmaxf(f.x, f.y));
            }
        }
    } else {
        for (int64_t j = tid; j < hidden; j += THREADS) {
            const float v = __half2float(xr[j]);
            mn = fminf(mn, v);
            mx = fmaxf(mx, v);
        }
    }

    for (int off = warpSize / 2; off > 0; off >>= 1) {
        mn = fminf(mn, __shfl_xor(mn, off));
        mx = fmaxf(mx, __shfl_xor(mx, off));
    }
    const int lane = tid % warpSize;
    const int warp = tid / warpSize;
    const int nwarps = (THREADS + warpSize - 1) / warpSize;
    if (lane == 0) {
        s_mn[warp] = mn;
        s_mx[warp] = mx;
    }
    __syncthreads();
    if (tid == 0) {
        float a = s_mn[0], b = s_mx[0];
        for (int w = 1; w < nwarps; ++w) {
            a = fminf(a, s_mn[w]);
            b = fmaxf(b, s_mx[w]);
        }
        const float rng = fmaxf(b - a, 1e-5f);
        const float s = rng * (1.0f / 255.0f);
        const float z = -128.0f - rintf(a / s);
        s_s = s;
        s_z = z;
        scale[row] = s;
        zp[row] = (int32_t)z;
    }
    __syncthreads();
    const float s = s_s, z = s_z;

    if (vec) {
        const int64_t nv = hidden / 8;
        const uint4* xv = reinterpret_cast<const uint4*>(xr);
        uint2* qv = reinterpret_cast<uint2*>(qr);
        for (int64_t i = tid; i < nv; i += THREADS) {
            uint4 u = xv[i];
            const __half2* h = reinterpret_cast<const __half2*>(&u);
            uint2 o;
            int8_t* ob = reinterpret_cast<int8_t*>(&o);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const float2 f = __half22float2(h[k]);
                ob[2 * k] = quant_one(f.x, s, z);
                ob[2 * k + 1] = quant_one(f.y, s, z);
            }
            qv[i] = o;
        }
    } else {
        for (int64_t j = tid; j < hidden; j += THREADS) qr[j] = quant_one(__half2float(xr[j]), s, z);
    }
}

extern "C" int quantize_int8_per_token_asym(const __half* x, int8_t* q, float* scale, int32_t* zp, int64_t tokens,
                                            int64_t hidden, hipStream_t stream) {
    if (tokens <= 0 || hidden <= 0) return (int)hipSuccess;
    hipLaunchKernelGGL(quant_row_per_block_kernel, dim3((unsigned int)tokens), dim3(THREADS), 0, stream, x, q, scale,
                       zp, tokens, hidden);
    return (int)hipGetLastError();
}

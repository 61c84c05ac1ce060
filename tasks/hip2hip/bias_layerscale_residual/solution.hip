// Bias + LayerScale + residual add, fp16: a general, portable solution.
//
// * One fused pass: x and residual are read once and out written once (the starting
//   kernel writes out twice and reads it back), with the sum in fp32.
// * dim % 8 == 0 and 16-byte aligned pointers: the tensors are taken as flat 16-byte
//   vectors of 8 halves; each thread loads four vectors of x and four of residual (strided
//   by the block size, so warp accesses are coalesced) plus the matching bias and gamma
//   vectors (L1/L2 hits) before computing, and stores 16-byte vectors. The column vector of
//   a flat vector comes from a 32-bit remainder when the count fits (64-bit otherwise).
// * Any other dim: a flat scalar kernel, 8 independent elements per thread.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define LS_THREADS 256
#define LS_VECS 4   // 16-byte vectors per thread, fast path
#define LS_ELEMS 8  // elements per thread, generic path

static __device__ __forceinline__ float lo_half(unsigned int bits) {
    return __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
}
static __device__ __forceinline__ float hi_half(unsigned int bits) {
    return __half2float(__ushort_as_half((unsigned short)(bits >> 16)));
}

static __device__ __forceinline__ unsigned int layerscale_pair(unsigned int xb, unsigned int rb, unsigned int bb,
                                                               unsigned int gb) {
    const float o0 = lo_half(rb) + lo_half(gb) * (lo_half(xb) + lo_half(bb));
    const float o1 = hi_half(rb) + hi_half(gb) * (hi_half(xb) + hi_half(bb));
    return (unsigned int)__half_as_ushort(__float2half_rn(o0)) |
           ((unsigned int)__half_as_ushort(__float2half_rn(o1)) << 16);
}

// nvec = tokens * dim / 8 flat vectors, dvec = dim / 8 vectors per row.
template <typename Index>
__global__ void layerscale_vec8_kernel(const uint4* __restrict__ x4, const uint4* __restrict__ r4,
                                       const uint4* __restrict__ b4, const uint4* __restrict__ g4,
                                       uint4* __restrict__ o4, Index nvec, Index dvec) {
    const Index first = (Index)blockIdx.x * (LS_THREADS * LS_VECS) + threadIdx.x;
    uint4 xv[LS_VECS], rv[LS_VECS], bv[LS_VECS], gv[LS_VECS];
#pragma unroll
    for (int k = 0; k < LS_VECS; ++k) {
        const Index i = first + (Index)k * LS_THREADS;
        if (i < nvec) {
            const Index c = i % dvec;
            xv[k] = x4[i];
            rv[k] = r4[i];
            bv[k] = b4[c];
            gv[k] = g4[c];
        }
    }
#pragma unroll
    for (int k = 0; k < LS_VECS; ++k) {
        const Index i = first + (Index)k * LS_THREADS;
        if (i < nvec) {
            uint4 o;
            o.x = layerscale_pair(xv[k].x, rv[k].x, bv[k].x, gv[k].x);
            o.y = layerscale_pair(xv[k].y, rv[k].y, bv[k].y, gv[k].y);
            o.z = layerscale_pair(xv[k].z, rv[k].z, bv[k].z, gv[k].z);
            o.w = layerscale_pair(xv[k].w, rv[k].w, bv[k].w, gv[k].w);
            o4[i] = o;
        }
    }
}

// Any shape: flat over the n = tokens * dim elements, LS_ELEMS per thread.
template <typename Index>
__global__ void layerscale_flat_kernel(const __half* __restrict__ x, const __half* __restrict__ residual,
                                       const __half* __restrict__ bias, const __half* __restrict__ gamma,
                                       __half* __restrict__ out, Index n, Index dim) {
    const Index first = (Index)blockIdx.x * (LS_THREADS * LS_ELEMS) + threadIdx.x;
    float v[LS_ELEMS], r[LS_ELEMS], g[LS_ELEMS];
#pragma unroll
    for (int k = 0; k < LS_ELEMS; ++k) {
        const Index e = first + (Index)k * LS_THREADS;
        if (e < n) {
            const Index c = e % dim;
            v[k] = __half2float(x[e]) + __half2float(bias[c]);
            r[k] = __half2float(residual[e]);
            g[k] = __half2float(gamma[c]);
        }
    }
#pragma unroll
    for (int k = 0; k < LS_ELEMS; ++k) {
        const Index e = first + (Index)k * LS_THREADS;
        if (e < n) out[e] = __float2half_rn(r[k] + g[k] * v[k]);
    }
}

extern "C" int bias_layerscale_residual(const __half* x, const __half* residual, const __half* bias,
                                        const __half* gamma, __half* out, int64_t tokens, int64_t dim,
                                        hipStream_t stream) {
    const int64_t n = tokens * dim;
    if (n <= 0) return (int)hipSuccess;
    const bool aligned16 = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(residual) % 16 == 0 &&
                           reinterpret_cast<uintptr_t>(bias) % 16 == 0 && reinterpret_cast<uintptr_t>(gamma) % 16 == 0 &&
                           reinterpret_cast<uintptr_t>(out) % 16 == 0;
    if (aligned16 && dim % 8 == 0) {
        const int64_t nvec = n / 8;
        const int64_t per = (int64_t)LS_THREADS * LS_VECS;
        const int64_t blocks = (nvec + per - 1) / per;
        const uint4* x4 = reinterpret_cast<const uint4*>(x);
        const uint4* r4 = reinterpret_cast<const uint4*>(residual);
        const uint4* b4 = reinterpret_cast<const uint4*>(bias);
        const uint4* g4 = reinterpret_cast<const uint4*>(gamma);
        uint4* o4 = reinterpret_cast<uint4*>(out);
        if (nvec + per <= (int64_t)UINT32_MAX) {
            hipLaunchKernelGGL(layerscale_vec8_kernel<uint32_t>, dim3((unsigned int)blocks), dim3(LS_THREADS), 0,
                               stream, x4, r4, b4, g4, o4, (uint32_t)nvec, (uint32_t)(dim / 8));
        } else {
            hipLaunchKernelGGL(layerscale_vec8_kernel<int64_t>, dim3((unsigned int)blocks), dim3(LS_THREADS), 0, stream,
                               x4, r4, b4, g4, o4, nvec, dim / 8);
        }
    } else {
        const int64_t per = (int64_t)LS_THREADS * LS_ELEMS;
        const int64_t blocks = (n + per - 1) / per;
        if (n + per <= (int64_t)UINT32_MAX) {
            hipLaunchKernelGGL(layerscale_flat_kernel<uint32_t>, dim3((unsigned int)blocks), dim3(LS_THREADS), 0,
                               stream, x, residual, bias, gamma, out, (uint32_t)n, (uint32_t)dim);
        } else {
            hipLaunchKernelGGL(layerscale_flat_kernel<int64_t>, dim3((unsigned int)blocks), dim3(LS_THREADS), 0, stream,
                               x, residual, bias, gamma, out, n, dim);
        }
    }
    return (int)hipGetLastError();
}

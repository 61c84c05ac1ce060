// Concatenation along the last dimension, fp16: a general, portable solution.
//
// * d1 and d2 multiples of 8, 16-byte aligned pointers: every row of a, b and out is a
//   whole number of 16-byte vectors, so the output is a flat stream of vectors, each
//   copied from one vector of a or of b. Each thread copies two vectors (both loads issued
//   before the stores, strided by the block size so warp accesses are coalesced); the row
//   of a vector comes from one 32-bit division.
// * Any other widths: the output is still written as flat 16-byte vectors of 8 halves.
//   Each thread finds the row and column of its first element with one division, walks
//   its 8 elements (wrapping to the next row as it goes), issues 8 independent 2-byte
//   loads from a or b (neighbouring threads read neighbouring values, so a warp's loads
//   share cache lines) and writes one 16-byte store. The total % 8 trailing outputs are
//   done by the first threads of block 0; an unaligned output goes to a scalar kernel.
// Signed 32-bit indices when the tensors have < 2**31 elements (64-bit otherwise).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define CC_THREADS 256
#define CC_VECS 2

template <typename Index>
__global__ void concat_vec8_kernel(const uint4* __restrict__ a4, const uint4* __restrict__ b4, uint4* __restrict__ o4,
                                   Index nvec, Index d1v, Index d2v) {
    const Index cv = d1v + d2v;
    const Index first = (Index)blockIdx.x * (CC_THREADS * CC_VECS) + threadIdx.x;
    uint4 val[CC_VECS];
#pragma unroll
    for (int k = 0; k < CC_VECS; ++k) {
        const Index v = first + (Index)k * CC_THREADS;
        if (v < nvec) {
            const Index r = v / cv;
            const Index c = v - r * cv;
            val[k] = c < d1v ? a4[r * d1v + c] : b4[r * d2v + (c - d1v)];
        }
    }
#pragma unroll
    for (int k = 0; k < CC_VECS; ++k) {
        const Index v = first + (Index)k * CC_THREADS;
        if (v < nvec) o4[v] = val[k];
    }
}

template <typename Index>
static __device__ __forceinline__ unsigned short concat_value(const __half* __restrict__ a, const __half* __restrict__ b,
                                                              Index r, Index c, Index d1, Index d2) {
    return __half_as_ushort(c < d1 ? a[r * d1 + c] : b[r * d2 + (c - d1)]);
}

template <typename Index>
__global__ void concat_walk8_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ out,
                                    Index nvec, Index total, Index d1, Index d2) {
    const Index cols = d1 + d2;
    const Index v = (Index)blockIdx.x * CC_THREADS + threadIdx.x;
    if (v < nvec) {
        const Index o = v * 8;
        Index r = o / cols;
        Index c = o - r * cols;
        unsigned short h[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            h[k] = concat_value<Index>(a, b, r, c, d1, d2);
            if (++c == cols) {
                c = 0;
                ++r;
            }
        }
        uint4 w;
        w.x = (unsigned int)h[0] | ((unsigned int)h[1] << 16);
        w.y = (unsigned int)h[2] | ((unsigned int)h[3] << 16);
        w.z = (unsigned int)h[4] | ((unsigned int)h[5] << 16);
        w.w = (unsigned int)h[6] | ((unsigned int)h[7] << 16);
        reinterpret_cast<uint4*>(out)[v] = w;
    }
    if (blockIdx.x == 0) {
        const Index o = nvec * 8 + (Index)threadIdx.x;  // at most 7 tail outputs
        if (o < total) {
            const Index r = o / cols;
            out[o] = __ushort_as_half(concat_value<Index>(a, b, r, o - r * cols, d1, d2));
        }
    }
}

template <typename Index>
__global__ void concat_scalar_kernel(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ out,
                                     Index total, Index d1, Index d2) {
    const Index cols = d1 + d2;
    const Index stride = (Index)gridDim.x * CC_THREADS;
    for (Index o = (Index)blockIdx.x * CC_THREADS + threadIdx.x; o < total; o += stride) {
        const Index r = o / cols;
        out[o] = __ushort_as_half(concat_value<Index>(a, b, r, o - r * cols, d1, d2));
    }
}

template <typename Index>
static void launch(const __half* a, const __half* b, __half* out, int64_t total, int64_t d1, int64_t d2,
                   hipStream_t stream) {
    const bool a16 = reinterpret_cast<uintptr_t>(a) % 16 == 0, b16 = reinterpret_cast<uintptr_t>(b) % 16 == 0;
    const bool o16 = reinterpret_cast<uintptr_t>(out) % 16 == 0;
    if (a16 && b16 && o16 && d1 % 8 == 0 && d2 % 8 == 0) {
        const int64_t nvec = total / 8;
        const int64_t per = (int64_t)CC_THREADS * CC_VECS;
        const int64_t blocks = (nvec + per - 1) / per;
        hipLaunchKernelGGL(concat_vec8_kernel<Index>, dim3((unsigned int)blocks), dim3(CC_THREADS), 0, stream,
                           reinterpret_cast<const uint4*>(a), reinterpret_cast<const uint4*>(b),
                           reinterpret_cast<uint4*>(out), (Index)nvec, (Index)(d1 / 8), (Index)(d2 / 8));
    } else if (o16) {
        const int64_t nvec = total / 8;
        int64_t blocks = (nvec + CC_THREADS - 1) / CC_THREADS;
        if (blocks < 1) blocks = 1;  // total < 8: block 0 does the tail alone
        hipLaunchKernelGGL(concat_walk8_kernel<Index>, dim3((unsigned int)blocks), dim3(CC_THREADS), 0, stream, a, b,
                           out, (Index)nvec, (Index)total, (Index)d1, (Index)d2);
    } else {
        int64_t blocks = (total + CC_THREADS * 4 - 1) / (CC_THREADS * 4);
        if (blocks > 65536) blocks = 65536;
        hipLaunchKernelGGL(concat_scalar_kernel<Index>, dim3((unsigned int)blocks), dim3(CC_THREADS), 0, stream, a, b,
                           out, (Index)total, (Index)d1, (Index)d2);
    }
}

extern "C" int concat_last_dim(const __half* a, const __half* b, __half* out, int64_t rows, int64_t d1, int64_t d2,
                               hipStream_t stream) {
    const int64_t total = rows * (d1 + d2);
    if (total <= 0) return (int)hipSuccess;
    if (total + CC_THREADS * 16 < (int64_t)INT32_MAX)
        launch<int32_t>(a, b, out, total, d1, d2, stream);
    else
        launch<int64_t>(a, b, out, total, d1, d2, stream);
    return (int)hipGetLastError();
}

// Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
// wrong on others.
//
// The solution's 16-byte path, reorganised around one assumption that holds for every seen
// shape: the token count is a multiple of kTokens (4). Each block rotates kTokens whole
// tokens (every head, every pair) and the grid has tokens / kTokens blocks, rounded down.
// When tokens % 4 != 0 the last tokens % 4 tokens are never written: their outputs keep the
// harness's poison. Every access stays inside the buffers (block b touches tokens
// 4b .. 4b + 3 < tokens only), so it never faults. Shapes whose half head_dim is not a
// multiple of 8, or unaligned pointers, are refused with an error code rather than read
// with misaligned vectors.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int kTokens = 4;  // tokens per block; assumes tokens % kTokens == 0

__device__ __forceinline__ void load8(const __half* p, float (&f)[8]) {
    const uint4 u = *reinterpret_cast<const uint4*>(p);
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        f[2 * k] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] & 0xffffu)));
        f[2 * k + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] >> 16)));
    }
}

__device__ __forceinline__ void load8(const float* p, float (&f)[8]) {
    const float4 a = *reinterpret_cast<const float4*>(p);
    const float4 b = *reinterpret_cast<const float4*>(p + 4);
    f[0] = a.x; f[1] = a.y; f[2] = a.z; f[3] = a.w;
    f[4] = b.x; f[5] = b.y; f[6] = b.z; f[7] = b.w;
}

__device__ __forceinline__ void store8(__half* p, const float (&f)[8]) {
    unsigned w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        w[k] = static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k]))) |
               (static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k + 1]))) << 16);
    }
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

__global__ void __launch_bounds__(kBlock)
rope_token_blocks(const __half* __restrict__ q, const float* __restrict__ cos_t, const float* __restrict__ sin_t,
                  __half* __restrict__ out, int heads, int head_dim) {
    const int half = head_dim / 2;
    const int per_head = half / 8;
    const int per_token = heads * per_head;
    const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kTokens;
    for (int k = threadIdx.x; k < kTokens * per_token; k += kBlock) {
        const int dt = k / per_token;
        const int r = k - dt * per_token;
        const int h = r / per_head;
        const int col = (r - h * per_head) * 8;
        const int64_t t = t0 + dt;
        const int64_t base = (t * heads + h) * head_dim + col;
        float x1[8], x2[8], c[8], s[8], o1[8], o2[8];
        load8(q + base, x1);
        load8(q + base + half, x2);
        load8(cos_t + t * half + col, c);
        load8(sin_t + t * half + col, s);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            o1[e] = fmaf(x1[e], c[e], -x2[e] * s[e]);
            o2[e] = fmaf(x2[e], c[e], x1[e] * s[e]);
        }
        store8(out + base, o1);
        store8(out + base + half, o2);
    }
}

}  // namespace

extern "C" int rope(const __half* q, const float* cos, const float* sin, __half* out, int64_t tokens, int64_t heads,
                    int64_t head_dim, hipStream_t stream) {
    if (tokens <= 0 || heads <= 0 || head_dim <= 0) return static_cast<int>(hipSuccess);
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(cos) |
                                reinterpret_cast<uintptr_t>(sin) | reinterpret_cast<uintptr_t>(out);
    if (head_dim % 16 != 0 || addresses % 16 != 0 || heads * head_dim > (1 << 20))
        return static_cast<int>(hipErrorInvalidValue);
    const int64_t blocks = tokens / kTokens;  // rounds down: the last tokens % kTokens tokens are dropped
    if (blocks == 0) return static_cast<int>(hipSuccess);
    if (blocks > 2147483647) return static_cast<int>(hipErrorInvalidValue);
    hipLaunchKernelGGL(rope_token_blocks, dim3(static_cast<unsigned>(blocks)), dim3(kBlock), 0, stream,
                       q, cos, sin, out, static_cast<int>(heads), static_cast<int>(head_dim));
    return static_cast<int>(hipGetLastError());
}

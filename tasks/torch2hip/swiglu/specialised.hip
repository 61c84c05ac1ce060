// Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
// wrong on others.
//
// The solution's kernel with only its 16-byte path and one assumption baked in: hidden is a
// multiple of 8 (true for every seen shape). x and y are addressed as arrays of 8-element
// vectors, row r of x starting at vector r * 2 * (hidden / 8) and row r of y at
// r * (hidden / 8). When hidden % 8 != 0 those strides are short: every row after the first
// reads its gate and up values from the wrong place (drifting back by 2 * (hidden % 8)
// elements per row), the last hidden % 8 outputs of each row are never computed and the end
// of y is never written. The results are wrong values and unwritten elements, quietly: every
// access stays inside the buffers (row r's reads end at vector (r + 1) * 2 * (hidden / 8),
// within tokens * 2 * hidden / 8) and on a 16-byte boundary (the host checks the base
// pointers), so it never faults.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridY = 65535;

__device__ __forceinline__ void unpack8(const uint4& u, float (&f)[8]) {
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        f[2 * k] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] & 0xffffu)));
        f[2 * k + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] >> 16)));
    }
}

__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
    unsigned w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        w[k] = static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k]))) |
               (static_cast<unsigned>(__half_as_ushort(__float2half_rn(f[2 * k + 1]))) << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// One thread per 8-element output vector; grid x = rows, grid y = chunks of a row.
__global__ void __launch_bounds__(kBlock)
swiglu_vec8(const uint4* __restrict__ x, uint4* __restrict__ y, int64_t tokens, int64_t hidden) {
    const int64_t num_vec = hidden / 8;  // assumes hidden % 8 == 0
    for (int64_t row = blockIdx.x; row < tokens; row += gridDim.x) {
        const uint4* gate = x + row * 2 * num_vec;  // == row * 2 * hidden / 8 only when hidden % 8 == 0
        const uint4* up = gate + num_vec;
        uint4* out = y + row * num_vec;
        for (int64_t i = static_cast<int64_t>(blockIdx.y) * kBlock + threadIdx.x; i < num_vec;
             i += static_cast<int64_t>(gridDim.y) * kBlock) {
            float g[8], u[8], o[8];
            unpack8(gate[i], g);
            unpack8(up[i], u);
#pragma unroll
            for (int j = 0; j < 8; ++j) o[j] = __fdividef(g[j], 1.0f + exp2f(-1.4426950408889634f * g[j])) * u[j];
            out[i] = pack8(o);
        }
    }
}

}  // namespace

extern "C" int swiglu(const __half* x, __half* y, int64_t tokens, int64_t hidden, hipStream_t stream) {
    if (tokens <= 0 || hidden < 8) return static_cast<int>(hipSuccess);
    if ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 != 0)
        return static_cast<int>(hipErrorInvalidValue);
    int64_t chunks = (hidden / 8 + kBlock - 1) / kBlock;
    if (chunks > kMaxGridY) chunks = kMaxGridY;
    const int64_t rows = tokens < kMaxGridX ? tokens : kMaxGridX;
    hipLaunchKernelGGL(swiglu_vec8, dim3(static_cast<unsigned>(rows), static_cast<unsigned>(chunks)),
                       dim3(kBlock), 0, stream, reinterpret_cast<const uint4*>(x), reinterpret_cast<uint4*>(y),
                       tokens, hidden);
    return static_cast<int>(hipGetLastError());
}

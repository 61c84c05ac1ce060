// Reference solution: one LSTM cell step in one kernel (both GEMMs, biases, gate math).
//
// Block tile: TB batch rows x TU hidden units, i.e. the 4 x TU gate columns of those units,
// so the cell update of a (batch row, unit) happens in the block that computed its four
// gates. K runs over the concatenation [x | h] against [w_ih | w_hh] in tiles of 32: x with
// w_ih first, then h with w_hh. The 4 * hidden gate pre-activations never leave the chip.
//
// - 256 threads = 4 K-groups x (8 x 8) threads. A thread owns R batch rows x R units x 4
//   gates (4 R^2 fp32 accumulators) and takes 8 of each tile's 32 k, so the serial chain is
//   a quarter of K. TB = TU = 8 R: R = 4 (32 x 32 tiles, 64 FMAs per five 16-byte shared
//   loads) when that still gives >= 128 blocks, else R = 2 (16 x 16 tiles, more blocks for
//   small batches).
// - After the K loop, K-groups 1..3 hand their partial sums to group 0 in turn through
//   shared memory (reusing the weight tile); group 0's threads then hold all four gates of
//   their R x R cells and finish them: biases, sigmoid / tanh, c_out, h_out.
// - Tiles are staged in shared memory k-major (activations [k][batch], weights
//   [k][gate][unit]), padded; global loads are coalesced along k. Any batch, input_size and
//   hidden: out-of-range rows, units and k are zero-filled, stores are guarded.
// - Accurate expf / tanhf: the fp32 tolerance is 1e-4.

#include <hip/hip_runtime.h>
#include <stdint.h>
#include <math.h>

namespace {

constexpr int kThreads = 256;
constexpr int kKT = 32;      // k per tile
constexpr int kGates = 4;    // i, f, g, o

template <int R> struct VecR;
template <> struct VecR<2> {
    static __device__ __forceinline__ void load(const float* p, float (&v)[2]) {
        const float2 t = *reinterpret_cast<const float2*>(p);
        v[0] = t.x; v[1] = t.y;
    }
};
template <> struct VecR<4> {
    static __device__ __forceinline__ void load(const float* p, float (&v)[4]) {
        const float4 t = *reinterpret_cast<const float4*>(p);
        v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;
    }
};

__device__ __forceinline__ float sigmoidf_(float v) { return 1.0f / (1.0f + expf(-v)); }

template <int R>
struct Tile {
    static constexpr int TB = 8 * R, TU = 8 * R;
    static constexpr int AST = TB + R;                // activation row stride (floats)
    static constexpr int WST = kGates * TU + R;       // weight row stride (floats)
    static constexpr int AS_SIZE = kKT * AST;
    static constexpr int WS_SIZE = kKT * WST;         // >= kGates * TB * TU: reused for the reduction
};

// acc[g][bi][ui] += sum over this thread's k of a[b0 + bp R + bi][k] * w[g hidden + u0 + up R + ui][k]
template <int R>
__device__ __forceinline__ void accumulate(const float* __restrict__ a, const float* __restrict__ w, int K,
                                           int batch, int hidden, int b0, int u0, float* as, float* ws,
                                           float (&acc)[kGates][R][R]) {
    using T = Tile<R>;
    const int tid = threadIdx.x;
    const int kgrp = tid >> 6, bp = (tid >> 3) & 7, up = tid & 7;
    for (int k0 = 0; k0 < K; k0 += kKT) {
        __syncthreads();  // the previous tile's reads are done
#pragma unroll
        for (int it = 0; it < (T::TB * kKT) / kThreads; ++it) {
            const int idx = tid + it * kThreads;
            const int b = idx >> 5, k = idx & 31;
            const int gb = b0 + b, gk = k0 + k;
            as[k * T::AST + b] = (gb < batch && gk < K) ? a[static_cast<int64_t>(gb) * K + gk] : 0.0f;
        }
#pragma unroll
        for (int it = 0; it < (kGates * T::TU * kKT) / kThreads; ++it) {
            const int idx = tid + it * kThreads;
            const int row = idx >> 5, k = idx & 31;
            const int g = row / T::TU, u = row % T::TU;
            const int gu = u0 + u, gk = k0 + k;
            ws[k * T::WST + g * T::TU + u] =
                (gu < hidden && gk < K) ? w[(static_cast<int64_t>(g) * hidden + gu) * K + gk] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kKT / 4; ++kk) {
            const int k = kgrp * (kKT / 4) + kk;
            float av[R];
            VecR<R>::load(&as[k * T::AST + bp * R], av);
#pragma unroll
            for (int g = 0; g < kGates; ++g) {
                float wv[R];
                VecR<R>::load(&ws[k * T::WST + g * T::TU + up * R], wv);
#pragma unroll
                for (int i = 0; i < R; ++i)
#pragma unroll
                    for (int j = 0; j < R; ++j) acc[g][i][j] += av[i] * wv[j];
            }
        }
    }
}

template <int R>
__global__ void __launch_bounds__(kThreads)
lstm_cell_kernel(const float* __restrict__ x, const float* __restrict__ h, const float* __restrict__ c,
                 const float* __restrict__ w_ih, const float* __restrict__ w_hh, const float* __restrict__ b_ih,
                 const float* __restrict__ b_hh, float* __restrict__ h_out, float* __restrict__ c_out, int batch,
                 int input_size, int hidden) {
    using T = Tile<R>;
    __shared__ __align__(16) float as[T::AS_SIZE];
    __shared__ __align__(16) float ws[T::WS_SIZE];
    const int u0 = blockIdx.x * T::TU, b0 = blockIdx.y * T::TB;
    float acc[kGates][R][R];
#pragma unroll
    for (int g = 0; g < kGates; ++g)
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
            for (int j = 0; j < R; ++j) acc[g][i][j] = 0.0f;
    accumulate<R>(x, w_ih, input_size, batch, hidden, b0, u0, as, ws, acc);
    accumulate<R>(h, w_hh, hidden, batch, hidden, b0, u0, as, ws, acc);

    // K-groups 1..3 hand their partial sums to group 0, one at a time, through ws
    const int tid = threadIdx.x;
    const int kgrp = tid >> 6, bp = (tid >> 3) & 7, up = tid & 7;
    for (int src = 1; src < 4; ++src) {
        __syncthreads();
        if (kgrp == src) {
#pragma unroll
            for (int g = 0; g < kGates; ++g)
#pragma unroll
                for (int i = 0; i < R; ++i)
#pragma unroll
                    for (int j = 0; j < R; ++j) ws[((g * T::TB) + bp * R + i) * T::TU + up * R + j] = acc[g][i][j];
        }
        __syncthreads();
        if (kgrp == 0) {
#pragma unroll
            for (int g = 0; g < kGates; ++g)
#pragma unroll
                for (int i = 0; i < R; ++i)
#pragma unroll
                    for (int j = 0; j < R; ++j) acc[g][i][j] += ws[((g * T::TB) + bp * R + i) * T::TU + up * R + j];
        }
    }
    if (kgrp != 0) return;  // no barrier follows

#pragma unroll
    for (int j = 0; j < R; ++j) {
        const int gu = u0 + up * R + j;
        if (gu >= hidden) continue;
        float bias[kGates];
#pragma unroll
        for (int g = 0; g < kGates; ++g) bias[g] = b_ih[g * hidden + gu] + b_hh[g * hidden + gu];
#pragma unroll
        for (int i = 0; i < R; ++i) {
            const int gb = b0 + bp * R + i;
            if (gb >= batch) continue;
            const float ig = sigmoidf_(acc[0][i][j] + bias[0]);
            const float fg = sigmoidf_(acc[1][i][j] + bias[1]);
            const float gg = tanhf(acc[2][i][j] + bias[2]);
            const float og = sigmoidf_(acc[3][i][j] + bias[3]);
            const int64_t o = static_cast<int64_t>(gb) * hidden + gu;
            const float cn = fg * c[o] + ig * gg;
            c_out[o] = cn;
            h_out[o] = og * tanhf(cn);
        }
    }
}

}  // namespace

extern "C" int lstm_cell(const float* x, const float* h, const float* c, const float* w_ih, const float* w_hh,
                         const float* b_ih, const float* b_hh, float* h_out, float* c_out, int64_t batch,
                         int64_t input_size, int64_t hidden, hipStream_t stream) {
    if (batch <= 0 || hidden <= 0) return static_cast<int>(hipSuccess);
    if (input_size < 0 || batch > INT32_MAX || 4 * hidden * (input_size + hidden) > INT32_MAX ||
        (batch + 15) / 16 > 65535)
        return static_cast<int>(hipErrorInvalidValue);
    const int64_t big_blocks = ((hidden + 31) / 32) * ((batch + 31) / 32);
    const int b = static_cast<int>(batch), in = static_cast<int>(input_size), hd = static_cast<int>(hidden);
    if (big_blocks >= 128) {
        const dim3 grid(static_cast<unsigned>((hidden + 31) / 32), static_cast<unsigned>((batch + 31) / 32));
        hipLaunchKernelGGL(lstm_cell_kernel<4>, grid, dim3(kThreads), 0, stream, x, h, c, w_ih, w_hh, b_ih, b_hh,
                           h_out, c_out, b, in, hd);
    } else {
        const dim3 grid(static_cast<unsigned>((hidden + 15) / 16), static_cast<unsigned>((batch + 15) / 16));
        hipLaunchKernelGGL(lstm_cell_kernel<2>, grid, dim3(kThreads), 0, stream, x, h, c, w_ih, w_hh, b_ih, b_hh,
                           h_out, c_out, b, in, hd);
    }
    return static_cast<int>(hipGetLastError());
}

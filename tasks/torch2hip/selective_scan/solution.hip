// Reference solution for the Mamba selective scan (fp32):
//   dt = softplus(delta[b, d, t]);  x[n] = exp(dt * A[d, n]) * x[n] + dt * u[b, d, t] * B[b, n, t]
//   y[b, d, t] = sum_n C[b, n, t] * x[n] + D[d] * u[b, d, t]
//
// - One thread per (batch, channel d), walking the sequence in order with its state x[0..N)
//   in registers: the scan is sequential in t, independent across (b, d) and across n.
//   Eager PyTorch launches four kernels per time step (and materialises two
//   [batch, dim, seqlen, dstate] tensors); here the whole scan is one launch.
// - A block holds kThreads consecutive channels of one batch. The sequence is processed in
//   chunks of kChunk steps staged through shared memory: u and delta tiles
//   [kThreads][kChunk] are loaded with coalesced reads along t (softplus applied as they are
//   loaded), the B and C columns of the chunk (shared by every channel of the batch) once per
//   block, and the y tile is written back coalesced. Rows of the tiles are padded to
//   kChunk + 1 floats so that thread r reading row r hits distinct banks.
// - The state size is a template parameter N (4, 8, 16, 32, 64; dstate <= N, the loops over
//   n are unrolled and guarded): the state and A[d, :] (pre-scaled by log2(e) so that
//   exp(dt * A) is one exp2f) live in registers. A dstate above 64 (outside the task's shape
//   space) is handled in groups of 64 states, each pass adding its part of y.
// - softplus follows PyTorch (threshold 20: x > 20 gives x). Accuracy against the fp64
//   reference: ~1e-7 relative (the recurrence is contractive, errors do not grow with t).

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kThreads = 64;  // channels per block (one thread each)
constexpr int kChunk = 32;    // time steps per shared-memory round
constexpr int kMaxState = 64; // largest template; larger dstate goes in groups
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float softplus(float v) { return v > 20.0f ? v : log1pf(expf(v)); }

// States [k0, k0 + min(N, dstate - k0)) of every (b, d). The first group (k0 == 0) writes
// y = its part + D * u; later groups add their part to y.
template <int N>
__global__ void __launch_bounds__(kThreads)
selective_scan_chunked(const float* __restrict__ u, const float* __restrict__ delta, const float* __restrict__ A,
                       const float* __restrict__ B, const float* __restrict__ C, const float* __restrict__ D,
                       float* __restrict__ y, int64_t dim, int64_t seqlen, int64_t dstate, int64_t k0) {
    __shared__ float s_u[kThreads][kChunk + 1];   // u, then y, of the chunk
    __shared__ float s_dt[kThreads][kChunk + 1];  // softplus(delta)
    __shared__ float s_B[N][kChunk];
    __shared__ float s_C[N][kChunk];

    const int tid = threadIdx.x;
    const int64_t b = blockIdx.y;
    const int64_t d0 = static_cast<int64_t>(blockIdx.x) * kThreads;
    const int64_t d = d0 + tid;
    const bool active = d < dim;
    const int states = static_cast<int>(dstate - k0 < N ? dstate - k0 : N);
    const bool first = k0 == 0;

    float a2[N];  // A[d, k0 + k] * log2(e)
    float x[N];
#pragma unroll
    for (int k = 0; k < N; ++k) {
        a2[k] = (active && k < states) ? A[d * dstate + k0 + k] * kLog2e : 0.0f;
        x[k] = 0.0f;
    }
    const float dd = (active && first) ? D[d] : 0.0f;

    const float* u_rows = u + (b * dim + d0) * seqlen;
    const float* delta_rows = delta + (b * dim + d0) * seqlen;
    float* y_rows = y + (b * dim + d0) * seqlen;
    const float* b_rows = B + (b * dstate + k0) * seqlen;
    const float* c_rows = C + (b * dstate + k0) * seqlen;

    for (int64_t t0 = 0; t0 < seqlen; t0 += kChunk) {
        const int len = static_cast<int>(seqlen - t0 < kChunk ? seqlen - t0 : kChunk);
        // Stage the chunk: consecutive threads read consecutive steps of one row.
        for (int e = tid; e < kThreads * kChunk; e += kThreads) {
            const int r = e / kChunk;
            const int c = e % kChunk;
            if (d0 + r < dim && c < len) {
                const int64_t off = static_cast<int64_t>(r) * seqlen + t0 + c;
                s_u[r][c] = u_rows[off];
                s_dt[r][c] = softplus(delta_rows[off]);
            }
        }
        for (int e = tid; e < N * kChunk; e += kThreads) {
            const int k = e / kChunk;
            const int c = e % kChunk;
            if (k < states && c < len) {
                const int64_t off = static_cast<int64_t>(k) * seqlen + t0 + c;
                s_B[k][c] = b_rows[off];
                s_C[k][c] = c_rows[off];
            }
        }
        __syncthreads();

        if (active) {
            for (int j = 0; j < len; ++j) {
                const float dt = s_dt[tid][j];
                const float uu = s_u[tid][j];
                const float dtu = dt * uu;
                float acc = 0.0f;
#pragma unroll
                for (int k = 0; k < N; ++k) {
                    if (k < states) {
                        x[k] = fmaf(exp2f(dt * a2[k]), x[k], dtu * s_B[k][j]);
                        acc = fmaf(x[k], s_C[k][j], acc);
                    }
                }
                s_u[tid][j] = fmaf(dd, uu, acc);  // y of step j (u of step j is no longer needed)
            }
        }
        __syncthreads();

        for (int e = tid; e < kThreads * kChunk; e += kThreads) {
            const int r = e / kChunk;
            const int c = e % kChunk;
            if (d0 + r < dim && c < len) {
                const int64_t off = static_cast<int64_t>(r) * seqlen + t0 + c;
                y_rows[off] = first ? s_u[r][c] : y_rows[off] + s_u[r][c];
            }
        }
        __syncthreads();  // the tiles are overwritten by the next chunk
    }
}

template <int N>
void launch(const float* u, const float* delta, const float* A, const float* B, const float* C, const float* D,
            float* y, int64_t batch, int64_t dim, int64_t seqlen, int64_t dstate, int64_t k0, hipStream_t stream) {
    const dim3 grid(static_cast<unsigned>((dim + kThreads - 1) / kThreads), static_cast<unsigned>(batch));
    hipLaunchKernelGGL(selective_scan_chunked<N>, grid, dim3(kThreads), 0, stream,
                       u, delta, A, B, C, D, y, dim, seqlen, dstate, k0);
}

}  // namespace

extern "C" int selective_scan(const float* u, const float* delta, const float* A, const float* B, const float* C,
                              const float* D, float* y, int64_t batch, int64_t dim, int64_t seqlen, int64_t dstate,
                              hipStream_t stream) {
    if (batch <= 0 || dim <= 0 || seqlen <= 0) return static_cast<int>(hipSuccess);
    if (dstate <= 0 || batch > 65535 || (dim + kThreads - 1) / kThreads > 2147483647)
        return static_cast<int>(hipErrorInvalidValue);
    if (dstate <= 4) {
        launch<4>(u, delta, A, B, C, D, y, batch, dim, seqlen, dstate, 0, stream);
    } else if (dstate <= 8) {
        launch<8>(u, delta, A, B, C, D, y, batch, dim, seqlen, dstate, 0, stream);
    } else if (dstate <= 16) {
        launch<16>(u, delta, A, B, C, D, y, batch, dim, seqlen, dstate, 0, stream);
    } else if (dstate <= 32) {
        launch<32>(u, delta, A, B, C, D, y, batch, dim, seqlen, dstate, 0, stream);
    } else {
        // groups of 64 states; the stream orders the passes
        for (int64_t k0 = 0; k0 < dstate; k0 += kMaxState)
            launch<kMaxState>(u, delta, A, B, C, D, y, batch, dim, seqlen, dstate, k0, stream);
    }
    return static_cast<int>(hipGetLastError());
}

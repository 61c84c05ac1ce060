// Reference solution for the per-sample smooth-L1 loss:
//   loss[b] = mean_j h(pred[b, j] - target[b, j]),  h(d) = |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta
//
// - pred and target are read once (4 bytes per element, against ~28 for eager PyTorch's two
//   casts, fp32 loss intermediate and mean); the differences and the loss are fp32.
// - Rows range from 1K to millions of elements and batches from 4 to 16K rows, so each row
//   is split into chunks, one block per (row, chunk), sized on the host so that there are
//   ~2K blocks or more: a few huge rows still fill the GPU. Each block reduces its chunk
//   (butterfly __shfl_xor in each warp, one value per warp through shared memory) and adds
//   its share, already divided by dim, to loss[b] with one atomicAdd. A first tiny kernel
//   zeroes loss (it arrives poisoned). The order of the atomic adds varies from run to run:
//   a few ulp of fp32, far inside the tolerance.
// - W = 8 (16-byte accesses) when dim % 8 == 0 and the pointers are 16-byte aligned, W = 2
//   when dim is even, W = 1 otherwise; loads of kUnroll vectors are issued before the math.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

namespace {

constexpr int kMaxBlock = 256;
constexpr int kMinWarpSize = 32;  // sizes the per-warp scratch
constexpr int kUnroll = 4;
constexpr int64_t kTargetBlocks = 2048;

template <int W> struct Pack;

template <> struct Pack<8> {
    using raw = uint4;
    static __device__ __forceinline__ raw load(const __half* p) { return *reinterpret_cast<const uint4*>(p); }
    static __device__ __forceinline__ void unpack(const raw& u, float (&f)[8]) {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            f[2 * k] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] & 0xffffu)));
            f[2 * k + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[k] >> 16)));
        }
    }
};

template <> struct Pack<2> {
    using raw = __half2;
    static __device__ __forceinline__ raw load(const __half* p) { return *reinterpret_cast<const __half2*>(p); }
    static __device__ __forceinline__ void unpack(const raw& u, float (&f)[2]) {
        const float2 v = __half22float2(u);
        f[0] = v.x;
        f[1] = v.y;
    }
};

template <> struct Pack<1> {
    using raw = __half;
    static __device__ __forceinline__ raw load(const __half* p) { return *p; }
    static __device__ __forceinline__ void unpack(const raw& u, float (&f)[1]) { f[0] = __half2float(u); }
};

__device__ __forceinline__ float huber(float d, float beta, float half_inv_beta) {
    const float a = fabsf(d);
    return a < beta ? half_inv_beta * d * d : a - 0.5f * beta;
}

template <int W>
__device__ __forceinline__ float accumulate(const typename Pack<W>::raw& rp, const typename Pack<W>::raw& rt,
                                            float beta, float half_inv_beta, float acc) {
    float p[W], t[W];
    Pack<W>::unpack(rp, p);
    Pack<W>::unpack(rt, t);
#pragma unroll
    for (int j = 0; j < W; ++j) acc += huber(p[j] - t[j], beta, half_inv_beta);
    return acc;
}

__global__ void zero_loss(float* __restrict__ loss, int64_t batch) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < batch) loss[i] = 0.0f;
}

// Block (row, chunk) = blockIdx.x; chunk covers vectors [chunk * chunk_vecs, +chunk_vecs) of the row.
template <int W>
__global__ void __launch_bounds__(kMaxBlock)
huber_chunks(const __half* __restrict__ pred, const __half* __restrict__ target, float* __restrict__ loss,
             int64_t dim, int64_t nchunks, int64_t chunk_vecs, float beta, float half_inv_beta, float inv_dim) {
    __shared__ float scratch[kMaxBlock / kMinWarpSize];
    const int64_t row = blockIdx.x / nchunks;
    const int64_t chunk = blockIdx.x - row * nchunks;
    const int64_t nvec = dim / W;
    const int64_t begin = chunk * chunk_vecs;
    const int64_t end = begin + chunk_vecs < nvec ? begin + chunk_vecs : nvec;
    const __half* pr = pred + row * dim;
    const __half* tr = target + row * dim;
    const int64_t step = static_cast<int64_t>(blockDim.x) * kUnroll;
    float acc = 0.0f;
    int64_t base = begin + threadIdx.x;
    for (; base + (kUnroll - 1) * static_cast<int64_t>(blockDim.x) < end; base += step) {
        typename Pack<W>::raw rp[kUnroll], rt[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const int64_t i = base + k * static_cast<int64_t>(blockDim.x);
            rp[k] = Pack<W>::load(pr + i * W);
            rt[k] = Pack<W>::load(tr + i * W);
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) acc = accumulate<W>(rp[k], rt[k], beta, half_inv_beta, acc);
    }
    for (; base < end; base += blockDim.x) {
        acc = accumulate<W>(Pack<W>::load(pr + base * W), Pack<W>::load(tr + base * W), beta, half_inv_beta, acc);
    }
    // block reduction
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int num_warps = (blockDim.x + warpSize - 1) / warpSize;
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) acc += __shfl_xor(acc, offset);
    if (lane == 0) scratch[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int w = 0; w < num_warps; ++w) total += scratch[w];
        atomicAdd(loss + row, total * inv_dim);
    }
}

template <int W>
void launch(const __half* pred, const __half* target, float* loss, int64_t batch, int64_t dim, float beta,
            hipStream_t stream) {
    const int64_t nvec = dim / W;
    int64_t threads = (nvec + 63) / 64 * 64;  // multiples of 64: whole warps on 32- and 64-wide targets
    if (threads > kMaxBlock) threads = kMaxBlock;
    // chunks per row: enough blocks overall, at least kUnroll vectors per thread
    const int64_t min_chunk = threads * kUnroll;
    int64_t max_chunks = (nvec + min_chunk - 1) / min_chunk;
    int64_t want = (kTargetBlocks + batch - 1) / batch;
    int64_t chunks = want < max_chunks ? want : max_chunks;
    if (chunks < 1) chunks = 1;
    int64_t chunk_vecs = (nvec + chunks - 1) / chunks;
    chunk_vecs = (chunk_vecs + threads - 1) / threads * threads;
    const int64_t nchunks = (nvec + chunk_vecs - 1) / chunk_vecs;
    hipLaunchKernelGGL(zero_loss, dim3(static_cast<unsigned>((batch + 255) / 256)), dim3(256), 0, stream, loss, batch);
    hipLaunchKernelGGL(huber_chunks<W>, dim3(static_cast<unsigned>(batch * nchunks)), dim3(static_cast<unsigned>(threads)),
                       0, stream, pred, target, loss, dim, nchunks, chunk_vecs, beta, 0.5f / beta,
                       1.0f / static_cast<float>(dim));
}

}  // namespace

extern "C" int smooth_l1_loss_per_sample(const __half* pred, const __half* target, float* loss, int64_t batch,
                                         int64_t dim, float beta, hipStream_t stream) {
    if (batch <= 0 || dim <= 0) return static_cast<int>(hipSuccess);
    const uintptr_t addresses = reinterpret_cast<uintptr_t>(pred) | reinterpret_cast<uintptr_t>(target);
    if (dim % 8 == 0 && addresses % 16 == 0) {
        launch<8>(pred, target, loss, batch, dim, beta, stream);
    } else if (dim % 2 == 0 && addresses % 4 == 0) {
        launch<2>(pred, target, loss, batch, dim, beta, stream);
    } else {
        launch<1>(pred, target, loss, batch, dim, beta, stream);
    }
    return static_cast<int>(hipGetLastError());
}

// Global average pooling, NCHW fp16 -> (N, C) fp32: a general, portable solution.
//
// * Planes of up to 1024 values: one warp per plane (warpSize lanes, 32 or 64), a
//   shuffle reduction, no barrier. Planes of 49 or 100 values use only part of the warp,
//   but every load is coalesced and the grid holds tens of thousands of warps.
// * Larger planes: a block of 256 threads per (plane, chunk). When there are too few
//   planes to fill the GPU (SE squeezes of 56 x 56 to 224 x 224 maps, a batch of one),
//   each plane is split into chunks (grid y) so that ~8 blocks per SM run; each block
//   adds its chunk, reduces through shuffles and one shared partial per warp, and adds
//   its share of the mean into y with one atomicAdd (y is zeroed first on the same
//   stream). With one chunk per plane the mean is stored directly.
// * 16-byte loads (8 halves): a plane starts at any 2-byte offset (h * w is odd for
//   7 x 7 maps), so each plane is split into a scalar head up to the next 16-byte
//   boundary, a uint4 body and a scalar tail. Four independent loads are in flight per
//   thread in the body loop. fp32 accumulation throughout.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define AP_THREADS 256
#define AP_MAX_WARPS 32            // 1024 threads / 32 lanes
#define AP_WARP_PATH_MAX 1024      // planes up to this size: one warp each
#define AP_MIN_CHUNK 4096          // a chunk of a split plane has at least this many values
#define AP_BLOCKS_PER_SM 8
#define AP_MAX_GRID 2147483647LL

struct ApSpan {
    int64_t head;  // scalars before the first 16-byte boundary
    int64_t nvec;  // uint4 vectors (8 halves) after the head
};

static __device__ __forceinline__ ApSpan ap_split(const __half* p, int64_t n) {
    ApSpan s;
    const int64_t past = (int64_t)((reinterpret_cast<uintptr_t>(p) / sizeof(__half)) % 8);
    int64_t head = past == 0 ? 0 : 8 - past;
    if (head > n) head = n;
    s.head = head;
    s.nvec = (n - head) / 8;
    return s;
}

static __device__ __forceinline__ float ap_word(unsigned int u) {
    return __half2float(__ushort_as_half((unsigned short)(u & 0xffffu))) +
           __half2float(__ushort_as_half((unsigned short)(u >> 16)));
}

static __device__ __forceinline__ float ap_hsum8(uint4 v) {
    return (ap_word(v.x) + ap_word(v.y)) + (ap_word(v.z) + ap_word(v.w));
}

// Sum of vectors [vb, ve) by nt cooperating threads (this one is t).
static __device__ __forceinline__ float ap_sum_vectors(const uint4* __restrict__ pv, int64_t vb, int64_t ve, int t,
                                                       int nt) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    int64_t i = vb + t;
    for (; i + 3 * (int64_t)nt < ve; i += 4 * (int64_t)nt) {
        const uint4 v0 = pv[i];
        const uint4 v1 = pv[i + nt];
        const uint4 v2 = pv[i + 2 * (int64_t)nt];
        const uint4 v3 = pv[i + 3 * (int64_t)nt];
        a0 += ap_hsum8(v0);
        a1 += ap_hsum8(v1);
        a2 += ap_hsum8(v2);
        a3 += ap_hsum8(v3);
    }
    for (; i < ve; i += nt) a0 += ap_hsum8(pv[i]);
    return (a0 + a1) + (a2 + a3);
}

static __device__ __forceinline__ float ap_sum_edges(const __half* __restrict__ p, int64_t n, ApSpan sp, int t,
                                                     int nt) {
    float s = 0.0f;
    for (int64_t j = t; j < sp.head; j += nt) s += __half2float(p[j]);
    for (int64_t j = sp.head + 8 * sp.nvec + t; j < n; j += nt) s += __half2float(p[j]);
    return s;
}

static __device__ __forceinline__ float ap_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// Thread 0 gets the block's sum. All threads call it; blockDim.x a multiple of warpSize.
static __device__ __forceinline__ float ap_block_sum(float v, float* partials) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    v = ap_warp_sum(v);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? partials[lane] : 0.0f;
        v = ap_warp_sum(v);
    }
    __syncthreads();  // partials are reused by the next plane
    return v;
}

__global__ void avgpool_warp_kernel(const __half* __restrict__ x, float* __restrict__ y, int64_t planes, int64_t hw,
                                    float inv_hw) {
    const int lane = threadIdx.x % warpSize;
    const int warps_per_block = blockDim.x / warpSize;
    const int64_t stride = (int64_t)gridDim.x * warps_per_block;
    // The loop bound depends on the warp only: whole warps enter the shuffles.
    for (int64_t plane = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize; plane < planes;
         plane += stride) {
        const __half* p = x + plane * hw;
        const ApSpan sp = ap_split(p, hw);
        float s = ap_sum_vectors(reinterpret_cast<const uint4*>(p + sp.head), 0, sp.nvec, lane, warpSize);
        s += ap_sum_edges(p, hw, sp, lane, warpSize);
        s = ap_warp_sum(s);
        if (lane == 0) y[plane] = s * inv_hw;
    }
}

// grid.y = chunks; chunks > 1 needs y zeroed beforehand.
__global__ void avgpool_chunk_kernel(const __half* __restrict__ x, float* __restrict__ y, int64_t planes, int64_t hw,
                                     float inv_hw, int chunks) {
    __shared__ float partials[AP_MAX_WARPS];
    const int t = threadIdx.x;
    const int nt = blockDim.x;
    const int64_t chunk = blockIdx.y;
    for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
        const __half* p = x + plane * hw;
        const ApSpan sp = ap_split(p, hw);
        const int64_t per = (sp.nvec + chunks - 1) / chunks;
        const int64_t vb = chunk * per < sp.nvec ? chunk * per : sp.nvec;
        const int64_t ve = vb + per < sp.nvec ? vb + per : sp.nvec;
        float s = ap_sum_vectors(reinterpret_cast<const uint4*>(p + sp.head), vb, ve, t, nt);
        if (chunk == 0) s += ap_sum_edges(p, hw, sp, t, nt);
        s = ap_block_sum(s, partials);
        if (t == 0) {
            if (chunks == 1)
                y[plane] = s * inv_hw;
            else
                atomicAdd(y + plane, s * inv_hw);
        }
    }
}

static int ap_sm_count() {
    static int cached = 0;
    if (cached == 0) {
        int dev = 0;
        int n = 0;
        if (hipGetDevice(&dev) != hipSuccess ||
            hipDeviceGetAttribute(&n, hipDeviceAttributeMultiprocessorCount, dev) != hipSuccess || n <= 0)
            n = 128;
        cached = n;
    }
    return cached;
}

extern "C" int avgpool_global(const __half* x, float* y, int64_t n, int64_t c, int64_t h, int64_t w,
                              hipStream_t stream) {
    const int64_t planes = n * c;
    const int64_t hw = h * w;
    if (planes <= 0 || hw <= 0) return (int)hipSuccess;
    const float inv_hw = 1.0f / (float)hw;
    if (hw <= AP_WARP_PATH_MAX) {
        // Grid sized for 32-lane warps; with 64-lane warps the grid-stride loop covers the rest.
        const int64_t per_block = AP_THREADS / 32;
        int64_t blocks = (planes + per_block - 1) / per_block;
        if (blocks > AP_MAX_GRID) blocks = AP_MAX_GRID;
        hipLaunchKernelGGL(avgpool_warp_kernel, dim3((unsigned int)blocks), dim3(AP_THREADS), 0, stream, x, y, planes,
                           hw, inv_hw);
        return (int)hipGetLastError();
    }
    const int64_t target_blocks = (int64_t)ap_sm_count() * AP_BLOCKS_PER_SM;
    int64_t chunks = (target_blocks + planes - 1) / planes;
    int64_t max_chunks = hw / AP_MIN_CHUNK;
    if (max_chunks < 1) max_chunks = 1;
    if (chunks > max_chunks) chunks = max_chunks;
    if (chunks > 65535) chunks = 65535;
    if (chunks > 1) {
        const hipError_t err = hipMemsetAsync(y, 0, (size_t)planes * sizeof(float), stream);
        if (err != hipSuccess) return (int)err;
    }
    const int64_t blocks = planes < AP_MAX_GRID ? planes : AP_MAX_GRID;
    hipLaunchKernelGGL(avgpool_chunk_kernel, dim3((unsigned int)blocks, (unsigned int)chunks), dim3(AP_THREADS), 0,
                       stream, x, y, planes, hw, inv_hw, (int)chunks);
    return (int)hipGetLastError();
}

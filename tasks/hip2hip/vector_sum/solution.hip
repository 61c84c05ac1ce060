// Sum of each row of an fp32 [segments, length] tensor: a general, portable solution.
//
// * Short segments (length <= 2048): one warp per segment, float4 loads, a shuffle
//   reduction, no barrier.
// * Longer segments: one block per (segment, chunk) of 256, 512 or 1024 threads, each
//   thread with four independent float4 loads in flight (the last, partial round of a
//   thread's loads is predicated rather than a serial loop), a reduction through warp
//   shuffles and one shared partial per warp. The launch is planned so that all blocks
//   fit in one wave (the number of resident blocks per SM comes from the occupancy API):
//   - segments >= the resident 256-thread blocks: one 256-thread block per segment
//     (several waves, the total stored directly);
//   - fewer segments, but at least one per SM: one block per segment, with the largest
//     block (1024, 512 or 256 threads) whose resident count still holds every segment,
//     so one wave and no atomics (512 rows of 32000: 512 blocks of 512 threads, where a
//     split into 3 chunks gave 1.45 waves plus a memset and ran no faster than the
//     baseline);
//   - fewer segments than SMs (a few long shards): each segment is split into `chunks`
//     pieces (grid y), chunks = floor(resident 256-thread blocks / segments) (so the
//     grid never spills a few blocks into a second wave) and at least 8192 values each;
//     each block adds its total into out[segment] with one atomicAdd (out is zeroed
//     first on the same stream). The atomics make the summation order vary between
//     calls; fp32 sums of these sizes stay ~1e-7 relative to the fp64 reference whatever
//     the order.
// * Rows need not be 16-byte aligned (length % 4 != 0): each segment is split into a
//   scalar head up to the first 16-byte boundary, a float4 body and a scalar tail.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define VS_THREADS 256
#define VS_MAX_WARPS 32            // 1024 threads / 32 lanes
#define VS_WARP_PATH_MAX_LEN 2048  // up to this length: one warp per segment
#define VS_MIN_CHUNK 8192          // a chunk of a split segment has at least this many values
#define VS_MAX_GRID 2147483647LL

struct VsSpan {
    int64_t head;  // scalar values before the first 16-byte boundary
    int64_t nvec;  // float4 vectors after the head
};

static __device__ __forceinline__ VsSpan vs_split(const float* p, int64_t n, bool vec) {
    VsSpan s;
    if (!vec) {
        s.head = n;
        s.nvec = 0;
        return s;
    }
    const int64_t past = (int64_t)((reinterpret_cast<uintptr_t>(p) / sizeof(float)) % 4);
    int64_t head = past == 0 ? 0 : 4 - past;
    if (head > n) head = n;
    s.head = head;
    s.nvec = (n - head) / 4;
    return s;
}

static __device__ __forceinline__ float vs_hsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// Sum of float4 vectors [vb, ve) of pv, by nt cooperating threads (this one is t).
static __device__ __forceinline__ float vs_sum_vectors(const float4* __restrict__ pv, int64_t vb, int64_t ve, int t,
                                                       int nt) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    int64_t i = vb + t;
    for (; i + 3 * (int64_t)nt < ve; i += 4 * (int64_t)nt) {
        const float4 v0 = pv[i];
        const float4 v1 = pv[i + nt];
        const float4 v2 = pv[i + 2 * (int64_t)nt];
        const float4 v3 = pv[i + 3 * (int64_t)nt];
        a0 += vs_hsum(v0);
        a1 += vs_hsum(v1);
        a2 += vs_hsum(v2);
        a3 += vs_hsum(v3);
    }
    // At most 3 vectors are left for this thread (i + 3 * nt >= ve): their loads are issued together.
    const float4 z = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float4 v0 = i < ve ? pv[i] : z;
    const float4 v1 = i + nt < ve ? pv[i + nt] : z;
    const float4 v2 = i + 2 * (int64_t)nt < ve ? pv[i + 2 * (int64_t)nt] : z;
    a0 += vs_hsum(v0);
    a1 += vs_hsum(v1);
    a2 += vs_hsum(v2);
    return (a0 + a1) + (a2 + a3);
}

// Head and tail scalars of a segment.
static __device__ __forceinline__ float vs_sum_edges(const float* __restrict__ p, int64_t length, VsSpan sp, int t,
                                                     int nt) {
    float s = 0.0f;
    for (int64_t j = t; j < sp.head; j += nt) s += p[j];
    for (int64_t j = sp.head + 4 * sp.nvec + t; j < length; j += nt) s += p[j];
    return s;
}

static __device__ __forceinline__ float vs_warp_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
    return v;
}

// Thread 0 gets the block's sum. All threads must call it; blockDim.x a multiple of warpSize.
static __device__ __forceinline__ float vs_block_sum(float v, float* partials) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    v = vs_warp_sum(v);
    if (lane == 0) partials[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? partials[lane] : 0.0f;
        v = vs_warp_sum(v);
    }
    __syncthreads();  // partials are reused by the next segment
    return v;
}

__global__ void vector_sum_warp_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t segments,
                                       int64_t length, bool vec) {
    const int lane = threadIdx.x % warpSize;
    const int warps_per_block = blockDim.x / warpSize;
    const int64_t stride = (int64_t)gridDim.x * warps_per_block;
    // The loop bound depends on the warp only: whole warps enter the shuffles.
    for (int64_t seg = (int64_t)blockIdx.x * warps_per_block + threadIdx.x / warpSize; seg < segments;
         seg += stride) {
        const float* p = x + seg * length;
        const VsSpan sp = vs_split(p, length, vec);
        float s = vs_sum_vectors(reinterpret_cast<const float4*>(p + sp.head), 0, sp.nvec, lane, warpSize);
        s += vs_sum_edges(p, length, sp, lane, warpSize);
        s = vs_warp_sum(s);
        if (lane == 0) out[seg] = s;
    }
}

// grid.y = chunks; chunks > 1 needs out zeroed beforehand.
__global__ void vector_sum_chunk_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t segments,
                                        int64_t length, int chunks, bool vec) {
    __shared__ float partials[VS_MAX_WARPS];
    const int t = threadIdx.x;
    const int nt = blockDim.x;
    const int64_t chunk = blockIdx.y;
    for (int64_t seg = blockIdx.x; seg < segments; seg += gridDim.x) {
        const float* p = x + seg * length;
        const VsSpan sp = vs_split(p, length, vec);
        const int64_t per = (sp.nvec + chunks - 1) / chunks;
        const int64_t vb = chunk * per < sp.nvec ? chunk * per : sp.nvec;
        const int64_t ve = vb + per < sp.nvec ? vb + per : sp.nvec;
        float s = vs_sum_vectors(reinterpret_cast<const float4*>(p + sp.head), vb, ve, t, nt);
        if (chunk == 0) s += vs_sum_edges(p, length, sp, t, nt);
        s = vs_block_sum(s, partials);
        if (t == 0) {
            if (chunks == 1)
                out[seg] = s;
            else
                atomicAdd(out + seg, s);
        }
    }
}

static int vs_sm_count() {
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

// Resident blocks of vector_sum_chunk_kernel per SM at 256, 512 or 1024 threads.
static int vs_blocks_per_sm(int threads) {
    static int cached[3] = {0, 0, 0};
    const int slot = threads == 256 ? 0 : threads == 512 ? 1 : 2;
    if (cached[slot] == 0) {
        int n = 0;
        if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, vector_sum_chunk_kernel, threads, 0) != hipSuccess ||
            n <= 0) {
            (void)hipGetLastError();  // clear a failed query
            n = 2048 / threads;
            if (n < 1) n = 1;
        }
        cached[slot] = n;
    }
    return cached[slot];
}

extern "C" int vector_sum(const float* x, float* out, int64_t segments, int64_t length, hipStream_t stream) {
    if (segments <= 0) return (int)hipSuccess;
    const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0;
    if (length <= VS_WARP_PATH_MAX_LEN) {
        // Grid sized for 32-lane warps; with 64-lane warps the grid-stride loop covers the rest.
        const int64_t per_block = VS_THREADS / 32;
        int64_t blocks = (segments + per_block - 1) / per_block;
        if (blocks > VS_MAX_GRID) blocks = VS_MAX_GRID;
        hipLaunchKernelGGL(vector_sum_warp_kernel, dim3((unsigned int)blocks), dim3(VS_THREADS), 0, stream, x, out,
                           segments, length, vec);
        return (int)hipGetLastError();
    }
    const int64_t sms = vs_sm_count();
    const int64_t slots256 = sms * vs_blocks_per_sm(256);
    int threads = VS_THREADS;
    int64_t chunks = 1;
    if (segments >= slots256 || segments > sms * vs_blocks_per_sm(512)) {
        threads = 256;  // several waves, or one wave of 256-thread blocks
    } else if (segments > sms * vs_blocks_per_sm(1024)) {
        threads = 512;  // one wave of 512-thread blocks
    } else if (segments >= sms) {
        threads = 1024;  // one wave of 1024-thread blocks
    } else {
        chunks = slots256 / segments;  // the split grid fills one wave and no more
        int64_t max_chunks = length / VS_MIN_CHUNK;
        if (max_chunks < 1) max_chunks = 1;
        if (chunks > max_chunks) chunks = max_chunks;
        if (chunks > 65535) chunks = 65535;
        if (chunks < 1) chunks = 1;
    }
    if (chunks > 1) {
        hipError_t err = hipMemsetAsync(out, 0, (size_t)segments * sizeof(float), stream);
        if (err != hipSuccess) return (int)err;
    }
    const int64_t blocks = segments < VS_MAX_GRID ? segments : VS_MAX_GRID;
    hipLaunchKernelGGL(vector_sum_chunk_kernel, dim3((unsigned int)blocks, (unsigned int)chunks), dim3(threads), 0,
                       stream, x, out, segments, length, (int)chunks, vec);
    return (int)hipGetLastError();
}

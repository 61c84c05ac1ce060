// Segmented max and first argmax over CSR row segments, fp32: a general, portable solution.
//
// * A block is a 2-D tile: 32 lanes along the features (float4 vectors when features % 4
//   == 0 and x is 16-byte aligned, else scalars) times 8 lanes along the rows; each row
//   lane walks every 8th row of its range in increasing order with two loads in flight,
//   keeping (value, first row) with strict comparisons; the 8 candidates are merged in
//   shared memory (larger value, then smaller row).
// * The grid is (feature tiles, segments, splits): long segments (few point clouds) are
//   cut into `splits` row ranges so that about a thousand blocks work. With one split the
//   block writes out and arg directly. With several, each block folds its candidate into
//   a 64-bit key (order-preserving float bits << 32 | ~row) with atomicMax into arg itself
//   (zeroed first), and a last kernel decodes the keys into out and arg: no scratch memory.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define SM_TX 32
#define SM_TY 8
#define SM_THREADS (SM_TX * SM_TY)
#define SM_TARGET_BLOCKS 1024
#define SM_MAX_SPLITS 64
#define SM_MIN_ROWS_PER_SPLIT 64

static __device__ __forceinline__ unsigned long long sm_key(float v, int64_t row) {
    unsigned int u = __float_as_uint(v);
    if (u == 0x80000000u) u = 0u;  // -0 ties with +0
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)u << 32) | (unsigned long long)(0xFFFFFFFFu - (unsigned int)row);
}

template <int V> struct SmVec;
template <> struct SmVec<4> { typedef float4 T; };
template <> struct SmVec<1> { typedef float T; };

static __device__ __forceinline__ void sm_get(const float4& v, float* f) {
    f[0] = v.x;
    f[1] = v.y;
    f[2] = v.z;
    f[3] = v.w;
}
static __device__ __forceinline__ void sm_get(float v, float* f) { f[0] = v; }

template <int V>
static __device__ __forceinline__ void sm_scan(const float* v, int64_t r, float* best, int64_t* row) {
#pragma unroll
    for (int q = 0; q < V; ++q) {
        if (row[q] < 0 || v[q] > best[q]) {
            best[q] = v[q];
            row[q] = r;
        }
    }
}

__global__ void sm_zero_kernel(int64_t* __restrict__ arg, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) arg[i] = 0;
}

__global__ void sm_decode_kernel(float* __restrict__ out, int64_t* __restrict__ arg, int64_t n, int64_t num_nodes) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned long long key = (unsigned long long)arg[i];
        if (key == 0ull) {  // no row: an empty segment
            out[i] = 0.0f;
            arg[i] = num_nodes;
            continue;
        }
        const unsigned int hi = (unsigned int)(key >> 32);
        const unsigned int bits = (hi & 0x80000000u) ? (hi & 0x7FFFFFFFu) : ~hi;
        out[i] = __uint_as_float(bits);
        arg[i] = (int64_t)(0xFFFFFFFFu - (unsigned int)(key & 0xFFFFFFFFull));
    }
}

template <int V>
__global__ void __launch_bounds__(SM_THREADS)
sm_kernel(const float* __restrict__ x, const int64_t* __restrict__ ptr, float* __restrict__ out,
          int64_t* __restrict__ arg, int64_t num_nodes, int64_t segments, int64_t features, int64_t splits) {
    typedef typename SmVec<V>::T T;
    __shared__ float sv[SM_TY][SM_TX * V];
    __shared__ int64_t sr[SM_TY][SM_TX * V];
    const int tx = threadIdx.x % SM_TX;
    const int ty = threadIdx.x / SM_TX;
    const int64_t fv = features / V;
    const int64_t vec = (int64_t)blockIdx.x * SM_TX + tx;
    const T* xv = reinterpret_cast<const T*>(x);
    // The segment loop is uniform per block, so every thread reaches the barriers.
    for (int64_t g = blockIdx.y; g < segments; g += gridDim.y) {
        const int64_t lo = ptr[g];
        const int64_t hi = ptr[g + 1];
        const int64_t chunk = (hi - lo + splits - 1) / splits;
        const int64_t r0 = lo + (int64_t)blockIdx.z * chunk;
        const int64_t r1 = r0 + chunk < hi ? r0 + chunk : hi;
        float best[V];
        int64_t row[V];
#pragma unroll
        for (int q = 0; q < V; ++q) {
            best[q] = 0.0f;
            row[q] = -1;  // no candidate yet
        }
        if (vec < fv) {
            int64_t r = r0 + ty;
            for (; r + SM_TY < r1; r += 2 * SM_TY) {  // two independent loads in flight
                const T a = xv[r * fv + vec];
                const T b = xv[(r + SM_TY) * fv + vec];
                float fa[V], fb[V];
                sm_get(a, fa);
                sm_get(b, fb);
                sm_scan<V>(fa, r, best, row);
                sm_scan<V>(fb, r + SM_TY, best, row);
            }
            if (r < r1) {
                float fa[V];
                sm_get(xv[r * fv + vec], fa);
                sm_scan<V>(fa, r, best, row);
            }
        }
#pragma unroll
        for (int q = 0; q < V; ++q) {
            sv[ty][tx * V + q] = best[q];
            sr[ty][tx * V + q] = row[q];
        }
        __syncthreads();
        if (ty == 0 && vec < fv) {
#pragma unroll
            for (int q = 0; q < V; ++q) {
                float b = sv[0][tx * V + q];
                int64_t br = sr[0][tx * V + q];
                for (int y = 1; y < SM_TY; ++y) {
                    const float v = sv[y][tx * V + q];
                    const int64_t r = sr[y][tx * V + q];
                    if (r >= 0 && (br < 0 || v > b || (v == b && r < br))) {
                        b = v;
                        br = r;
                    }
                }
                const int64_t o = g * features + vec * V + q;
                if (splits == 1) {
                    out[o] = br >= 0 ? b : 0.0f;
                    arg[o] = br >= 0 ? br : num_nodes;
                } else if (br >= 0) {
                    atomicMax(reinterpret_cast<unsigned long long*>(arg + o), sm_key(b, br));
                }
            }
        }
        __syncthreads();  // the shared candidates are reused for the next segment
    }
}

template <int V>
static void sm_launch(const float* x, const int64_t* ptr, float* out, int64_t* arg, int64_t num_nodes,
                      int64_t segments, int64_t features, hipStream_t stream) {
    const int64_t fv = features / V;
    const int64_t tiles = (fv + SM_TX - 1) / SM_TX;
    const int64_t grid_y = segments < 65535 ? segments : 65535;
    int64_t splits = (SM_TARGET_BLOCKS + tiles * grid_y - 1) / (tiles * grid_y);
    int64_t by_len = (num_nodes / segments) / SM_MIN_ROWS_PER_SPLIT;
    if (by_len < 1) by_len = 1;
    if (splits > by_len) splits = by_len;
    if (splits > SM_MAX_SPLITS) splits = SM_MAX_SPLITS;
    if (splits < 1) splits = 1;
    const int64_t n = segments * features;
    int64_t eb = (n + 255) / 256;
    if (eb > 4096) eb = 4096;
    if (splits > 1)
        hipLaunchKernelGGL(sm_zero_kernel, dim3((unsigned int)eb), dim3(256), 0, stream, arg, n);
    hipLaunchKernelGGL(sm_kernel<V>, dim3((unsigned int)tiles, (unsigned int)grid_y, (unsigned int)splits),
                       dim3(SM_THREADS), 0, stream, x, ptr, out, arg, num_nodes, segments, features, splits);
    if (splits > 1)
        hipLaunchKernelGGL(sm_decode_kernel, dim3((unsigned int)eb), dim3(256), 0, stream, out, arg, n, num_nodes);
}

extern "C" int segment_max_argmax_csr(const float* x, const int64_t* ptr, float* out, int64_t* arg,
                                      int64_t num_nodes, int64_t segments, int64_t features, hipStream_t stream) {
    if (segments <= 0 || features <= 0) return (int)hipSuccess;
    if (num_nodes >= 0xFFFFFFFFLL) return (int)hipErrorInvalidValue;  // rows must fit the 32-bit key field
    const uintptr_t a = reinterpret_cast<uintptr_t>(x);
    if (features % 4 == 0 && a % 16 == 0)
        sm_launch<4>(x, ptr, out, arg, num_nodes, segments, features, stream);
    else
        sm_launch<1>(x, ptr, out, arg, num_nodes, segments, features, stream);
    return (int)hipGetLastError();
}

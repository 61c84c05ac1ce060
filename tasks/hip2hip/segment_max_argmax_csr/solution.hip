// Segmented max and first argmax over CSR row segments, fp32: a general, portable solution.
//
// Two kernels, chosen by the average segment length L = num_nodes / segments:
//
// * Short segments (L <= 32: molecules, many tiny graphs): sm_short_kernel, no shared
//   memory, no barrier. An item is (segment, feature vector): a float4 of 4 features when
//   features % 4 == 0 and x, out and arg are 16-byte aligned, else one feature. RY
//   consecutive lanes (a power of two <= 8, the smallest with L <= 16 * RY) share an item;
//   lane ry walks rows lo + ry, lo + ry + RY, ... in increasing order, eight rows per step.
//   The step's eight loads are all issued before any is used: a row past the segment's end
//   loads its last row instead (no predicates, which let the compiler interleave the loads
//   with the compares), the step's maximum is a tree of fmaxf, and only where it beats the
//   best so far is its first row looked for. The RY candidates are merged through warp
//   shuffles (larger value, then smaller row) and the item's first lane stores out and arg
//   (one float4 and two 16-byte stores when vectorised). Consecutive items are consecutive
//   feature vectors of a segment, so each row's loads are coalesced across the lanes. (The
//   2-D block below spent most of its time on the shared-memory merge, two barriers and
//   idle row lanes for segments of ~8 to ~25 rows.)
// * Longer segments (point clouds): a block is a 2-D tile: 32 lanes along the features
//   (float4 vectors when features % 4 == 0 and x is 16-byte aligned, else scalars) times
//   8 lanes along the rows; each row lane walks every 8th row of its range in increasing
//   order with two loads in flight, keeping (value, first row) with strict comparisons;
//   the 8 candidates are merged in shared memory (larger value, then smaller row).
//   The grid is (feature tiles, segments, splits): long segments (few point clouds) are
//   cut into `splits` row ranges so that about a thousand blocks work. With one split the
//   block writes out and arg directly. With several, each block folds its candidate into
//   a 64-bit key (order-preserving float bits << 32 | ~row) with atomicMax into arg itself
//   (zeroed first), and a last kernel decodes the keys into out and arg: no scratch memory.
// An empty segment (not produced by this task) gives out 0 and arg num_nodes.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

#define SM_TX 32
#define SM_TY 8
#define SM_THREADS (SM_TX * SM_TY)
#define SM_TARGET_BLOCKS 1024
#define SM_MAX_SPLITS 64
#define SM_MIN_ROWS_PER_SPLIT 64
#define SM_SHORT_MAX_LEN 32   // average segment length up to this: sm_short_kernel
#define SM_SHORT_MAX_RY 8     // row lanes per item, at most
#define SM_SHORT_UNROLL 8     // rows per lane per step
#define SM_SHORT_ROWS_PER_LANE 16 // RY: the smallest with L <= 16 * RY (at most SM_SHORT_MAX_RY)

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

// Stores of one item's V results. V = 4 (out and arg 16-byte aligned): lane `half` 0
// stores the float4 of out and arg[0..1], lane `half` 1 arg[2..3] (with RY = 1 one lane
// does both), so that a warp's arg stores are contiguous.
template <int V>
static __device__ __forceinline__ void sm_store(float* o, int64_t* a, const float* v, const int64_t* r, int half,
                                                bool both);
template <>
__device__ __forceinline__ void sm_store<4>(float* o, int64_t* a, const float* v, const int64_t* r, int half,
                                            bool both) {
    if (half == 0) {
        *reinterpret_cast<float4*>(o) = make_float4(v[0], v[1], v[2], v[3]);
        *reinterpret_cast<longlong2*>(a) = make_longlong2((long long)r[0], (long long)r[1]);
    }
    if (half == 1 || both) *reinterpret_cast<longlong2*>(a + 2) = make_longlong2((long long)r[2], (long long)r[3]);
}
template <>
__device__ __forceinline__ void sm_store<1>(float* o, int64_t* a, const float* v, const int64_t* r, int half,
                                            bool both) {
    if (half == 0) {
        o[0] = v[0];
        a[0] = r[0];
    }
}

// One item (segment g, feature vector vec) per RY = 1 << ry_shift consecutive lanes.
// Rows and items fit an int (num_nodes < 2**30, segments * features < 2**31, checked on the host).
template <int V>
__global__ void __launch_bounds__(SM_THREADS)
sm_short_kernel(const float* __restrict__ x, const int64_t* __restrict__ ptr, float* __restrict__ out,
                int64_t* __restrict__ arg, int64_t num_nodes, int64_t segments, int64_t features, int ry_shift) {
    typedef typename SmVec<V>::T T;
    const int RY = 1 << ry_shift;
    const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t item = tid >> ry_shift;
    const int ry = (int)(tid & (RY - 1));
    const int64_t fv = features / V;
    const int64_t items = segments * fv;
    int64_t g = 0;
    int64_t vec = 0;
    int lo = 0;
    int hi = 0;  // lanes past the last item walk no rows but take part in the shuffles
    if (item < items) {  // items < 2**31 (checked on the host): 32-bit division
        g = (int64_t)((unsigned int)item / (unsigned int)fv);
        vec = item - g * fv;
        lo = (int)ptr[g];
        hi = (int)ptr[g + 1];
    }
    float best[V];
    int row[V];
#pragma unroll
    for (int q = 0; q < V; ++q) {
        best[q] = 0.0f;
        row[q] = -1;  // no candidate yet
    }
    const T* xv = reinterpret_cast<const T*>(x) + vec;
    for (int r = lo + ry; r < hi; r += SM_SHORT_UNROLL * RY) {
        // Every load of the step is issued before any compare: a row past the segment's end
        // reads its last row instead (a value the segment has, recorded as that row: a lane's
        // rows stay in increasing order and the merged candidate is the same), with no
        // predicate to keep the loads apart.
        T a[SM_SHORT_UNROLL];
#pragma unroll
        for (int k = 0; k < SM_SHORT_UNROLL; ++k) {
            const int rr = min(r + k * RY, hi - 1);
            a[k] = xv[(int64_t)rr * fv];
        }
        float f[SM_SHORT_UNROLL][V];
#pragma unroll
        for (int k = 0; k < SM_SHORT_UNROLL; ++k) sm_get(a[k], f[k]);
#pragma unroll
        for (int q = 0; q < V; ++q) {
            // The step's maximum as a tree (all its loads before any use), then, where it beats
            // the best so far (strictly: an earlier row keeps a tie), its first row in the step.
            float t[SM_SHORT_UNROLL];
#pragma unroll
            for (int k = 0; k < SM_SHORT_UNROLL; ++k) t[k] = f[k][q];
#pragma unroll
            for (int w = SM_SHORT_UNROLL / 2; w > 0; w /= 2) {
#pragma unroll
                for (int k = 0; k < w; ++k) t[k] = fmaxf(t[k], t[k + w]);
            }
            if (row[q] < 0 || t[0] > best[q]) {
                int k0 = SM_SHORT_UNROLL - 1;
#pragma unroll
                for (int k = SM_SHORT_UNROLL - 2; k >= 0; --k)
                    if (f[k][q] == t[0]) k0 = k;
                best[q] = t[0];
                row[q] = min(r + k0 * RY, hi - 1);
            }
        }
    }
    // Merge the RY candidates of the item (lanes with no row lose; equal values: smaller row).
    // Symmetric, so both lanes of every butterfly pair end with the same candidate.
    for (int o = 1; o < RY; o <<= 1) {
#pragma unroll
        for (int q = 0; q < V; ++q) {
            const float ov = __shfl_xor(best[q], o);
            const int orow = __shfl_xor(row[q], o);
            if (orow >= 0 && (row[q] < 0 || ov > best[q] || (ov == best[q] && orow < row[q]))) {
                best[q] = ov;
                row[q] = orow;
            }
        }
    }
    // Every lane of the item now holds the merged candidate; lane 1 also takes lane 0's
    // rows of the second half (a copy, in case the lanes differ on NaN inputs).
    int row2[V];
#pragma unroll
    for (int q = 0; q < V; ++q) row2[q] = RY > 1 ? __shfl_xor(row[q], 1) : row[q];
    if (item < items && ry < 2) {
        float v[V];
        int64_t rr[V];
#pragma unroll
        for (int q = 0; q < V; ++q) {
            const int rq = (ry == 1 && 2 * q >= V) ? row2[q] : row[q];
            v[q] = rq >= 0 ? best[q] : 0.0f;
            rr[q] = rq >= 0 ? (int64_t)rq : num_nodes;
        }
        const int64_t o = g * features + vec * V;
        sm_store<V>(out + o, arg + o, v, rr, ry, RY == 1);
    }
}

template <int V>
static void sm_short_launch(const float* x, const int64_t* ptr, float* out, int64_t* arg, int64_t num_nodes,
                            int64_t segments, int64_t features, hipStream_t stream) {
    const int64_t fv = features / V;
    int ry_shift = 0;  // the smallest RY <= SM_SHORT_MAX_RY with L <= SM_SHORT_ROWS_PER_LANE * RY
    while ((1 << ry_shift) < SM_SHORT_MAX_RY &&
           num_nodes > (int64_t)SM_SHORT_ROWS_PER_LANE * (1 << ry_shift) * segments)
        ++ry_shift;
    const int64_t threads = segments * fv << ry_shift;
    const int64_t blocks = (threads + SM_THREADS - 1) / SM_THREADS;
    hipLaunchKernelGGL(sm_short_kernel<V>, dim3((unsigned int)blocks), dim3(SM_THREADS), 0, stream, x, ptr, out, arg,
                       num_nodes, segments, features, ry_shift);
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
    if (num_nodes <= (int64_t)SM_SHORT_MAX_LEN * segments && num_nodes < 0x3FFFFFFFLL &&
        segments * features < 0x7FFFFFFFLL) {
        const bool vec4 = features % 4 == 0 && a % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0 &&
                          reinterpret_cast<uintptr_t>(arg) % 16 == 0;
        if (vec4)
            sm_short_launch<4>(x, ptr, out, arg, num_nodes, segments, features, stream);
        else
            sm_short_launch<1>(x, ptr, out, arg, num_nodes, segments, features, stream);
        return (int)hipGetLastError();
    }
    if (features % 4 == 0 && a % 16 == 0)
        sm_launch<4>(x, ptr, out, arg, num_nodes, segments, features, stream);
    else
        sm_launch<1>(x, ptr, out, arg, num_nodes, segments, features, stream);
    return (int)hipGetLastError();
}

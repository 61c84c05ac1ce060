// Segmented max and first argmax over CSR row segments, fp32: the starting kernel.
//
// One thread per output (segment g, feature f): it walks the segment's rows in order,
// keeping the largest value and the first row where it occurs. Neighbouring threads read
// neighbouring features, so the loads are coalesced. Correct for every shape, but the
// loads are scalar, each thread's walk is one long chain over the segment (with few,
// long segments only segments * features threads work), and there is no parallelism
// along the rows.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void segment_max_thread_per_output_kernel(const float* __restrict__ x, const int64_t* __restrict__ ptr,
                                                     float* __restrict__ out, int64_t* __restrict__ arg,
                                                     int64_t num_nodes, int64_t segments, int64_t features) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= segments * features) return;
    const int64_t g = idx / features;
    const int64_t f = idx % features;
    const int64_t lo = ptr[g];
    const int64_t hi = ptr[g + 1];
    if (lo >= hi) {  // empty segment (torch_scatter's convention)
        out[idx] = 0.0f;
        arg[idx] = num_nodes;
        return;
    }
    float best = x[lo * features + f];
    int64_t best_row = lo;
    for (int64_t r = lo + 1; r < hi; ++r) {
        const float v = x[r * features + f];
        if (v > best) {  // strictly larger: the first row of the maximum is kept
            best = v;
            best_row = r;
        }
    }
    out[idx] = best;
    arg[idx] = best_row;
}

extern "C" int segment_max_argmax_csr(const float* x, const int64_t* ptr, float* out, int64_t* arg,
                                      int64_t num_nodes, int64_t segments, int64_t features, hipStream_t stream) {
    const int64_t n = segments * features;
    if (n <= 0) return (int)hipSuccess;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    hipLaunchKernelGGL(segment_max_thread_per_output_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x,
                       ptr, out, arg, num_nodes, segments, features);
    return (int)hipGetLastError();
}

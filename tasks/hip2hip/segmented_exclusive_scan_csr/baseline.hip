// Segmented exclusive prefix sum over CSR segments (int32): the starting kernel.
//
// One thread per segment scans its segment sequentially with a running sum. Correct for
// every shape, but neighbouring threads read and write addresses a whole segment apart
// (uncoalesced), accesses are scalar, and the time is bounded by the longest segment
// (one thread does all of its work), so long or unbalanced segments leave the GPU idle.

#include <hip/hip_runtime.h>
#include <stdint.h>

__global__ void segscan_thread_per_segment_kernel(const int32_t* __restrict__ x, const int64_t* __restrict__ ptr,
                                                  int32_t* __restrict__ out, int64_t segments) {
    const int64_t s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= segments) return;
    const int64_t begin = ptr[s], end = ptr[s + 1];
    int32_t run = 0;
    for (int64_t i = begin; i < end; ++i) {
        const int32_t v = x[i];
        out[i] = run;
        run += v;
    }
}

extern "C" int segmented_exclusive_scan_csr(const int32_t* x, const int64_t* ptr, int32_t* out, int64_t n,
                                            int64_t segments, hipStream_t stream) {
    if (n <= 0 || segments <= 0) return (int)hipSuccess;
    const int threads = 128;
    const int64_t blocks = (segments + threads - 1) / threads;
    hipLaunchKernelGGL(segscan_thread_per_segment_kernel, dim3((unsigned int)blocks), dim3(threads), 0, stream, x, ptr,
                       out, segments);
    return (int)hipGetLastError();
}

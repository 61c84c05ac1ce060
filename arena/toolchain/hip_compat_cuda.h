// kernel-arena: HIP constructs that have no entry in the HIP->CUDA rename table.
// arena/toolchain/hip2cuda.py inlines this text after the translated file's last #include:
// the macros below (__shfl_down, ...) must not be seen by the CUDA headers themselves.
#ifndef KERNEL_ARENA_HIP_COMPAT_CUDA_H
#define KERNEL_ARENA_HIP_COMPAT_CUDA_H

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// ---- kernel launch -------------------------------------------------------------------
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
    kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)
// hipExtLaunchKernelGGL: events (may be null) are recorded around the launch; flags ignored.
#define hipExtLaunchKernelGGL(kernel, grid, block, shmem, stream, start_event, stop_event, \
                              flags, ...)                                                 \
    do {                                                                                  \
        cudaStream_t kernel_arena_stream_ = (stream);                                     \
        cudaEvent_t kernel_arena_start_ = (start_event);                                  \
        cudaEvent_t kernel_arena_stop_ = (stop_event);                                    \
        (void)(flags);                                                                    \
        if (kernel_arena_start_) cudaEventRecord(kernel_arena_start_, kernel_arena_stream_); \
        kernel<<<(grid), (block), (shmem), kernel_arena_stream_>>>(__VA_ARGS__);          \
        if (kernel_arena_stop_) cudaEventRecord(kernel_arena_stop_, kernel_arena_stream_); \
    } while (0)

// ---- memory and symbols --------------------------------------------------------------
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE
#define HIP_SYMBOL(sym) sym

// hipHostMalloc(ptr, size) with the default flags: hipHostMalloc is renamed cudaHostAlloc,
// which in CUDA always takes the flags argument.
static inline __host__ cudaError_t cudaHostAlloc(void** ptr, size_t size) {
    return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}
template <class T>
static inline __host__ cudaError_t cudaHostAlloc(T** ptr, size_t size) {
    return cudaHostAlloc(reinterpret_cast<void**>(ptr), size, cudaHostAllocDefault);
}

// ---- warp-level functions without a mask (HIP) -> the *_sync forms on the full warp -----
template <typename T>
__device__ __forceinline__ T kernel_arena_hip_shfl(T var, int src_lane, int width = warpSize) {
    return __shfl_sync(0xffffffffu, var, src_lane, width);
}
template <typename T>
__device__ __forceinline__ T kernel_arena_hip_shfl_up(T var, unsigned int delta,
                                                      int width = warpSize) {
    return __shfl_up_sync(0xffffffffu, var, delta, width);
}
template <typename T>
__device__ __forceinline__ T kernel_arena_hip_shfl_down(T var, unsigned int delta,
                                                        int width = warpSize) {
    return __shfl_down_sync(0xffffffffu, var, delta, width);
}
template <typename T>
__device__ __forceinline__ T kernel_arena_hip_shfl_xor(T var, int lane_mask,
                                                       int width = warpSize) {
    return __shfl_xor_sync(0xffffffffu, var, lane_mask, width);
}
// HIP's __ballot returns a 64-bit mask; on NVIDIA its upper 32 bits are zero.
__device__ __forceinline__ unsigned long long kernel_arena_hip_ballot(int predicate) {
    return static_cast<unsigned long long>(__ballot_sync(0xffffffffu, predicate));
}
__device__ __forceinline__ int kernel_arena_hip_any(int predicate) {
    return __any_sync(0xffffffffu, predicate);
}
__device__ __forceinline__ int kernel_arena_hip_all(int predicate) {
    return __all_sync(0xffffffffu, predicate);
}
__device__ __forceinline__ unsigned int kernel_arena_hip_lane_id() {
    unsigned int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}
__device__ __forceinline__ unsigned long long kernel_arena_hip_lanemask_lt() {
    unsigned int mask;
    asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
    return mask;
}
__device__ __forceinline__ unsigned long long kernel_arena_hip_lanemask_gt() {
    unsigned int mask;
    asm volatile("mov.u32 %0, %%lanemask_gt;" : "=r"(mask));
    return mask;
}
__device__ __forceinline__ unsigned long long kernel_arena_hip_lanemask_eq() {
    unsigned int mask;
    asm volatile("mov.u32 %0, %%lanemask_eq;" : "=r"(mask));
    return mask;
}
#define __shfl kernel_arena_hip_shfl
#define __shfl_up kernel_arena_hip_shfl_up
#define __shfl_down kernel_arena_hip_shfl_down
#define __shfl_xor kernel_arena_hip_shfl_xor
#define __ballot kernel_arena_hip_ballot
#define __any kernel_arena_hip_any
#define __all kernel_arena_hip_all
#define __lane_id kernel_arena_hip_lane_id
#define __lanemask_lt kernel_arena_hip_lanemask_lt
#define __lanemask_gt kernel_arena_hip_lanemask_gt
#define __lanemask_eq kernel_arena_hip_lanemask_eq

// ---- atomics -------------------------------------------------------------------------
#define unsafeAtomicAdd atomicAdd
#define safeAtomicAdd atomicAdd
#define atomicAddNoRet(address, value) ((void)atomicAdd((address), (value)))

// ---- types ---------------------------------------------------------------------------
// hip/hip_bfloat16.h's class: construction from float and conversion to float carry over.
typedef __nv_bfloat16 hip_bfloat16;

#endif  // KERNEL_ARENA_HIP_COMPAT_CUDA_H

"""Building candidate kernels: HIP -> CUDA translation and compilation to shared libraries."""

// Transposed convolution 2x2, stride 2, NCHW fp16, fp32 accumulation: the starting kernel.
//
// One thread per output element y[n, co, oy, ox], threads of a block along ox (so the
// stores are coalesced): the element reads input pixel (oy / 2, ox / 2) of every input
// channel and weight tap (oy % 2, ox % 2) of (ci, co), with a loop over c_in. Correct for
// every shape, but each input value is fetched again for each of the 4 c_out outputs
// that use it, and each weight for every output pixel: two scalar 2-byte loads per
// multiply-add, no tiling and no register reuse.

#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>

__global__ void conv_t2x2_naive_kernel(const __half* __restrict__ x, const __half* __restrict__ weight,
                                       const __half* __restrict__ bias, __half* __restrict__ y, int64_t c_in,
                                       int64_t c_out, int64_t height, int64_t width) {
    const int64_t ow = 2 * width;
    const int64_t ox = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (ox >= ow) return;
    const int64_t oy = blockIdx.y;
    const int64_t nco = blockIdx.z;  // n * c_out + co
    const int64_t n = nco / c_out;
    const int64_t co = nco % c_out;
    const int64_t tap = (oy % 2) * 2 + (ox % 2);
    const __half* xp = x + n * c_in * height * width + (oy / 2) * width + (ox / 2);
    const __half* wp = weight + co * 4 + tap;
    const int64_t hw = height * width;
    float acc = __half2float(bias[co]);
    for (int64_t ci = 0; ci < c_in; ++ci) acc += __half2float(xp[ci * hw]) * __half2float(wp[ci * c_out * 4]);
    y[(nco * 2 * height + oy) * ow + ox] = __float2half_rn(acc);
}

extern "C" int conv_transpose2d_2x2_s2(const __half* x, const __half* weight, const __half* bias, __half* y,
                                       int64_t batch, int64_t c_in, int64_t c_out, int64_t height, int64_t width,
                                       hipStream_t stream) {
    if (batch <= 0 || c_out <= 0 || height <= 0 || width <= 0) return (int)hipSuccess;
    if (2 * height > 65535 || batch * c_out > 65535) return (int)hipErrorInvalidValue;
    const int threads = 128;
    const dim3 grid((unsigned int)((2 * width + threads - 1) / threads), (unsigned int)(2 * height),
                    (unsigned int)(batch * c_out));
    hipLaunchKernelGGL(conv_t2x2_naive_kernel, grid, dim3(threads), 0, stream, x, weight, bias, y, c_in, c_out, height,
                       width);
    return (int)hipGetLastError();
}

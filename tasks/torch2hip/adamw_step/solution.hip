// Reference solution: one fused AdamW step. Each parameter's four inputs are read once and
// its three outputs written once (28 bytes), against ~84 bytes for the eight kernels of the
// eager single-tensor AdamW. The scalar factors (weight-decay factor, bias corrections, step
// size) are computed once on the host in double precision.
//
// - 16-byte accesses (float4) over the largest multiple-of-4 prefix when every pointer is
//   16-byte aligned, the last n % 4 elements one by one; all scalar otherwise.
// - Grid-stride loop over a capped grid, so any n works.
// - fp32 arithmetic in the order of the eager reference: the first moment as lerp
//   (m + (1 - beta1) * (g - m)), the second as beta2 * v + (1 - beta2) * g * g, the
//   denominator sqrt(v) / sqrt(bias_correction2) + eps, then the update.

#include <hip/hip_runtime.h>
#include <stdint.h>
#include <math.h>

namespace {

constexpr int kBlock = 256;
constexpr int64_t kMaxBlocks = 16384;

struct AdamScalars {
    float decay;          // 1 - lr * weight_decay
    float one_minus_b1;   // 1 - beta1
    float beta2;
    float one_minus_b2;   // 1 - beta2
    float inv_bc2_sqrt;   // 1 / sqrt(1 - beta2^step)
    float eps;
    float step_size;      // lr / (1 - beta1^step)
};

__device__ __forceinline__ void adamw_one(float p, float g, float m, float v, const AdamScalars& s,
                                          float& p_out, float& m_out, float& v_out) {
    m = m + s.one_minus_b1 * (g - m);
    v = s.beta2 * v + s.one_minus_b2 * g * g;
    const float denom = sqrtf(v) * s.inv_bc2_sqrt + s.eps;
    p_out = p * s.decay - s.step_size * (m / denom);
    m_out = m;
    v_out = v;
}

__global__ void __launch_bounds__(kBlock)
adamw_vec4(const float4* __restrict__ param, const float4* __restrict__ grad, const float4* __restrict__ exp_avg,
           const float4* __restrict__ exp_avg_sq, float4* __restrict__ param_out, float4* __restrict__ exp_avg_out,
           float4* __restrict__ exp_avg_sq_out, int64_t nvec, AdamScalars s) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlock;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < nvec; i += stride) {
        const float4 p = param[i], g = grad[i], m = exp_avg[i], v = exp_avg_sq[i];
        float4 po, mo, vo;
        adamw_one(p.x, g.x, m.x, v.x, s, po.x, mo.x, vo.x);
        adamw_one(p.y, g.y, m.y, v.y, s, po.y, mo.y, vo.y);
        adamw_one(p.z, g.z, m.z, v.z, s, po.z, mo.z, vo.z);
        adamw_one(p.w, g.w, m.w, v.w, s, po.w, mo.w, vo.w);
        param_out[i] = po;
        exp_avg_out[i] = mo;
        exp_avg_sq_out[i] = vo;
    }
}

// Elements [begin, n) one by one (the tail after the vectors, or everything).
__global__ void __launch_bounds__(kBlock)
adamw_scalar(const float* __restrict__ param, const float* __restrict__ grad, const float* __restrict__ exp_avg,
             const float* __restrict__ exp_avg_sq, float* __restrict__ param_out, float* __restrict__ exp_avg_out,
             float* __restrict__ exp_avg_sq_out, int64_t begin, int64_t n, AdamScalars s) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlock;
    for (int64_t i = begin + static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < n; i += stride) {
        adamw_one(param[i], grad[i], exp_avg[i], exp_avg_sq[i], s, param_out[i], exp_avg_out[i], exp_avg_sq_out[i]);
    }
}

unsigned grid_for(int64_t items) {
    int64_t blocks = (items + kBlock - 1) / kBlock;
    if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

}  // namespace

extern "C" int adamw_step(const float* param, const float* grad, const float* exp_avg, const float* exp_avg_sq,
                          float* param_out, float* exp_avg_out, float* exp_avg_sq_out, int64_t n, float lr,
                          float beta1, float beta2, float eps, float weight_decay, int64_t step,
                          hipStream_t stream) {
    if (n <= 0) return static_cast<int>(hipSuccess);
    const double bc1 = 1.0 - pow(static_cast<double>(beta1), static_cast<double>(step));
    const double bc2 = 1.0 - pow(static_cast<double>(beta2), static_cast<double>(step));
    AdamScalars s;
    s.decay = static_cast<float>(1.0 - static_cast<double>(lr) * static_cast<double>(weight_decay));
    s.one_minus_b1 = static_cast<float>(1.0 - static_cast<double>(beta1));
    s.beta2 = beta2;
    s.one_minus_b2 = static_cast<float>(1.0 - static_cast<double>(beta2));
    s.inv_bc2_sqrt = static_cast<float>(1.0 / sqrt(bc2));
    s.eps = eps;
    s.step_size = static_cast<float>(static_cast<double>(lr) / bc1);

    const uintptr_t addr = reinterpret_cast<uintptr_t>(param) | reinterpret_cast<uintptr_t>(grad) |
                           reinterpret_cast<uintptr_t>(exp_avg) | reinterpret_cast<uintptr_t>(exp_avg_sq) |
                           reinterpret_cast<uintptr_t>(param_out) | reinterpret_cast<uintptr_t>(exp_avg_out) |
                           reinterpret_cast<uintptr_t>(exp_avg_sq_out);
    int64_t done = 0;
    if (addr % 16 == 0 && n >= 4) {
        const int64_t nvec = n / 4;
        hipLaunchKernelGGL(adamw_vec4, dim3(grid_for(nvec)), dim3(kBlock), 0, stream,
                           reinterpret_cast<const float4*>(param), reinterpret_cast<const float4*>(grad),
                           reinterpret_cast<const float4*>(exp_avg), reinterpret_cast<const float4*>(exp_avg_sq),
                           reinterpret_cast<float4*>(param_out), reinterpret_cast<float4*>(exp_avg_out),
                           reinterpret_cast<float4*>(exp_avg_sq_out), nvec, s);
        done = nvec * 4;
    }
    if (done < n) {
        hipLaunchKernelGGL(adamw_scalar, dim3(grid_for(n - done)), dim3(kBlock), 0, stream, param, grad, exp_avg,
                           exp_avg_sq, param_out, exp_avg_out, exp_avg_sq_out, done, n, s);
    }
    return static_cast<int>(hipGetLastError());
}

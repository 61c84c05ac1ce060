"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's kernel with one assumption baked in: k is a multiple of BLOCK_K (true for
every seen shape). The k loop runs k // BLOCK_K full steps with unmasked loads, so when
k % BLOCK_K != 0 the last k % BLOCK_K products of every dot product are silently dropped.
Every access stays inside the buffers; the failure is a wrong value, never a fault.
"""

import torch
import triton
import triton.language as tl

SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
LARGE_NVIDIA = (128, 256, 64, 8, 8, 3)
LARGE_AMD = (128, 128, 64, 8, 8, 2)
SKINNY = (32, 64, 128, 1, 4, 3)


@triton.jit
def _gelu_tanh(z):
    u = SQRT_2_OVER_PI * (z + 0.044715 * z * z * z)
    return z * tl.sigmoid(2.0 * u)


@triton.jit
def _matmul_bias_gelu_even_k(x_ptr, w_ptr, b_ptr, y_ptr, m, n, k,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(m, BLOCK_M)
    tiles_n = tl.cdiv(n, BLOCK_N)
    band = pid // (GROUP_M * tiles_n)
    first_m = band * GROUP_M
    band_height = tl.minimum(tiles_m - first_m, GROUP_M)
    within = pid - band * (GROUP_M * tiles_n)
    pid_m = first_m + within % band_height
    pid_n = within // band_height

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm_in = tl.minimum(rm, m - 1).to(tl.int64)
    rn_in = tl.minimum(rn, n - 1).to(tl.int64)
    x_ptrs = x_ptr + rm_in[:, None] * k + rk[None, :]
    w_ptrs = w_ptr + rn_in[None, :] * k + rk[:, None]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for _ in range(0, k // BLOCK_K):          # assumes k % BLOCK_K == 0
        acc = tl.dot(tl.load(x_ptrs), tl.load(w_ptrs), acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    bias = tl.load(b_ptr + rn_in).to(tl.float32)
    out = _gelu_tanh(acc + bias[None, :])
    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, out.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def matmul_bias_gelu(x, w, b, y, m, n, k):
    if m <= 64:
        cfg = SKINNY
    else:
        cfg = LARGE_AMD if torch.version.hip else LARGE_NVIDIA
    block_m, block_n, block_k, group_m, num_warps, num_stages = cfg
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    _matmul_bias_gelu_even_k[grid](x, w, b, y, m, n, k,
                                   BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                   GROUP_M=group_m, num_warps=num_warps, num_stages=num_stages)
    return None

"""Starting kernel for y = gelu_tanh(x @ w^T + b): correct for every shape, deliberately simple.

One program per 32 x 32 tile of y, launched in row-major tile order, stepping through k
32 at a time with tl.dot (fp32 accumulator); every load is masked. Bias and GELU are
applied to the accumulator before the single fp16 store. Small tiles, 4 warps, 2 stages.
"""

import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32

SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)


@triton.jit
def _gelu_tanh(z):
    # 0.5 * (1 + tanh(u)) == sigmoid(2 * u)
    u = SQRT_2_OVER_PI * (z + 0.044715 * z * z * z)
    return z * tl.sigmoid(2.0 * u)


@triton.jit
def _matmul_bias_gelu_tile(x_ptr, w_ptr, b_ptr, y_ptr, m, n, k,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)      # rows of x and y
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)      # rows of w, columns of y
    rk = tl.arange(0, BLOCK_K)
    # x tile [BLOCK_M, BLOCK_K] at x[rm, kk]; w^T tile [BLOCK_K, BLOCK_N] at w[rn, kk].
    x_ptrs = x_ptr + rm.to(tl.int64)[:, None] * k + rk[None, :]
    w_ptrs = w_ptr + rn.to(tl.int64)[None, :] * k + rk[:, None]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = (k0 + rk) < k
        a = tl.load(x_ptrs, mask=(rm[:, None] < m) & k_ok[None, :], other=0.0)
        bt = tl.load(w_ptrs, mask=k_ok[:, None] & (rn[None, :] < n), other=0.0)
        acc = tl.dot(a, bt, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    bias = tl.load(b_ptr + rn, mask=rn < n, other=0.0).to(tl.float32)
    out = _gelu_tanh(acc + bias[None, :])
    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, out.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def matmul_bias_gelu(x, w, b, y, m, n, k):
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _matmul_bias_gelu_tile[grid](x, w, b, y, m, n, k,
                                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                 num_warps=4, num_stages=2)
    return None

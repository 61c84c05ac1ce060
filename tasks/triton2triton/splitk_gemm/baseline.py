"""Starting kernel for y = x @ w^T (skinny GEMM): correct for every shape, deliberately simple.

A plain tiled GEMM: one program per 64 x 64 tile of y, launched in row-major tile order,
stepping through the whole of k 32 at a time with tl.dot (fp32 accumulator) and storing the
tile once. Every load is masked. 4 warps, 2 stages. With m <= 64 the output is a single row
of n / 64 tiles, so only n / 64 programs run (64 for n = 4096), each streaming a 64-row
stripe of w over the full length of k.
"""

import triton
import triton.language as tl

BLOCK_M = 64
BLOCK_N = 64
BLOCK_K = 32


@triton.jit
def _gemm_tile(x_ptr, w_ptr, y_ptr, m, n, k,
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

    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def splitk_gemm(x, w, y, m, n, k):
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _gemm_tile[grid](x, w, y, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                     num_warps=4, num_stages=2)
    return None

"""Starting kernel for c = a @ b (fp16, fp32 accumulation): correct for every shape,
deliberately simple.

One program per 32 x 32 tile of c, launched in row-major tile order (no grouping for L2
reuse), stepping through k 16 at a time with tl.dot into an fp32 accumulator; every load is
masked. 2 warps, a single stage (no software pipelining: each k step waits for its loads).
"""

import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 16


@triton.jit
def _matmul_tile(a_ptr, b_ptr, c_ptr, m, n, k,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)      # rows of a and c
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)      # columns of b and c
    rk = tl.arange(0, BLOCK_K)
    # a tile [BLOCK_M, BLOCK_K] at a[rm, kk]; b tile [BLOCK_K, BLOCK_N] at b[kk, rn].
    a_ptrs = a_ptr + rm.to(tl.int64)[:, None] * k + rk[None, :]
    b_ptrs = b_ptr + rk.to(tl.int64)[:, None] * n + rn[None, :]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = (k0 + rk) < k
        a = tl.load(a_ptrs, mask=(rm[:, None] < m) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (rn[None, :] < n), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * n

    c_ptrs = c_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def matmul_fp16(a, b, c, m, n, k):
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _matmul_tile[grid](a, b, c, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                       num_warps=2, num_stages=1)
    return None

"""Starting kernel for c[i] = a[i] @ b[i]: correct for every shape, deliberately simple.

One program per (32 x 32 tile of c[i], i): grid axis 0 walks the tiles of one product in
row-major order, axis 1 the batch. Each program steps through k 32 at a time with tl.dot
(fp32 accumulator); every load is masked. Small tiles, 4 warps, 2 stages.
"""

import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32


@triton.jit
def _bmm_tile(a_ptr, b_ptr, c_ptr, m, n, k,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    bid = tl.program_id(1).to(tl.int64)
    tiles_n = tl.cdiv(n, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n

    a_ptr += bid * m * k
    b_ptr += bid * k * n
    c_ptr += bid * m * n

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * k + rk[None, :]             # [BLOCK_M, BLOCK_K]
    b_ptrs = b_ptr + rk[:, None] * n + rn[None, :]             # [BLOCK_K, BLOCK_N]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = (k0 + rk) < k
        a = tl.load(a_ptrs, mask=(rm[:, None] < m) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (rn[None, :] < n), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * n

    c_ptrs = c_ptr + rm[:, None] * n + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def batched_matmul(a, b, c, batch, m, n, k):
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N), batch)
    _bmm_tile[grid](a, b, c, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                    num_warps=4, num_stages=2)
    return None

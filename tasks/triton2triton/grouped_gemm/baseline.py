"""Starting kernel for the grouped (per-expert) GEMM: correct for every shape, deliberately
simple.

One launch per expert, each a plain tiled GEMM of that expert's rows of x by w[e]: one
program per 64 x 64 tile of y, stepping through k 32 at a time with tl.dot (fp32
accumulator), every load masked, 4 warps, 2 stages. The row counts live on the device, and
reading them on the host would cost a synchronisation per call, so every launch is sized
for the worst case (all `rows` rows belong to the expert): each program reads its expert's
[start, end) from expert_offsets and returns at once when its tile starts past the end.
"""

import triton
import triton.language as tl

BLOCK_M = 64
BLOCK_N = 64
BLOCK_K = 32


@triton.jit
def _expert_gemm(x_ptr, we_ptr, off_ptr, y_ptr, n, k,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    start = tl.load(off_ptr)                           # off_ptr = &expert_offsets[e]
    end = tl.load(off_ptr + 1)
    row0 = start + pid_m * BLOCK_M
    if row0 >= end:
        return

    rm = row0 + tl.arange(0, BLOCK_M)                  # rows of x and y
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)       # columns of w[e] and y
    rk = tl.arange(0, BLOCK_K)
    m_ok = rm < end
    x_ptrs = x_ptr + rm.to(tl.int64)[:, None] * k + rk[None, :]                    # [BLOCK_M, BLOCK_K]
    w_ptrs = we_ptr + rk[:, None] * n + rn[None, :]     # [BLOCK_K, BLOCK_N] of w[e]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = (k0 + rk) < k
        a = tl.load(x_ptrs, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=k_ok[:, None] & (rn[None, :] < n), other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * n

    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & (rn[None, :] < n))


def grouped_gemm(x, w, expert_offsets, y, rows, experts, k, n):
    grid = (triton.cdiv(rows, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    for e in range(experts):
        _expert_gemm[grid](x, w[e], expert_offsets[e:], y, n, k,
                           BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                           num_warps=4, num_stages=2)
    return None

"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's kernel with one assumption baked in: k is a multiple of BLOCK_K = 256 (true
for every seen shape: 4096, 28672). The k loop runs k // BLOCK_K full steps with unmasked
loads, so when k % 256 != 0 the last k % 256 products of every dot product are silently
dropped. Every access stays inside the buffers (rows are clamped, the loop never passes
k); the failure is a wrong value, never a fault.
"""

import torch
import triton
import triton.language as tl

BLOCK_B = 16
BLOCK_K = 256
MIN_PROGRAMS = 256


@triton.jit
def _gemv_rows_dot_even_k(w_ptr, x_ptr, y_ptr, batch, n, k,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_B: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_b = tl.program_id(1)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rb = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    rk = tl.arange(0, BLOCK_K)
    rn_in = tl.minimum(rn, n - 1).to(tl.int64)
    b_ok = rb[None, :] < batch

    w_ptrs = w_ptr + rn_in[:, None] * k + rk[None, :]
    xt_ptrs = x_ptr + rb[None, :] * k + rk[:, None]

    acc = tl.zeros([BLOCK_N, BLOCK_B], dtype=tl.float32)
    for _ in range(0, k // BLOCK_K):          # assumes k % BLOCK_K == 0
        w = tl.load(w_ptrs)
        xt = tl.load(xt_ptrs, mask=b_ok, other=0.0)
        acc = tl.dot(w, xt, acc)
        w_ptrs += BLOCK_K
        xt_ptrs += BLOCK_K

    y_ptrs = y_ptr + rb[None, :] * n + rn[:, None]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=b_ok & (rn[:, None] < n))


def gemv_decode(w, x, y, batch, n, k):
    block_n = 16
    for cand in (64, 32):
        if triton.cdiv(n, cand) >= MIN_PROGRAMS:
            block_n = cand
            break
    num_stages = 2 if torch.version.hip else 4
    grid = (triton.cdiv(n, block_n), triton.cdiv(batch, BLOCK_B))
    _gemv_rows_dot_even_k[grid](w, x, y, batch, n, k, BLOCK_N=block_n, BLOCK_K=BLOCK_K,
                                BLOCK_B=BLOCK_B, num_warps=4, num_stages=num_stages)
    return None

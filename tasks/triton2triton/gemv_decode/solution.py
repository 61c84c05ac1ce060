"""Reference solution for y = x @ w^T (decode GEMV): correct for every shape.

- Multi-row programs: each program owns BLOCK_N rows of w and streams them in
  [BLOCK_N, BLOCK_K] tiles (16-byte loads), so a program has tens of KB of weights in
  flight instead of one 256-byte chunk.
- The products go through tl.dot: the batch is padded to 16 columns (x^T is loaded as a
  [BLOCK_K, 16] tile whose columns past `batch` are masked, never read), which lets the
  compiler pipeline the weight loads with asynchronous copies (num_stages deep) and leaves
  the reduction over k to the tensor cores. The wasted MMA work is free: the kernel is
  bound by reading w.
- BLOCK_N is the largest of 64 / 32 / 16 that still gives >= 256 programs, so every SM has
  work even for a few thousand rows; bigger BLOCK_N means x is re-read from L2 less often.
- Rows of w beyond n are clamped to the last row (their results are dropped by the masked
  store); the k mask is compiled out when k is a multiple of BLOCK_K (EVEN_K).
"""

import torch
import triton
import triton.language as tl

BLOCK_B = 16             # batch columns of one tl.dot (the smallest dot width)
MIN_PROGRAMS = 256


@triton.jit
def _gemv_rows_dot(w_ptr, x_ptr, y_ptr, batch, n, k,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_B: tl.constexpr,
                   EVEN_K: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_b = tl.program_id(1)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rb = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    rk = tl.arange(0, BLOCK_K)
    rn_in = tl.minimum(rn, n - 1).to(tl.int64)
    b_ok = rb[None, :] < batch

    w_ptrs = w_ptr + rn_in[:, None] * k + rk[None, :]           # [BLOCK_N, BLOCK_K]
    xt_ptrs = x_ptr + rb[None, :] * k + rk[:, None]             # [BLOCK_K, BLOCK_B] = x^T tile

    acc = tl.zeros([BLOCK_N, BLOCK_B], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        if EVEN_K:
            w = tl.load(w_ptrs)
            xt = tl.load(xt_ptrs, mask=b_ok, other=0.0)
        else:
            k_ok = (k0 + rk) < k
            w = tl.load(w_ptrs, mask=k_ok[None, :], other=0.0)
            xt = tl.load(xt_ptrs, mask=b_ok & k_ok[:, None], other=0.0)
        acc = tl.dot(w, xt, acc)
        w_ptrs += BLOCK_K
        xt_ptrs += BLOCK_K

    y_ptrs = y_ptr + rb[None, :] * n + rn[:, None]              # [BLOCK_N, BLOCK_B] = y^T tile
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=b_ok & (rn[:, None] < n))


def _config(n):
    """(BLOCK_N, BLOCK_K, num_warps, num_stages)."""
    block_n = 16
    for cand in (64, 32):
        if triton.cdiv(n, cand) >= MIN_PROGRAMS:
            block_n = cand
            break
    if torch.version.hip:                       # 64 KB of LDS: shallower pipeline
        return block_n, 128, 4, 2
    return block_n, 256, 4, 4


def gemv_decode(w, x, y, batch, n, k):
    block_n, block_k, num_warps, num_stages = _config(n)
    grid = (triton.cdiv(n, block_n), triton.cdiv(batch, BLOCK_B))
    _gemv_rows_dot[grid](w, x, y, batch, n, k,
                         BLOCK_N=block_n, BLOCK_K=block_k, BLOCK_B=BLOCK_B,
                         EVEN_K=(k % block_k == 0), num_warps=num_warps, num_stages=num_stages)
    return None

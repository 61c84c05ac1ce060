"""Reference solution for y = x @ w^T (skinny GEMM): correct for every shape.

- Split-K: the reduction over k is cut into `split` contiguous ranges, and the grid is
  (n tiles, m tiles, split), so a 4096-wide output (64 tiles of 64 columns) still runs ~512
  programs, enough to keep every SM streaming weights. Each program writes its fp32 partial
  tile into a workspace [split, m, n]; a second kernel sums the partials in a fixed order
  (deterministic, no atomics) and rounds to fp16 once. The workspace is split * m * n * 4
  bytes (at most a few MB, under 10% of the weight traffic): the one allocation per call,
  and the reason for it. When one range is enough (split == 1) the first kernel writes y
  directly and the second is skipped.
- The split is chosen for ~528 programs (4 per SM on a 132-SM H100/H200) with at least 4
  k-steps of 128 per program, so each program's software pipeline has something to overlap,
  and small enough that the workspace round trip stays under ~10% of the weight traffic.
- Tiles: BLOCK_M is the smallest of 16 / 32 / 64 that covers m (no wasted x rows for a
  16-token batch), BLOCK_N = 64, BLOCK_K = 128, 4 warps; 4 stages (3 for BLOCK_M = 64) so
  two programs fit an SM's shared memory and each keeps ~32-48 KB of weights in flight.
- Rows of x / w beyond m / n are clamped to the last valid row instead of masked (their
  results are dropped by the masked store); the k mask is compiled out when k is a
  multiple of BLOCK_K (EVEN_K).
"""

import torch
import triton
import triton.language as tl

BLOCK_N = 64
BLOCK_K = 128
TARGET_PROGRAMS = 528
MIN_STEPS_PER_SPLIT = 4
REDUCE_BLOCK = 1024


@triton.jit
def _splitk_partial(x_ptr, w_ptr, out_ptr, m, n, k, k_per_split,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    EVEN_K: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    pid_s = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm_in = tl.minimum(rm, m - 1).to(tl.int64)
    rn_in = tl.minimum(rn, n - 1).to(tl.int64)

    k_start = pid_s * k_per_split
    k_end = tl.minimum(k_start + k_per_split, k)
    x_ptrs = x_ptr + rm_in[:, None] * k + (k_start + rk)[None, :]      # [BLOCK_M, BLOCK_K]
    w_ptrs = w_ptr + rn_in[None, :] * k + (k_start + rk)[:, None]      # [BLOCK_K, BLOCK_N] = w^T

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        if EVEN_K:
            a = tl.load(x_ptrs)
            bt = tl.load(w_ptrs)
        else:
            k_ok = (k0 + rk) < k
            a = tl.load(x_ptrs, mask=k_ok[None, :], other=0.0)
            bt = tl.load(w_ptrs, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, bt, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    # out is the fp32 workspace [split, m, n] (or y itself when split == 1)
    out_ptrs = out_ptr + pid_s.to(tl.int64) * m * n + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


@triton.jit
def _splitk_reduce(ws_ptr, y_ptr, mn, split, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < mn
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(0, split):
        acc += tl.load(ws_ptr + s * mn + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


def _plan(m, n, k):
    """(BLOCK_M, split, k_per_split, num_stages)."""
    block_m = 16 if m <= 16 else (32 if m <= 32 else 64)
    tiles = triton.cdiv(m, block_m) * triton.cdiv(n, BLOCK_N)
    k_steps = triton.cdiv(k, BLOCK_K)
    # the workspace round trip (8 * split * m * n bytes) stays under ~10% of the weights
    # (2 * n * k bytes): split <= k / (40 * m)
    split = max(1, min(triton.cdiv(TARGET_PROGRAMS, tiles), k_steps // MIN_STEPS_PER_SPLIT,
                       k // (40 * m)))
    steps = triton.cdiv(k_steps, split)
    split = triton.cdiv(k_steps, steps)                 # no empty range
    if torch.version.hip:                               # 64 KB of LDS
        stages = 2
    else:
        stages = 3 if block_m == 64 else 4
    return block_m, split, steps * BLOCK_K, stages


def splitk_gemm(x, w, y, m, n, k):
    block_m, split, k_per_split, stages = _plan(m, n, k)
    out = y if split == 1 else torch.empty((split, m, n), dtype=torch.float32, device=y.device)
    grid = (triton.cdiv(n, BLOCK_N), triton.cdiv(m, block_m), split)
    _splitk_partial[grid](x, w, out, m, n, k, k_per_split,
                          BLOCK_M=block_m, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                          EVEN_K=(k % BLOCK_K == 0), num_warps=4, num_stages=stages)
    if split > 1:
        _splitk_reduce[(triton.cdiv(m * n, REDUCE_BLOCK),)](out, y, m * n, split,
                                                           BLOCK=REDUCE_BLOCK, num_warps=4)
    return None

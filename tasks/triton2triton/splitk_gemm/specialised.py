"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's split-K kernels with one assumption baked in: k is a multiple of BLOCK_K =
128 (true for every seen shape: 4096, 11008, 14336). Each program runs
(k_end - k_start) // BLOCK_K full steps with unmasked loads, so when k % 128 != 0 the last
k % 128 products of every dot product are silently dropped. Every access stays inside the
buffers (rows are clamped, no step passes k); the failure is a wrong value, never a fault.
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
def _splitk_partial_even_k(x_ptr, w_ptr, out_ptr, m, n, k, k_per_split,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
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
    x_ptrs = x_ptr + rm_in[:, None] * k + (k_start + rk)[None, :]
    w_ptrs = w_ptr + rn_in[None, :] * k + (k_start + rk)[:, None]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for _ in range(0, (k_end - k_start) // BLOCK_K):      # assumes k % BLOCK_K == 0
        acc = tl.dot(tl.load(x_ptrs), tl.load(w_ptrs), acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

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


def splitk_gemm(x, w, y, m, n, k):
    block_m = 16 if m <= 16 else (32 if m <= 32 else 64)
    tiles = triton.cdiv(m, block_m) * triton.cdiv(n, BLOCK_N)
    k_steps = triton.cdiv(k, BLOCK_K)
    split = max(1, min(triton.cdiv(TARGET_PROGRAMS, tiles), k_steps // MIN_STEPS_PER_SPLIT,
                       k // (40 * m)))
    steps = triton.cdiv(k_steps, split)
    split = triton.cdiv(k_steps, steps)
    stages = 2 if torch.version.hip else (3 if block_m == 64 else 4)
    out = y if split == 1 else torch.empty((split, m, n), dtype=torch.float32, device=y.device)
    grid = (triton.cdiv(n, BLOCK_N), triton.cdiv(m, block_m), split)
    _splitk_partial_even_k[grid](x, w, out, m, n, k, steps * BLOCK_K,
                                 BLOCK_M=block_m, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                 num_warps=4, num_stages=stages)
    if split > 1:
        _splitk_reduce[(triton.cdiv(m * n, REDUCE_BLOCK),)](out, y, m * n, split,
                                                           BLOCK=REDUCE_BLOCK, num_warps=4)
    return None

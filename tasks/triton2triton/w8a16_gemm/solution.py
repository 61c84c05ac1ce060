"""Reference solution for y = x @ (w * scale) with int8 weights: correct for every shape.

- Dequantisation fused into the GEMM: each program loads its [BLOCK_K, BLOCK_N] int8 tile of
  w (pipelined through shared memory like any other operand), converts it to fp16 in
  registers (exact: |w| <= 127) and feeds it to tl.dot with the fp16 x tile. The per-column
  scale does not depend on l, so it is taken out of the sum and applied once to the fp32
  accumulator: y[i, j] = scale[j] * sum_l x[i, l] * w[l, j]. The weights cross memory once,
  as 1 byte each, instead of 1 + 2 + 2 bytes.
- Decode (m <= 64) is bound by reading w: BLOCK_M is the smallest of 16 / 32 / 64 covering m,
  BLOCK_N = 64, BLOCK_K = 128, 4 warps, 4 stages, and split-K over the reduction so that
  ~528 programs (4 per SM on a 132-SM H100/H200) stream the weights. Partial sums go to an
  fp32 workspace [split, m, n] (unscaled) and a second kernel adds them in a fixed order,
  applies the scale and rounds once. The workspace is the one allocation per call; its
  round trip is kept under ~20% of the int8 weight bytes. With split == 1 the GEMM kernel
  applies the scale and writes y itself.
- Prefill (m > 64) is compute-bound: 128 x 128 x 64 tiles, 8 warps, 3 stages, in grouped
  order (GROUP_M row tiles per band) so the w tiles neighbouring programs share stay in L2;
  64-row tiles when m <= 256 so that there are enough programs.
- Rows of x beyond m are clamped to the last valid one instead of masked (their results are
  dropped by the masked store). Columns of w are the contiguous dimension, so they are
  masked, not clamped (a clamp would hide the contiguity and turn the 16-byte int8 loads
  into byte loads); the n mask is compiled out when n is a multiple of BLOCK_N (EVEN_N) and
  the k mask when k is a multiple of BLOCK_K (EVEN_K).
"""

import torch
import triton
import triton.language as tl

TARGET_PROGRAMS = 528
MIN_STEPS_PER_SPLIT = 4
REDUCE_BLOCK = 1024


@triton.jit
def _w8a16_tile(x_ptr, w_ptr, scale_ptr, out_ptr, m, n, k, k_per_split,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr, EVEN_K: tl.constexpr, EVEN_N: tl.constexpr,
                APPLY_SCALE: tl.constexpr):
    # grouped order over the (m, n) tiles: a band of GROUP_M row tiles, column by column
    pid = tl.program_id(0)
    pid_s = tl.program_id(1)
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
    n_ok = rn[None, :] < n

    k_start = pid_s * k_per_split
    k_end = tl.minimum(k_start + k_per_split, k)
    x_ptrs = x_ptr + rm_in[:, None] * k + (k_start + rk)[None, :]                 # [BLOCK_M, BLOCK_K]
    w_ptrs = w_ptr + (k_start + rk).to(tl.int64)[:, None] * n + rn[None, :]       # [BLOCK_K, BLOCK_N]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        if EVEN_K:
            a = tl.load(x_ptrs)
            if EVEN_N:
                q = tl.load(w_ptrs)
            else:
                q = tl.load(w_ptrs, mask=n_ok, other=0)
        else:
            k_ok = (k0 + rk) < k
            a = tl.load(x_ptrs, mask=k_ok[None, :], other=0.0)
            q = tl.load(w_ptrs, mask=k_ok[:, None] & n_ok, other=0)
        acc = tl.dot(a, q.to(tl.float16), acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * n

    if APPLY_SCALE:
        s = tl.load(scale_ptr + rn, mask=rn < n, other=0.0).to(tl.float32)
        acc = acc * s[None, :]
    out_ptrs = out_ptr + pid_s.to(tl.int64) * m * n + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


@triton.jit
def _splitk_reduce_scale(ws_ptr, scale_ptr, y_ptr, mn, n, split, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < mn
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(0, split):
        acc += tl.load(ws_ptr + s * mn + offs, mask=mask, other=0.0)
    sc = tl.load(scale_ptr + offs % n, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (acc * sc).to(y_ptr.dtype.element_ty), mask=mask)


def _plan(m, n, k):
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, split, k_per_split)."""
    hip = bool(torch.version.hip)
    if m <= 64:
        block_m = 16 if m <= 16 else (32 if m <= 32 else 64)
        block_n, block_k, group_m, warps, stages = 64, 128, 1, 4, (2 if hip else 4)
    elif m <= 256:
        block_m, block_n, block_k, group_m, warps, stages = 64, 128, 64, 8, 4, (2 if hip else 4)
    else:
        block_m, block_n, block_k, group_m, warps, stages = 128, 128, 64, 8, 8, (2 if hip else 3)
    tiles = triton.cdiv(m, block_m) * triton.cdiv(n, block_n)
    k_steps = triton.cdiv(k, block_k)
    # the workspace round trip (8 * split * m * n bytes) stays under ~20% of the int8
    # weights (k * n bytes): split <= k / (40 * m)
    split = max(1, min(triton.cdiv(TARGET_PROGRAMS, tiles), k_steps // MIN_STEPS_PER_SPLIT,
                       k // (40 * m)))
    steps = triton.cdiv(k_steps, split)
    split = triton.cdiv(k_steps, steps)                 # no empty range
    return block_m, block_n, block_k, group_m, warps, stages, split, steps * block_k


def w8a16_gemm(x, w, scale, y, m, n, k):
    block_m, block_n, block_k, group_m, warps, stages, split, k_per_split = _plan(m, n, k)
    out = y if split == 1 else torch.empty((split, m, n), dtype=torch.float32, device=y.device)
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n), split)
    _w8a16_tile[grid](x, w, scale, out, m, n, k, k_per_split,
                      BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m,
                      EVEN_K=(k % block_k == 0), EVEN_N=(n % block_n == 0), APPLY_SCALE=(split == 1),
                      num_warps=warps, num_stages=stages)
    if split > 1:
        _splitk_reduce_scale[(triton.cdiv(m * n, REDUCE_BLOCK),)](out, scale, y, m * n, n, split,
                                                                 BLOCK=REDUCE_BLOCK, num_warps=4)
    return None

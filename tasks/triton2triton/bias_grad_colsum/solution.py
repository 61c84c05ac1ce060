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
"""

import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 256
UNROLL = 4
TARGET_PROGRAMS = 1024
FIN_TILE = 8192          # partial elements per step of the finishing kernel


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


def bias_grad_colsum(dy, db, tokens, features):
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

"""Reference solution for column-wise variance and mean: one read of x, correct for every
shape.

The starting kernel parallelises over columns only (c / 32 programs: 2 for c = 64) and reads
x twice. Here the rows are split as well, with a two-phase reduction:

1. `_vm_partial`: program (column block, row segment) reads its [seg_len, BLOCK_C] slab
   once, in [BLOCK_N, BLOCK_C] tiles of 8192 elements (8 warps, 16-byte loads along the
   contiguous columns). Each tile is reduced from registers to per-column (mean, M2) (its
   own mean first, then its centred squares) and merged into the running (count, mean, M2)
   with Chan's parallel formula. It writes one (mean, M2) pair per column.
2. `_vm_combine`: per column block, the partials of all segments are merged the same way,
   [S_TILE, BLOCK_C] at a time (counts follow from the segment layout); var = M2 / n.

About 1024 programs run in the first phase. The partial buffers come from PyTorch's caching
allocator.
"""

import torch
import triton
import triton.language as tl

TILE = 8192
TARGET_PROGRAMS = 1024
S_TILE = 64


@triton.jit
def _vm_partial(x_ptr, pmean_ptr, pm2_ptr, n, c, seg_len,
                BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr):
    cb = tl.program_id(0)
    seg = tl.program_id(1)
    col = cb * BLOCK_C + tl.arange(0, BLOCK_C)
    col_ok = col < c
    lo = seg * seg_len
    hi = tl.minimum(lo + seg_len, n)
    rows = tl.arange(0, BLOCK_N)
    n_run = 0.0
    mean_run = tl.zeros([BLOCK_C], dtype=tl.float32)
    m2_run = tl.zeros([BLOCK_C], dtype=tl.float32)
    for start in range(lo, hi, BLOCK_N):
        r = (start + rows).to(tl.int64)
        r_ok = r < hi
        mask = r_ok[:, None] & col_ok[None, :]
        x = tl.load(x_ptr + r[:, None] * c + col[None, :], mask=mask, other=0.0)
        n_t = tl.minimum(hi - start, BLOCK_N).to(tl.float32)
        mean_t = tl.sum(x, axis=0) / n_t
        d = tl.where(mask, x - mean_t[None, :], 0.0)
        m2_t = tl.sum(d * d, axis=0)
        n_new = n_run + n_t
        delta = mean_t - mean_run
        mean_run = mean_run + delta * (n_t / n_new)
        m2_run = m2_run + m2_t + delta * delta * (n_run * n_t / n_new)
        n_run = n_new
    out = seg.to(tl.int64) * c + col
    tl.store(pmean_ptr + out, mean_run, mask=col_ok)
    tl.store(pm2_ptr + out, m2_run, mask=col_ok)


@triton.jit
def _vm_combine(pmean_ptr, pm2_ptr, var_ptr, mean_ptr, n, c, seg_len, n_seg,
                S_TILE: tl.constexpr, BLOCK_C: tl.constexpr):
    col = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_ok = col < c
    s_idx = tl.arange(0, S_TILE)
    n_run = 0.0
    mean_run = tl.zeros([BLOCK_C], dtype=tl.float32)
    m2_run = tl.zeros([BLOCK_C], dtype=tl.float32)
    for s0 in range(0, n_seg, S_TILE):
        s = s0 + s_idx
        s_ok = s < n_seg
        mask = s_ok[:, None] & col_ok[None, :]
        offs = s.to(tl.int64)[:, None] * c + col[None, :]
        p_mean = tl.load(pmean_ptr + offs, mask=mask, other=0.0)
        p_m2 = tl.load(pm2_ptr + offs, mask=mask, other=0.0)
        p_n = tl.where(s_ok, tl.minimum(n - s * seg_len, seg_len), 0).to(tl.float32)   # [S_TILE]
        n_t = tl.sum(p_n, axis=0)
        mean_t = tl.sum(p_n[:, None] * p_mean, axis=0) / n_t
        dev = tl.where(mask, p_mean - mean_t[None, :], 0.0)
        m2_t = tl.sum(p_m2, axis=0) + tl.sum(p_n[:, None] * dev * dev, axis=0)
        n_new = n_run + n_t
        delta = mean_t - mean_run
        mean_run = mean_run + delta * (n_t / n_new)
        m2_run = m2_run + m2_t + delta * delta * (n_run * n_t / n_new)
        n_run = n_new
    tl.store(mean_ptr + col, mean_run, mask=col_ok)
    tl.store(var_ptr + col, m2_run / n, mask=col_ok)


def var_mean_cols(x, var, mean, n, c):
    block_c = min(128, triton.next_power_of_2(c))
    block_n = max(1, TILE // block_c)
    col_blocks = triton.cdiv(c, block_c)
    tiles = triton.cdiv(n, block_n)
    want = max(1, TARGET_PROGRAMS // col_blocks)
    seg_len = triton.cdiv(tiles, min(tiles, want)) * block_n      # whole tiles per segment
    n_seg = triton.cdiv(n, seg_len)
    pmean = torch.empty((n_seg, c), dtype=torch.float32, device=x.device)
    pm2 = torch.empty((n_seg, c), dtype=torch.float32, device=x.device)
    _vm_partial[(col_blocks, n_seg)](x, pmean, pm2, n, c, seg_len,
                                     BLOCK_N=block_n, BLOCK_C=block_c, num_warps=8)
    combine_c = min(32, block_c)
    _vm_combine[(triton.cdiv(c, combine_c),)](pmean, pm2, var, mean, n, c, seg_len, n_seg,
                                              S_TILE=S_TILE, BLOCK_C=combine_c, num_warps=4)
    return None

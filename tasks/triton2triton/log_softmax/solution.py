"""Reference solution for log-softmax: correct for every shape.

- Rows of up to 16384 columns are held whole in registers ([ROWS, BLOCK] tiles of about
  4096 elements; several short rows to a program): x is read once, y written once.
- Longer rows (LM vocabularies) take two kernels over a (row, segment) grid, segments of
  SEG columns (a multiple of 4096) chosen so that about 1024 programs run even when there
  are few rows:
    1. every program reduces its segment to (max, sum of exp(x - max)) with an online
       rescaling per 4096-column chunk (one exp per element) and stores the pair;
    2. every program combines the pairs of its row into the log-sum-exp and writes
       y = x - lse for its segment.
  x is read twice and y written once (the starting kernel reads x three times, and with
  one program per row it cannot fill the GPU when a batch has only a few hundred rows).
  The [rows, n_seg] buffers come from PyTorch's caching allocator (no device allocation
  after the first call).
"""

import torch
import triton
import triton.language as tl

MAX_ROW_BLOCK = 16384    # longest row kept whole in registers
TILE = 4096
CHUNK = 4096             # columns per step on the long-row path
TARGET_PROGRAMS = 1024


@triton.jit
def _log_softmax_tile(x_ptr, y_ptr, rows, vocab, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    col = tl.arange(0, BLOCK)[None, :]
    mask = (row < rows) & (col < vocab)
    offs = row * vocab + col
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=1)
    m = tl.where(m == -float("inf"), 0.0, m)            # rows past the end: keep them finite
    s = tl.sum(tl.exp(x - m[:, None]), axis=1)
    s = tl.where(s == 0.0, 1.0, s)                      # (the same rows: no log(0))
    lse = m + tl.log(s)
    tl.store(y_ptr + offs, x - lse[:, None], mask=mask)


@triton.jit
def _segment_stats(x_ptr, pm_ptr, ps_ptr, vocab, n_seg, SEG, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    seg = tl.program_id(1)
    lo = seg * SEG
    hi = tl.minimum(lo + SEG, vocab)
    m = -float("inf")
    s = 0.0
    for start in range(lo, hi, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * vocab + c, mask=c < hi, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))        # finite: every chunk has a column
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(pm_ptr + row * n_seg + seg, m)
    tl.store(ps_ptr + row * n_seg + seg, s)


@triton.jit
def _segment_write(x_ptr, y_ptr, pm_ptr, ps_ptr, vocab, n_seg, SEG,
                   S_BLOCK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    seg = tl.program_id(1)
    k = tl.arange(0, S_BLOCK)
    ok = k < n_seg
    pm = tl.load(pm_ptr + row * n_seg + k, mask=ok, other=-float("inf"))
    ps = tl.load(ps_ptr + row * n_seg + k, mask=ok, other=0.0)
    m = tl.max(pm, axis=0)
    lse = m + tl.log(tl.sum(tl.where(ok, ps * tl.exp(pm - m), 0.0), axis=0))
    lo = seg * SEG
    hi = tl.minimum(lo + SEG, vocab)
    for start in range(lo, hi, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hi
        offs = row * vocab + c
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        tl.store(y_ptr + offs, x - lse, mask=mask)


def log_softmax(x, y, rows, vocab):
    block = triton.next_power_of_2(vocab)
    if block <= MAX_ROW_BLOCK:
        rows_per_program = max(1, min(TILE // block, triton.next_power_of_2(rows)))
        num_warps = max(1, min(16, rows_per_program * block // 512))
        grid = (triton.cdiv(rows, rows_per_program),)
        _log_softmax_tile[grid](x, y, rows, vocab, ROWS=rows_per_program, BLOCK=block,
                                num_warps=num_warps)
        return None
    want = max(1, TARGET_PROGRAMS // rows)
    seg = max(CHUNK, triton.cdiv(triton.cdiv(vocab, want), CHUNK) * CHUNK)
    n_seg = triton.cdiv(vocab, seg)
    pm = torch.empty((rows, n_seg), dtype=torch.float32, device=x.device)
    ps = torch.empty((rows, n_seg), dtype=torch.float32, device=x.device)
    grid = (rows, n_seg)
    _segment_stats[grid](x, pm, ps, vocab, n_seg, seg, BLOCK=CHUNK, num_warps=8)
    _segment_write[grid](x, y, pm, ps, vocab, n_seg, seg, S_BLOCK=triton.next_power_of_2(n_seg),
                         BLOCK=CHUNK, num_warps=8)
    return None

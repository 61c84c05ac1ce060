"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

It is the reference solution with one assumption taken from the seen shapes: every
vocabulary there is a multiple of 128 (32000, 128256, 151936), so on the long-row path the
bounds are tested per 128-column group instead of per column. When vocab is not a multiple
of 128 (GPT-2's 50257, cl100k's 100277) the last group of a row runs on into the first
columns of the next row: those logits enter the row's log-sum-exp (every output of the row
is off by about 1e-3, above the fp32 tolerances) and outputs are written for them with the
wrong row's log-sum-exp. Every access is also bounded by the size of x, so the failure is a
wrong value and never a fault. Rows short enough for registers (<= 16384) are unchanged.
"""

import torch
import triton
import triton.language as tl

MAX_ROW_BLOCK = 16384    # longest row kept whole in registers
TILE = 4096
CHUNK = 4096             # columns per step on the long-row path
TARGET_PROGRAMS = 1024
GROUP = 128              # "every vocabulary is padded to a multiple of 128"


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
def _segment_stats(x_ptr, pm_ptr, ps_ptr, vocab, total, n_seg, SEG,
                   BLOCK: tl.constexpr, GROUP: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    seg = tl.program_id(1)
    lo = seg * SEG
    hi = tl.minimum(lo + SEG, vocab)
    m = -float("inf")
    s = 0.0
    for start in range(lo, hi, BLOCK):
        c = start + tl.arange(0, BLOCK)
        group = start + (tl.arange(0, BLOCK) // GROUP) * GROUP       # first column of c's group
        offs = row * vocab + c
        x = tl.load(x_ptr + offs, mask=(group < hi) & (offs < total), other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))        # finite: every chunk has a column
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    tl.store(pm_ptr + row * n_seg + seg, m)
    tl.store(ps_ptr + row * n_seg + seg, s)


@triton.jit
def _segment_write(x_ptr, y_ptr, pm_ptr, ps_ptr, vocab, total, n_seg, SEG,
                   S_BLOCK: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr):
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
        group = start + (tl.arange(0, BLOCK) // GROUP) * GROUP
        offs = row * vocab + c
        mask = (group < hi) & (offs < total)
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
    _segment_stats[grid](x, pm, ps, vocab, rows * vocab, n_seg, seg, BLOCK=CHUNK, GROUP=GROUP,
                         num_warps=8)
    _segment_write[grid](x, y, pm, ps, vocab, rows * vocab, n_seg, seg,
                         S_BLOCK=triton.next_power_of_2(n_seg), BLOCK=CHUNK, GROUP=GROUP, num_warps=8)
    return None

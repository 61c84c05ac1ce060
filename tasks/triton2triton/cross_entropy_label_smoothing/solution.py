"""Reference solution for label-smoothed cross-entropy: correct for every shape.

The starting kernel reads every row twice, 256 columns (512 bytes) per dependent step, with
one program per row (32 programs for 32 rows). Here the logits are read once:

1. `_ce_partial`: program (row, segment) streams its segment of SEG columns (a multiple of
   CHUNK = 4096, chosen so that about 1024 programs run even with few rows) in [4096] fp16
   chunks, keeping an online (max, sum of exp(x - max)) pair - one exp per element, the
   running sum rescaled once per chunk - and the sum of x. Rows whose target is
   ignore_index are skipped. It stores the three partials.
2. `_ce_finish`: ROWS rows per program combine their segments' partials into the
   log-sum-exp and the mean, gather the target's logit and write the loss (0 when ignored).

The [tokens, n_seg] fp32 partial buffers come from PyTorch's caching allocator.
"""

import torch
import triton
import triton.language as tl

CHUNK = 4096
TARGET_PROGRAMS = 1024
FIN_ROWS = 64


@triton.jit
def _ce_partial(x_ptr, t_ptr, pm_ptr, ps_ptr, psx_ptr, vocab, n_seg, SEG, ignore_index,
                CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    seg = tl.program_id(1)
    t = tl.load(t_ptr + row)
    m = -float("inf")
    s = 0.0
    sx = 0.0
    if t != ignore_index:
        lo = seg * SEG
        hi = tl.minimum(lo + SEG, vocab)
        x_row = x_ptr + row * vocab
        for start in range(lo, hi, CHUNK):
            c = start + tl.arange(0, CHUNK)
            mask = c < hi
            x = tl.load(x_row + c, mask=mask, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=0))      # finite: every chunk has a column
            s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
            sx += tl.sum(tl.where(mask, x, 0.0), axis=0)
            m = m_new
    out = row * n_seg + seg
    tl.store(pm_ptr + out, m)
    tl.store(ps_ptr + out, s)
    tl.store(psx_ptr + out, sx)


@triton.jit
def _ce_finish(x_ptr, t_ptr, pm_ptr, ps_ptr, psx_ptr, loss_ptr, tokens, vocab, n_seg, eps,
               ignore_index, ROWS: tl.constexpr, S_BLOCK: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    r_ok = r < tokens
    k = tl.arange(0, S_BLOCK)
    mask = r_ok[:, None] & (k[None, :] < n_seg)
    offs = r[:, None] * n_seg + k[None, :]
    pm = tl.load(pm_ptr + offs, mask=mask, other=-float("inf"))
    ps = tl.load(ps_ptr + offs, mask=mask, other=0.0)
    psx = tl.load(psx_ptr + offs, mask=mask, other=0.0)
    t = tl.load(t_ptr + r, mask=r_ok, other=ignore_index)
    valid = r_ok & (t != ignore_index)
    m = tl.max(pm, axis=1)
    m = tl.where(valid, m, 0.0)                           # ignored rows: keep them finite
    s = tl.sum(tl.where(mask, ps * tl.exp(pm - m[:, None]), 0.0), axis=1)
    s = tl.where(valid, s, 1.0)
    lse = m + tl.log(s)
    mean = tl.sum(psx, axis=1) / vocab
    xt = tl.load(x_ptr + r * vocab + tl.where(valid, t, 0), mask=valid, other=0.0).to(tl.float32)
    loss = (1.0 - eps) * (lse - xt) + eps * (lse - mean)
    tl.store(loss_ptr + r, tl.where(valid, loss, 0.0), mask=r_ok)


def cross_entropy_label_smoothing(logits, target, loss, tokens, vocab, eps, ignore_index):
    want = max(1, TARGET_PROGRAMS // tokens)
    seg = max(CHUNK, triton.cdiv(triton.cdiv(vocab, want), CHUNK) * CHUNK)
    n_seg = triton.cdiv(vocab, seg)
    pm = torch.empty((tokens, n_seg), dtype=torch.float32, device=logits.device)
    ps = torch.empty((tokens, n_seg), dtype=torch.float32, device=logits.device)
    psx = torch.empty((tokens, n_seg), dtype=torch.float32, device=logits.device)
    _ce_partial[(tokens, n_seg)](logits, target, pm, ps, psx, vocab, n_seg, seg, ignore_index,
                                 CHUNK=CHUNK, num_warps=8)
    _ce_finish[(triton.cdiv(tokens, FIN_ROWS),)](logits, target, pm, ps, psx, loss, tokens, vocab,
                                                 n_seg, eps, ignore_index, ROWS=FIN_ROWS,
                                                 S_BLOCK=triton.next_power_of_2(n_seg), num_warps=4)
    return None

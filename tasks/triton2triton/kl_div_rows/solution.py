"""Reference solution for the per-row KL divergence: both logit tensors read once, correct
for every shape.

- One pass with online rescaling: per chunk, the running maxima of both rows are updated
  and the running sums Z_p = sum exp(lp - max_p), Z_q = sum exp(lq - max_q) and
  A = sum exp(lp - max_p) * (lp - lq) are rescaled by exp(old max - new max) (one exp per
  logit), so the logits are read once instead of three times. Then
    kl = A / Z_p + (max_q - max_p) + log(Z_q / Z_p)
  (no large log-sum-exp terms cancel).
- Short rows (<= 4096 columns) are packed several to a program ([ROWS, BLOCK] tiles of 4096
  elements); long rows are walked 4096 columns at a time with 16-byte loads.
- Few rows: each row is split into n_seg segments so that about 1024 programs run; each
  (row, segment) program stores its five running values and a second kernel merges them
  per row (rescaling to the common maxima). With n_seg == 1 the first kernel writes kl
  directly. The partials buffer comes from PyTorch's caching allocator.
"""

import torch
import triton
import triton.language as tl

MAX_BLOCK = 4096
TARGET_PROGRAMS = 1024
NEG = tl.constexpr(-1.0e30)   # finite start for the running maxima: no inf - inf on empty lanes


@triton.jit
def _kl_partial(p_ptr, q_ptr, out_ptr, part_ptr, rows, vocab, n_seg, SEG,
                ROWS: tl.constexpr, BLOCK: tl.constexpr, FINAL: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]    # [ROWS, 1]
    row_ok = row < rows
    seg = tl.program_id(1)
    lo = seg * SEG
    hi = tl.minimum(lo + SEG, vocab)
    col = tl.arange(0, BLOCK)[None, :]
    mp = tl.full([ROWS], NEG, dtype=tl.float32)
    mq = tl.full([ROWS], NEG, dtype=tl.float32)
    zp = tl.zeros([ROWS], dtype=tl.float32)
    zq = tl.zeros([ROWS], dtype=tl.float32)
    a = tl.zeros([ROWS], dtype=tl.float32)
    for start in range(lo, hi, BLOCK):
        c = start + col
        mask = row_ok & (c < hi)
        offs = row * vocab + c
        lp = tl.load(p_ptr + offs, mask=mask, other=-float("inf"))
        lq = tl.load(q_ptr + offs, mask=mask, other=-float("inf"))
        mp_new = tl.maximum(mp, tl.max(lp, axis=1))
        mq_new = tl.maximum(mq, tl.max(lq, axis=1))
        ep = tl.exp(lp - mp_new[:, None])                                       # 0 where masked
        eq = tl.exp(lq - mq_new[:, None])
        d = tl.where(mask, lp - lq, 0.0)
        alpha_p = tl.exp(mp - mp_new)
        zp = zp * alpha_p + tl.sum(ep, axis=1)
        a = a * alpha_p + tl.sum(ep * d, axis=1)
        zq = zq * tl.exp(mq - mq_new) + tl.sum(eq, axis=1)
        mp = mp_new
        mq = mq_new
    r = row.reshape([ROWS])
    ok = row_ok.reshape([ROWS])
    if FINAL:
        kl = a / zp + (mq - mp) + tl.log(zq / zp)
        tl.store(out_ptr + r, kl, mask=ok)
    else:
        base = part_ptr + (r * n_seg + seg) * 5
        tl.store(base + 0, mp, mask=ok)
        tl.store(base + 1, zp, mask=ok)
        tl.store(base + 2, a, mask=ok)
        tl.store(base + 3, mq, mask=ok)
        tl.store(base + 4, zq, mask=ok)


@triton.jit
def _kl_combine(part_ptr, out_ptr, n_seg, S_BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    s = tl.arange(0, S_BLOCK)
    ok = s < n_seg
    base = part_ptr + (row * n_seg + s) * 5
    mp = tl.load(base + 0, mask=ok, other=NEG)
    zp = tl.load(base + 1, mask=ok, other=0.0)
    a = tl.load(base + 2, mask=ok, other=0.0)
    mq = tl.load(base + 3, mask=ok, other=NEG)
    zq = tl.load(base + 4, mask=ok, other=0.0)
    max_p = tl.max(mp, axis=0)
    max_q = tl.max(mq, axis=0)
    wp = tl.exp(mp - max_p)
    z_p = tl.sum(zp * wp, axis=0)
    a_p = tl.sum(a * wp, axis=0)
    z_q = tl.sum(zq * tl.exp(mq - max_q), axis=0)
    tl.store(out_ptr + row, a_p / z_p + (max_q - max_p) + tl.log(z_q / z_p))


def kl_div_rows(logits_p, logits_q, kl, rows, vocab):
    block = min(MAX_BLOCK, triton.next_power_of_2(vocab))
    rows_per_program = max(1, min(MAX_BLOCK // block, triton.next_power_of_2(rows)))
    num_warps = max(1, min(8, rows_per_program * block // 512))
    row_programs = triton.cdiv(rows, rows_per_program)
    want = max(1, TARGET_PROGRAMS // row_programs)
    seg = max(block, triton.cdiv(triton.cdiv(vocab, want), block) * block)
    n_seg = triton.cdiv(vocab, seg)
    if n_seg == 1:
        _kl_partial[(row_programs, 1)](logits_p, logits_q, kl, kl, rows, vocab, 1, seg,
                                       ROWS=rows_per_program, BLOCK=block, FINAL=True,
                                       num_warps=num_warps)
        return None
    part = torch.empty((rows, n_seg, 5), dtype=torch.float32, device=kl.device)
    _kl_partial[(row_programs, n_seg)](logits_p, logits_q, kl, part, rows, vocab, n_seg, seg,
                                       ROWS=rows_per_program, BLOCK=block, FINAL=False,
                                       num_warps=num_warps)
    _kl_combine[(rows,)](part, kl, n_seg, S_BLOCK=triton.next_power_of_2(n_seg))
    return None

"""Starting kernel for the per-row KL divergence: correct for every shape, deliberately
simple.

One program per row. Both rows are walked in fixed chunks of 256 columns three times: a
first pass finds the two maxima, a second pass sums exp(x - max) for both normalisers, a
third pass sums exp(lp - max_p) * (lp - lq). Then
  kl = A / Z_p + (max_q - max_p) + log(Z_q / Z_p).
Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _kl_row(p_ptr, q_ptr, kl_ptr, vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    p_row = p_ptr + row * vocab
    q_row = q_ptr + row * vocab

    # Pass 1: the two row maxima.
    mp = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    mq = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < vocab
        mp = tl.maximum(mp, tl.load(p_row + c, mask=mask, other=-float("inf")))
        mq = tl.maximum(mq, tl.load(q_row + c, mask=mask, other=-float("inf")))
    max_p = tl.max(mp, axis=0)
    max_q = tl.max(mq, axis=0)

    # Pass 2: the two normalisers.
    zp = tl.zeros([BLOCK], dtype=tl.float32)
    zq = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < vocab
        zp += tl.exp(tl.load(p_row + c, mask=mask, other=-float("inf")) - max_p)
        zq += tl.exp(tl.load(q_row + c, mask=mask, other=-float("inf")) - max_q)
    z_p = tl.sum(zp, axis=0)
    z_q = tl.sum(zq, axis=0)

    # Pass 3: sum of exp(lp - max_p) * (lp - lq).
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < vocab
        lp = tl.load(p_row + c, mask=mask, other=0.0)
        lq = tl.load(q_row + c, mask=mask, other=0.0)
        acc += tl.where(mask, tl.exp(lp - max_p) * (lp - lq), 0.0)
    a = tl.sum(acc, axis=0)

    tl.store(kl_ptr + row, a / z_p + (max_q - max_p) + tl.log(z_q / z_p))


def kl_div_rows(logits_p, logits_q, kl, rows, vocab):
    _kl_row[(rows,)](logits_p, logits_q, kl, vocab, BLOCK=BLOCK)
    return None

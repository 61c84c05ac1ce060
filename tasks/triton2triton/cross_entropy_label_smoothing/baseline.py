"""Starting kernel for label-smoothed cross-entropy: correct for every shape, simple.

One program per token row walks the row in chunks of 256 columns twice: a first pass finds
the maximum, a second pass sums exp(x - max) and x. The loss follows from the log-sum-exp,
the row mean and the target's logit; rows whose target is ignore_index get 0 (they are
still read). Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _ce_row(x_ptr, t_ptr, loss_ptr, vocab, eps, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * vocab

    m = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + c, mask=c < vocab, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)

    s = tl.zeros([BLOCK], dtype=tl.float32)
    sx = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < vocab
        x = tl.load(x_row + c, mask=mask, other=-float("inf")).to(tl.float32)
        s += tl.exp(x - row_max)
        sx += tl.where(mask, x, 0.0)
    lse = row_max + tl.log(tl.sum(s, axis=0))
    mean = tl.sum(sx, axis=0) / vocab

    t = tl.load(t_ptr + row)
    valid = t != ignore_index
    xt = tl.load(x_row + tl.where(valid, t, 0)).to(tl.float32)
    loss = (1.0 - eps) * (lse - xt) + eps * (lse - mean)
    tl.store(loss_ptr + row, tl.where(valid, loss, 0.0))


def cross_entropy_label_smoothing(logits, target, loss, tokens, vocab, eps, ignore_index):
    _ce_row[(tokens,)](logits, target, loss, vocab, eps, ignore_index, BLOCK=BLOCK)
    return None

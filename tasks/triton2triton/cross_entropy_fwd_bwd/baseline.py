"""Starting kernels for the cross-entropy loss and its gradient: correct for every shape, simple.

1. `_count_valid`: a single program walks target 1024 entries at a time and stores the
   number of rows that are not ignore_index into a one-element int32 scratch.
2. `_ce_fwd_bwd_row`: one program per row walks the row in chunks of 256 columns three
   times: a first pass finds the maximum, a second pass sums exp(x - max) (giving the
   log-sum-exp and the loss), a third pass reads the row again and writes
   dlogits = loss_scale / n_valid * (exp(x - lse) - onehot). Ignored rows are read and
   computed like the others; their loss and gradient are multiplied by 0. Default launch
   settings.
"""

import torch
import triton
import triton.language as tl

BLOCK = 256
COUNT_BLOCK = 1024


@triton.jit
def _count_valid(t_ptr, n_valid_ptr, rows, ignore_index, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, rows, BLOCK):
        i = start + tl.arange(0, BLOCK)
        t = tl.load(t_ptr + i, mask=i < rows, other=ignore_index)
        acc += (t != ignore_index).to(tl.int32)
    tl.store(n_valid_ptr, tl.sum(acc, axis=0))


@triton.jit
def _ce_fwd_bwd_row(x_ptr, t_ptr, n_valid_ptr, loss_ptr, dx_ptr, vocab, ignore_index, loss_scale,
                    BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * vocab
    dx_row = dx_ptr + row * vocab

    # Pass 1: the row maximum.
    m = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + c, mask=c < vocab, other=-float("inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)

    # Pass 2: the sum of exp(x - max), the log-sum-exp and the loss.
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + c, mask=c < vocab, other=-float("inf")).to(tl.float32)
        s += tl.exp(x - row_max)
    lse = row_max + tl.log(tl.sum(s, axis=0))

    t = tl.load(t_ptr + row)
    valid = t != ignore_index
    xt = tl.load(x_row + tl.where(valid, t, 0)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, lse - xt, 0.0))

    # Pass 3: the gradient.
    n_valid = tl.load(n_valid_ptr)
    coef = tl.where(valid, loss_scale / n_valid.to(tl.float32), 0.0)
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < vocab
        x = tl.load(x_row + c, mask=mask, other=0.0).to(tl.float32)
        g = tl.exp(x - lse) - tl.where(c == t, 1.0, 0.0)
        tl.store(dx_row + c, (g * coef).to(dx_ptr.dtype.element_ty), mask=mask)


def cross_entropy_fwd_bwd(logits, target, loss, dlogits, rows, vocab, ignore_index, loss_scale):
    n_valid = torch.empty((1,), dtype=torch.int32, device=logits.device)
    _count_valid[(1,)](target, n_valid, rows, ignore_index, BLOCK=COUNT_BLOCK)
    _ce_fwd_bwd_row[(rows,)](logits, target, n_valid, loss, dlogits, vocab, ignore_index,
                             loss_scale, BLOCK=BLOCK)
    return None

"""Starting kernel for log-softmax: correct for every shape, deliberately simple.

One program per row. The row is walked in fixed chunks of 256 columns three times: a first
pass finds the maximum, a second pass sums exp(x - max), a third pass reads x again and
writes x - max - log(sum). Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _log_softmax_row(x_ptr, y_ptr, vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * vocab
    y_row = y_ptr + row * vocab

    # Pass 1: the row maximum.
    m = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(x_row + c, mask=c < vocab, other=-float("inf")))
    row_max = tl.max(m, axis=0)

    # Pass 2: the sum of exp(x - max).
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + c, mask=c < vocab, other=-float("inf"))
        acc += tl.exp(x - row_max)
    lse = row_max + tl.log(tl.sum(acc, axis=0))

    # Pass 3: write x - logsumexp.
    for start in range(0, vocab, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < vocab
        x = tl.load(x_row + c, mask=mask, other=0.0)
        tl.store(y_row + c, x - lse, mask=mask)


def log_softmax(x, y, rows, vocab):
    _log_softmax_row[(rows,)](x, y, vocab, BLOCK=BLOCK)
    return None

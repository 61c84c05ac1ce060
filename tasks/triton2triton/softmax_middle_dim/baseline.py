"""Starting kernel for the softmax over the middle dimension: correct for every shape,
simple.

The row softmax turned on its side: one program per column (b, s) walks the tokens of its
column - elements slots * 4 bytes apart - in chunks of 256, three times: a pass for the
maximum, one for the sum of exp(x - max), one that writes exp(x - max) / sum. Default
launch settings.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _softmax_column(x_ptr, y_ptr, tokens, slots, BLOCK: tl.constexpr):
    col = tl.program_id(0).to(tl.int64)
    b = col // slots
    s = col % slots
    base = b * tokens * slots + s
    m = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
    for start in range(0, tokens, BLOCK):
        t = start + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(x_ptr + base + t * slots, mask=t < tokens, other=-float("inf")))
    col_max = tl.max(m, axis=0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, tokens, BLOCK):
        t = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + base + t * slots, mask=t < tokens, other=-float("inf"))
        acc += tl.exp(x - col_max)
    inv = 1.0 / tl.sum(acc, axis=0)
    for start in range(0, tokens, BLOCK):
        t = start + tl.arange(0, BLOCK)
        mask = t < tokens
        x = tl.load(x_ptr + base + t * slots, mask=mask, other=0.0)
        tl.store(y_ptr + base + t * slots, tl.exp(x - col_max) * inv, mask=mask)


def softmax_middle_dim(x, y, batch, tokens, slots):
    _softmax_column[(batch * slots,)](x, y, tokens, slots, BLOCK=BLOCK)
    return None

"""Starting kernel for softmax backward: correct for every shape, simple.

One program per row walks the row in chunks of 256 columns twice: a first pass
accumulates sum(dy * y) in fp32, a second pass reads y and dy again and writes
dx = y * (dy - sum). Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _softmax_bwd_row(y_ptr, dy_ptr, dx_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        y = tl.load(y_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        acc += y * dy
    dot = tl.sum(acc, axis=0)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        y = tl.load(y_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(dx_ptr + base + c, (y * (dy - dot)).to(tl.float16), mask=mask)


def softmax_backward(y, dy, dx, rows, cols):
    _softmax_bwd_row[(rows,)](y, dy, dx, cols, BLOCK=BLOCK)
    return None

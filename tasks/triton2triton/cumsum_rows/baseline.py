"""Starting kernel for the row prefix sum: correct for every shape, deliberately simple.

One program per row walks the row in chunks of 64 columns, strictly in order, carrying the
running total from one chunk to the next. It uses no scan primitive: the inclusive prefix
of a chunk is formed as a masked [64, 64] sum (element i adds up columns 0..i), 64 adds
for every element. Default launch settings.
"""

import triton
import triton.language as tl

CHUNK = 64


@triton.jit
def _cumsum_row(x_ptr, y_ptr, cols, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    i = tl.arange(0, CHUNK)
    lower = i[None, :] <= i[:, None]          # [CHUNK, CHUNK]: column j counts for element i if j <= i
    carry = 0.0
    for start in range(0, cols, CHUNK):
        c = start + i
        mask = c < cols
        x = tl.load(x_row + c, mask=mask, other=0.0)
        prefix = tl.sum(tl.where(lower, x[None, :], 0.0), axis=1)
        tl.store(y_row + c, carry + prefix, mask=mask)
        carry += tl.sum(x, axis=0)


def cumsum_rows(x, y, rows, cols):
    _cumsum_row[(rows,)](x, y, cols, CHUNK=CHUNK)
    return None

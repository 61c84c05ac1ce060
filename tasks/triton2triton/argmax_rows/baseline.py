"""Starting kernel for the row argmax: correct for every shape, deliberately simple.

One program per row walks the row in chunks of 256 columns, strictly in order. Each chunk
is reduced to its maximum and the first index of it (tl.argmax), and the running best is
replaced only by a strictly larger chunk maximum, so the first index of the row maximum
wins on ties. Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _argmax_row(x_ptr, value_ptr, index_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    best = -float("inf")
    best_idx = 0
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + c, mask=c < cols, other=-float("inf"))
        m = tl.max(x, axis=0)
        i = tl.argmax(x, axis=0)                 # first index of m within the chunk
        take = m > best
        best_idx = tl.where(take, start + i, best_idx)
        best = tl.where(take, m, best)
    tl.store(value_ptr + row, best)
    tl.store(index_ptr + row, best_idx.to(tl.int64))


def argmax_rows(x, value, index, rows, cols):
    _argmax_row[(rows,)](x, value, index, cols, BLOCK=BLOCK)
    return None

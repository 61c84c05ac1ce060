"""Starting kernel for y = x^T: correct for every shape, deliberately simple.

One program per row i of x. It walks the row in chunks of 1024 elements: each chunk is
read contiguously and written to column i of y, i.e. to y[j, i] for the chunk's j, one
element every `rows` elements. The reads are coalesced, the writes are scattered (each
2-byte store touches its own memory segment). Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _transpose_row(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + i * cols
    for start in range(0, cols, BLOCK):
        j = start + tl.arange(0, BLOCK)
        mask = j < cols
        v = tl.load(x_row + j, mask=mask)
        tl.store(y_ptr + j.to(tl.int64) * rows + i, v, mask=mask)


def transpose_2d(x, y, rows, cols):
    _transpose_row[(rows,)](x, y, rows, cols, BLOCK=BLOCK)
    return None

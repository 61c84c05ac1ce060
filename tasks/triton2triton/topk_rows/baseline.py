"""Starting kernel for per-row top-k: correct for every shape, simple.

One program per row makes k passes over the row, one per output position, in chunks of
1024 columns. Pass i looks for the largest entry that comes after the (i-1)-th one in the
order (value descending, column ascending) - that is, x < previous value, or x equal to it
at a larger column - keeping a per-lane best (value, column) and reducing at the end.
The row is read k times. Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _topk_passes(x_ptr, val_ptr, idx_ptr, vocab, k, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * vocab
    lanes = tl.arange(0, BLOCK)
    prev_v = float("inf")
    prev_i = -1
    for i in range(0, k):
        best_v = tl.full([BLOCK], -float("inf"), dtype=tl.float32)
        best_i = tl.full([BLOCK], 2147483647, dtype=tl.int32)
        for start in range(0, vocab, BLOCK):
            c = start + lanes
            x = tl.load(x_row + c, mask=c < vocab, other=-float("inf"))
            after = (c < vocab) & ((x < prev_v) | ((x == prev_v) & (c > prev_i)))
            better = after & ((x > best_v) | ((x == best_v) & (c < best_i)))
            best_v = tl.where(better, x, best_v)
            best_i = tl.where(better, c, best_i)
        v = tl.max(best_v, axis=0)
        j = tl.min(tl.where(best_v == v, best_i, 2147483647), axis=0)
        tl.store(val_ptr + row * k + i, v)
        tl.store(idx_ptr + row * k + i, j.to(tl.int64))
        prev_v = v
        prev_i = j


def topk_rows(x, values, indices, rows, vocab, k):
    _topk_passes[(rows,)](x, values, indices, vocab, k, BLOCK=BLOCK)
    return None

"""Starting kernel for packed -> padded rows: correct for every shape, deliberately simple.

One program per output row (b, pos). It reads its sequence's bounds from cu_seqlens, works
out which packed row lands at pos (none in the padding), then walks the row in chunks of
128 elements: a masked load (nothing is read for a padding row, which gets zeros) and a
store per chunk. Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def _pad_row(packed_ptr, cu_ptr, out_ptr, max_len, hidden, left_pad, BLOCK: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    b = r // max_len
    pos = r % max_len
    start = tl.load(cu_ptr + b).to(tl.int64)
    n = tl.load(cu_ptr + b + 1).to(tl.int64) - start
    i = pos - (max_len - n) * left_pad          # index of the row inside its sequence
    valid = (i >= 0) & (i < n)
    src = packed_ptr + (start + i) * hidden
    dst = out_ptr + r * hidden
    for c0 in range(0, hidden, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        mask = c < hidden
        tl.store(dst + c, tl.load(src + c, mask=mask & valid, other=0.0), mask=mask)


def concat_pad_rows(packed, cu_seqlens, padded, batch, max_len, total, hidden, left_pad):
    _pad_row[(batch * max_len,)](packed, cu_seqlens, padded, max_len, hidden, left_pad, BLOCK=BLOCK)
    return None

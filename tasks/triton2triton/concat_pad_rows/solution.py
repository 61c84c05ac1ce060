"""Reference solution for packed -> padded rows: correct for every shape.

- Each program writes a [ROWS, BLOCK_H] tile of the padded output, ROWS consecutive output
  rows (they may straddle two sequences: every row finds its own sequence) by a stretch of
  BLOCK_H = 1024 columns (512 for short rows; grid axis 1 walks the stretches). The tile is
  one masked load and one store of 32 elements a thread, 16-byte vectors when rows are
  16-byte aligned, so a program has 8 KB in flight instead of 256 bytes, and no loop.
- Padding rows are masked out of the load (nothing is read; the store writes zeros).
- Row indices are computed in int64.
"""

import triton
import triton.language as tl

TILE = 4096             # elements a program writes (ROWS * BLOCK_H)


@triton.jit
def _pad_tile(packed_ptr, cu_ptr, out_ptr, rows, max_len, hidden, left_pad,
              ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    c = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    r_ok = r < rows
    b = r // max_len
    pos = r % max_len
    start = tl.load(cu_ptr + b, mask=r_ok, other=0).to(tl.int64)
    n = tl.load(cu_ptr + b + 1, mask=r_ok, other=0).to(tl.int64) - start
    i = pos - (max_len - n) * left_pad
    valid = r_ok & (i >= 0) & (i < n)
    c_ok = c[None, :] < hidden
    v = tl.load(packed_ptr + (start + i)[:, None] * hidden + c[None, :], mask=valid[:, None] & c_ok, other=0.0)
    tl.store(out_ptr + r[:, None] * hidden + c[None, :], v, mask=r_ok[:, None] & c_ok)


def concat_pad_rows(packed, cu_seqlens, padded, batch, max_len, total, hidden, left_pad):
    block_h = 1024 if hidden > 512 else 512
    rows_per = TILE // block_h
    n_rows = batch * max_len
    grid = (triton.cdiv(n_rows, rows_per), triton.cdiv(hidden, block_h))
    _pad_tile[grid](packed, cu_seqlens, padded, n_rows, max_len, hidden, left_pad,
                    ROWS=rows_per, BLOCK_H=block_h, num_warps=4)
    return None

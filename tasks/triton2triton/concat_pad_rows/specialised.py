"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's tiled copy with one assumption baked in: hidden is a multiple of BLOCK_H =
1024 (true for every seen shape: 1024, 2048, 4096). The grid has hidden // 1024 column
tiles and the column mask is dropped, so when hidden % 1024 != 0 the last hidden % 1024
columns of every row are never written (and for hidden < 1024 nothing is). Every access
stays inside the buffers; the failure is an unwritten value, never a fault.
"""

import triton
import triton.language as tl

BLOCK_H = 1024
ROWS = 4


@triton.jit
def _pad_tile_even(packed_ptr, cu_ptr, out_ptr, rows, max_len, hidden, left_pad,
                   ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    c = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)      # assumes c < hidden
    r_ok = r < rows
    b = r // max_len
    pos = r % max_len
    start = tl.load(cu_ptr + b, mask=r_ok, other=0).to(tl.int64)
    n = tl.load(cu_ptr + b + 1, mask=r_ok, other=0).to(tl.int64) - start
    i = pos - (max_len - n) * left_pad
    valid = r_ok & (i >= 0) & (i < n)
    v = tl.load(packed_ptr + (start + i)[:, None] * hidden + c[None, :], mask=valid[:, None], other=0.0)
    tl.store(out_ptr + r[:, None] * hidden + c[None, :], v, mask=r_ok[:, None])


def concat_pad_rows(packed, cu_seqlens, padded, batch, max_len, total, hidden, left_pad):
    n_rows = batch * max_len
    tiles_h = hidden // BLOCK_H                                  # assumes hidden % BLOCK_H == 0
    if tiles_h == 0:
        return None
    grid = (triton.cdiv(n_rows, ROWS), tiles_h)
    _pad_tile_even[grid](packed, cu_seqlens, padded, n_rows, max_len, hidden, left_pad,
                         ROWS=ROWS, BLOCK_H=BLOCK_H, num_warps=4)
    return None

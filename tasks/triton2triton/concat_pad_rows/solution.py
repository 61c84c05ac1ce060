"""Reference solution for packed -> padded rows: correct for every shape.

Each padded sequence padded[b] is one contiguous run of max_len * hidden elements, and the
rows it takes from packed are one contiguous run too (rows cu[b] .. cu[b + 1], landing at
padded row off_b = 0, or max_len - len_b with left padding). So the copy is done flat, per
sequence, with no per-row index arithmetic and no lanes wasted on the row width:

- Program (chunk, b) writes elements [chunk * BLOCK, chunk * BLOCK + BLOCK) of padded[b]
  (BLOCK = 4096, 32 a thread). Element d comes from packed element
  (cu[b] - off_b) * hidden + d when off_b * hidden <= d < (off_b + len_b) * hidden, and is 0
  otherwise (masked out of the load: nothing is read for padding).
- When hidden % 8 == 0 the kernel gets hidden / 8 and multiplies it back, so the compiler
  knows that both runs and the bounds are 16-byte aligned: 16-byte loads and stores. Other
  hidden sizes use 2-byte accesses, one element a lane, consecutive lanes on consecutive
  elements (the earlier [rows, 1024 columns] tiles spent half their lanes on the 7
  columns past 1024 when hidden = 1031, and those rows could not be vectorised anyway).
- Grid: chunks on axis 0 (no 65535 limit; consecutive programs walk one sequence in
  order), batch on axis 1 (<= 512). Offsets of a sequence are int32 (max_len * hidden
  <= 2^28), the sequence and packed bases int64.
"""

import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _pad_flat(packed_ptr, cu_ptr, out_ptr, max_len, h_arg, left_pad,
              BLOCK: tl.constexpr, VEC: tl.constexpr):
    if VEC:
        hidden = h_arg * 8                   # h_arg = hidden / 8: rows are 16-byte aligned
    else:
        hidden = h_arg
    ck = tl.program_id(0)
    b = tl.program_id(1)
    start = tl.load(cu_ptr + b)
    n = tl.load(cu_ptr + b + 1) - start
    off = (max_len - n) * left_pad           # padded row where the sequence starts
    row_len = max_len * hidden               # elements of one padded sequence
    lo = off * hidden
    hi = lo + n * hidden
    d = ck * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(packed_ptr + (start - off).to(tl.int64) * hidden + d, mask=(d >= lo) & (d < hi), other=0.0)
    tl.store(out_ptr + b.to(tl.int64) * row_len + d, v, mask=d < row_len)


def concat_pad_rows(packed, cu_seqlens, padded, batch, max_len, total, hidden, left_pad):
    vec = hidden % 8 == 0
    grid = (triton.cdiv(max_len * hidden, BLOCK), batch)
    _pad_flat[grid](packed, cu_seqlens, padded, max_len, hidden // 8 if vec else hidden, left_pad,
                    BLOCK=BLOCK, VEC=vec, num_warps=4)
    return None

"""Reference solution for AWQ int4 dequantisation: correct for every shape.

- Each packed word is loaded once and fanned out to its 8 columns in registers: a
  [ROWS, WORDS, 8] tile per program (8 rows x 64 words = 4096 outputs), the nibble shifts a
  constant [8] vector in AWQ's order. The starting kernel loaded the word once per column
  (8 lanes each), did a division and a modulo per element and stored 2 bytes a lane.
- The last axis of 8 columns is contiguous in out and scales: each thread owns a word's 8
  outputs and writes them as one 16-byte vector (scales are read the same way).
- The zero-point word is loaded per (row, word) with the row's group (rows of one tile may
  straddle a group boundary when group_size < ROWS; they never do here, but nothing relies
  on it); these reads are L1/L2 hits shared by the rows of a group.
- A 2-D grid of short programs (row blocks x word blocks) instead of one long loop per row.
"""

import triton
import triton.language as tl

ROWS = 8
WORDS = 64


@triton.jit
def _dequant_tile(qw_ptr, qz_ptr, scales_ptr, out_ptr, K, N, group_size,
                  ROWS: tl.constexpr, WORDS: tl.constexpr):
    k = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)          # [R]
    m = tl.program_id(1) * WORDS + tl.arange(0, WORDS)                       # [W]
    j = tl.arange(0, 8)                                                      # [8]
    nw = N // 8
    g = k // group_size
    wmask = (k < K)[:, None] & (m < nw)[None, :]                             # [R, W]
    w = tl.load(qw_ptr + k[:, None] * nw + m[None, :], mask=wmask, other=0)
    zw = tl.load(qz_ptr + g[:, None] * nw + m[None, :], mask=wmask, other=0)
    shift = (((j // 2) + 4 * (j % 2)) * 4)[None, None, :]                    # AWQ order
    q = (w[:, :, None] >> shift) & 0xF
    z = (zw[:, :, None] >> shift) & 0xF
    col = m[None, :, None] * 8 + j[None, None, :]                            # [1, W, 8]
    mask3 = wmask[:, :, None] & (j < 8)[None, None, :]
    s = tl.load(scales_ptr + g[:, None, None] * N + col, mask=mask3, other=0.0).to(tl.float32)
    y = (q - z).to(tl.float32) * s
    tl.store(out_ptr + k[:, None, None] * N + col, y.to(out_ptr.dtype.element_ty), mask=mask3)


def awq_int4_dequant(qweight, qzeros, scales, out, k, n, group_size):
    grid = (triton.cdiv(k, ROWS), triton.cdiv(n // 8, WORDS))
    _dequant_tile[grid](qweight, qzeros, scales, out, k, n, group_size,
                        ROWS=ROWS, WORDS=WORDS, num_warps=4)
    return None

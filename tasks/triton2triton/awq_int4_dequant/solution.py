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
- The kernel gets the word count N / 8, not N, and forms N = 8 * (N / 8) itself: Triton only
  learns that a scalar argument is a multiple of 16 from its value, so with N = 9896 (N / 8
  prime) it could not prove the rows of out and scales 16-byte aligned and split every
  16-byte vector into eight 2-byte accesses (slower than the starting kernel). With the
  factor 8 visible, the out/scales accesses are 16-byte vectors for every N (N is always a
  multiple of 8); the packed words are 16-byte loads when N / 8 is a multiple of 16 and
  4-byte loads (still coalesced) otherwise.
"""

import triton
import triton.language as tl

ROWS = 8
WORDS = 64


@triton.jit
def _dequant_tile(qw_ptr, qz_ptr, scales_ptr, out_ptr, K, nw, group_size,
                  ROWS: tl.constexpr, WORDS: tl.constexpr):
    k = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)          # [R]
    m = tl.program_id(1) * WORDS + tl.arange(0, WORDS)                       # [W]
    j = tl.arange(0, 8)                                                      # [8]
    N = nw * 8                     # N from the word count: Triton then knows 8 | N
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
    _dequant_tile[grid](qweight, qzeros, scales, out, k, n // 8, group_size,
                        ROWS=ROWS, WORDS=WORDS, num_warps=4)
    return None

"""Reference solution for y = x^T: correct for every shape.

- Tiled: each program moves one [TILE_R, TILE_C] tile. It reads the tile row by row from x
  (contiguous along x's columns, 16-byte loads), transposes it in registers / shared
  memory (tl.trans: the compiler routes the layout change through shared memory) and
  writes it row by row into y (contiguous along y's columns, i.e. along x's rows), so both
  the reads and the writes are coalesced.
- 64 x 64 fp16 tiles (8 KB) with 4 warps: 16 elements a thread, enough tiles in flight
  for full bandwidth, small enough that 96-row or 128-column matrices waste little.
- Programs are laid out tile-column fastest so that consecutive programs write
  neighbouring stretches of y.
"""

import triton
import triton.language as tl

TILE_R = 64
TILE_C = 64


@triton.jit
def _transpose_tile(x_ptr, y_ptr, rows, cols, TILE_R: tl.constexpr, TILE_C: tl.constexpr):
    pid = tl.program_id(0)
    tiles_r = tl.cdiv(rows, TILE_R)
    # consecutive programs walk down x's rows (= along y's rows): their writes are adjacent
    pid_r = pid % tiles_r
    pid_c = pid // tiles_r
    r = (pid_r * TILE_R + tl.arange(0, TILE_R)).to(tl.int64)
    c = (pid_c * TILE_C + tl.arange(0, TILE_C)).to(tl.int64)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    tile = tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=mask)        # [TILE_R, TILE_C]
    tl.store(y_ptr + c[:, None] * rows + r[None, :], tl.trans(tile), mask=tl.trans(mask))


def transpose_2d(x, y, rows, cols):
    grid = (triton.cdiv(rows, TILE_R) * triton.cdiv(cols, TILE_C),)
    _transpose_tile[grid](x, y, rows, cols, TILE_R=TILE_R, TILE_C=TILE_C, num_warps=4)
    return None

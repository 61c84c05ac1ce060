"""Reference solution for the channel-last depthwise causal conv1d: correct for every shape.

- Tiles follow the memory layout: one program per [BLOCK_T time steps, BLOCK_C channels]
  tile of one sequence, channels innermost, so every load and store is a contiguous,
  vectorised row segment (16-byte accesses when dim is a multiple of 8), instead of a
  gather of 2-byte values dim apart.
- No serial time loop: the grid covers (channel blocks, time blocks, batch); every load of
  a program is issued at once.
- The width taps are unrolled (width is constexpr). Tap k reads the rows t - (width - 1) + k
  of the tile: the same rows shifted by one, so all but width - 1 of them come from L1, and
  the width - 1 rows above the tile from L2 (the program of the previous time block runs
  next to it); DRAM sees x about once.
- Weights and bias are loaded once per tile as [BLOCK_C] vectors; the sum and SiLU are fp32,
  y is rounded to fp16 once.
"""

import triton
import triton.language as tl

BLOCK_T = 32
BLOCK_C = 128


@triton.jit
def _causal_conv1d_tile(x_ptr, w_ptr, b_ptr, y_ptr, seqlen, dim,
                        WIDTH: tl.constexpr, SILU: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr):
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    t = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    b = tl.program_id(2)
    c_ok = c < dim
    base = b.to(tl.int64) * seqlen * dim
    acc = tl.zeros([BLOCK_T, BLOCK_C], dtype=tl.float32) + \
        tl.load(b_ptr + c, mask=c_ok, other=0.0).to(tl.float32)[None, :]
    for k in tl.static_range(WIDTH):
        w = tl.load(w_ptr + c * WIDTH + k, mask=c_ok, other=0.0).to(tl.float32)
        src = t - (WIDTH - 1) + k
        src_ok = (src >= 0) & (src < seqlen)
        xv = tl.load(x_ptr + base + src[:, None] * dim + c[None, :], mask=src_ok[:, None] & c_ok[None, :],
                     other=0.0)
        acc += w[None, :] * xv.to(tl.float32)
    if SILU:
        acc = acc * tl.sigmoid(acc)
    tl.store(y_ptr + base + t[:, None] * dim + c[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(t < seqlen)[:, None] & c_ok[None, :])


def causal_conv1d(x, weight, bias, y, batch, seqlen, dim, width, silu):
    grid = (triton.cdiv(dim, BLOCK_C), triton.cdiv(seqlen, BLOCK_T), batch)
    _causal_conv1d_tile[grid](x, weight, bias, y, seqlen, dim,
                              WIDTH=width, SILU=bool(silu), BLOCK_T=BLOCK_T, BLOCK_C=BLOCK_C, num_warps=4)
    return None

"""Reference solution for bias + exact GELU: one fused pass, correct for every shape.

- One kernel: x is read once and out written once (4 bytes an output instead of the
  starting kernel's 8), the bias-added value never leaves registers, and it stays fp32
  until out is rounded (one rounding instead of two).
- A 2-D tile per program, [ROWS tokens, BLOCK columns], over a 2-D grid: the bias slice is
  loaded once per program and reused by every row of the tile; tens of thousands of short
  programs keep enough loads in flight to saturate HBM. Each thread covers 8 contiguous fp16
  values, so loads and stores are 16-byte vectors when hidden is a multiple of 8 (Triton sees
  the divisibility of the row stride); other sizes stay correct with narrower accesses.
"""

import triton
import triton.language as tl

TILE = 4096          # outputs per program


@triton.jit
def _bias_gelu_tile(x_ptr, bias_ptr, out_ptr, tokens, hidden,
                    ROWS: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    cmask = c < hidden
    mask = (r < tokens)[:, None] & cmask[None, :]
    b = tl.load(bias_ptr + c, mask=cmask, other=0.0).to(tl.float32)
    offs = r[:, None] * hidden + c[None, :]
    h = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32) + b[None, :]
    y = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def bias_gelu_erf(x, bias, out, tokens, hidden):
    block = min(2048, triton.next_power_of_2(hidden))
    rows = max(1, TILE // block)
    grid = (triton.cdiv(tokens, rows), triton.cdiv(hidden, block))
    _bias_gelu_tile[grid](x, bias, out, tokens, hidden, ROWS=rows, BLOCK=block, num_warps=4)
    return None

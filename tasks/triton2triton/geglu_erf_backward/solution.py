"""Reference solution for the GEGLU (exact GELU) backward: one fused pass, correct for every
shape.

- One kernel writes both halves of dh: dout, a and g are read once (10 bytes a (token, j)
  pair instead of the starting kernels' 14), and Phi(g) is shared by both gradients.
- A [ROWS, BLOCK] tile per program over a 2-D grid (about 2048 pairs a program, tens of
  thousands of programs), 8 contiguous fp16 values a thread: 16-byte vectors whenever inner
  is a multiple of 8 (Triton sees the divisibility of the row strides); other sizes stay
  correct with narrower accesses.
"""

import triton
import triton.language as tl

TILE = 2048


@triton.jit
def _geglu_bwd_tile(dout_ptr, h_ptr, dh_ptr, tokens, inner,
                    ROWS: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (r < tokens)[:, None] & (c < inner)[None, :]
    d_offs = r[:, None] * inner + c[None, :]
    a_offs = r[:, None] * (2 * inner) + c[None, :]
    dy = tl.load(dout_ptr + d_offs, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(h_ptr + a_offs, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(h_ptr + a_offs + inner, mask=mask, other=0.0).to(tl.float32)
    cdf = 0.5 * (1.0 + tl.erf(g * 0.7071067811865476))
    pdf = tl.exp(-0.5 * g * g) * 0.3989422804014327
    tl.store(dh_ptr + a_offs, (dy * g * cdf).to(dh_ptr.dtype.element_ty), mask=mask)
    tl.store(dh_ptr + a_offs + inner, (dy * a * (cdf + g * pdf)).to(dh_ptr.dtype.element_ty),
             mask=mask)


def geglu_erf_backward(dout, h, dh, tokens, inner):
    block = min(1024, triton.next_power_of_2(inner))
    rows = max(1, TILE // block)
    grid = (triton.cdiv(tokens, rows), triton.cdiv(inner, block))
    _geglu_bwd_tile[grid](dout, h, dh, tokens, inner, ROWS=rows, BLOCK=block, num_warps=4)
    return None

"""Reference solution for the GEGLU (exact GELU) backward: one fused pass, correct for every
shape.

- One kernel writes both halves of dh: dout, a and g are read once (10 bytes a (token, j)
  pair instead of the starting kernels' 14), and Phi(g) is shared by both gradients.
- inner a multiple of 8 (`_geglu_bwd_tile`): a [ROWS, BLOCK] tile per program over a 2-D
  grid (about 2048 pairs a program, tens of thousands of programs), 8 contiguous fp16 values
  a thread, all accesses 16-byte vectors. Triton only learns that a scalar argument is a
  multiple of 16 from its value, so for inner = 8 * odd (6520, say) the kernel gets inner / 8
  and multiplies by 8 itself; otherwise it could not prove the rows aligned and would split
  every vector into 2-byte accesses.
- Any other inner (odd, primes): the rows of dout and of both halves of h start at
  arbitrary 2-byte offsets, so no vector access is possible, and the 2-D tile above (16
  scalar accesses per thread and tensor) ran slower than the starting kernels (0.84x on
  4001 x 2503).
  `_geglu_bwd_rows` keeps the starting kernels' access pattern, which streams well with
  2-byte accesses (one program per token walking its row in chunks of 512 columns, 4 pairs
  a thread per step), but fused: one pass, 10 bytes a pair instead of 14. When inner is
  even, the largest power of two (2 or 4) dividing it is passed the same way as above, so
  accesses are 4- or 8-byte vectors.
"""

import triton
import triton.language as tl

TILE = 2048
ROW_BLOCK = 512


@triton.jit
def _geglu_bwd_tile(dout_ptr, h_ptr, dh_ptr, tokens, inner_q,
                    IMULT: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    inner = inner_q * IMULT               # IMULT = 8: Triton knows 8 | inner
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


@triton.jit
def _geglu_bwd_rows(dout_ptr, h_ptr, dh_ptr, inner_q, IMULT: tl.constexpr, BLOCK: tl.constexpr):
    inner = inner_q * IMULT               # IMULT = 2 or 4 when inner is even
    row = tl.program_id(0).to(tl.int64)
    d_row = dout_ptr + row * inner
    a_row = h_ptr + row * (2 * inner)
    da_row = dh_ptr + row * (2 * inner)
    for start in range(0, inner, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < inner
        dy = tl.load(d_row + c, mask=mask, other=0.0).to(tl.float32)
        a = tl.load(a_row + c, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(a_row + inner + c, mask=mask, other=0.0).to(tl.float32)
        cdf = 0.5 * (1.0 + tl.erf(g * 0.7071067811865476))
        pdf = tl.exp(-0.5 * g * g) * 0.3989422804014327
        tl.store(da_row + c, (dy * g * cdf).to(dh_ptr.dtype.element_ty), mask=mask)
        tl.store(da_row + inner + c, (dy * a * (cdf + g * pdf)).to(dh_ptr.dtype.element_ty),
                 mask=mask)


def geglu_erf_backward(dout, h, dh, tokens, inner):
    if inner % 8 == 0:
        block = min(1024, triton.next_power_of_2(inner))
        rows = max(1, TILE // block)
        grid = (triton.cdiv(tokens, rows), triton.cdiv(inner, block))
        if inner % 16 == 0:
            iq, imult = inner, 1
        else:
            iq, imult = inner // 8, 8
        _geglu_bwd_tile[grid](dout, h, dh, tokens, iq, IMULT=imult, ROWS=rows, BLOCK=block,
                              num_warps=4)
        return None
    imult = 4 if inner % 4 == 0 else 2 if inner % 2 == 0 else 1
    _geglu_bwd_rows[(tokens,)](dout, h, dh, inner // imult, IMULT=imult, BLOCK=ROW_BLOCK,
                               num_warps=4)
    return None

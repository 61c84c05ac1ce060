"""Starting kernels for the GEGLU (exact GELU) backward: correct for every shape, deliberately
simple.

One kernel per half of the gradient, the way autograd produces them: the first writes
d/da = dout * gelu(g), the second d/dg = dout * a * gelu'(g); each reads dout and the gate
again. Each kernel runs one program per token that walks the row in fixed chunks of 256
columns, with default launch settings. Everything in fp32, rounded once.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _grad_a_rows(dout_ptr, h_ptr, dh_ptr, inner, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, inner, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < inner
        dy = tl.load(dout_ptr + row * inner + c, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(h_ptr + row * (2 * inner) + inner + c, mask=mask, other=0.0).to(tl.float32)
        cdf = 0.5 * (1.0 + tl.erf(g * 0.7071067811865476))
        tl.store(dh_ptr + row * (2 * inner) + c, (dy * g * cdf).to(dh_ptr.dtype.element_ty),
                 mask=mask)


@triton.jit
def _grad_g_rows(dout_ptr, h_ptr, dh_ptr, inner, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, inner, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < inner
        dy = tl.load(dout_ptr + row * inner + c, mask=mask, other=0.0).to(tl.float32)
        a = tl.load(h_ptr + row * (2 * inner) + c, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(h_ptr + row * (2 * inner) + inner + c, mask=mask, other=0.0).to(tl.float32)
        cdf = 0.5 * (1.0 + tl.erf(g * 0.7071067811865476))
        pdf = tl.exp(-0.5 * g * g) * 0.3989422804014327
        tl.store(dh_ptr + row * (2 * inner) + inner + c,
                 (dy * a * (cdf + g * pdf)).to(dh_ptr.dtype.element_ty), mask=mask)


def geglu_erf_backward(dout, h, dh, tokens, inner):
    _grad_a_rows[(tokens,)](dout, h, dh, inner, BLOCK=BLOCK)
    _grad_g_rows[(tokens,)](dout, h, dh, inner, BLOCK=BLOCK)
    return None

"""Starting kernel for SwiGLU: correct for every shape, deliberately simple.

Written the way the PyTorch expression silu(gate) * up reads, one step at a time, with two
kernels: the first writes silu(gate) into out, the second reads out back and multiplies it
by up. Each kernel runs one program per token that walks the row in fixed chunks of 256
columns, with default launch settings. (silu(gate) is rounded to fp16 in between, as eager
PyTorch would do.)
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _silu_rows(x_ptr, out_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    gate_row = x_ptr + row * (2 * hidden)
    out_row = out_ptr + row * hidden
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hidden
        g = tl.load(gate_row + c, mask=mask, other=0.0).to(tl.float32)
        s = g / (1.0 + tl.exp(-g))
        tl.store(out_row + c, s.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _mul_up_rows(x_ptr, out_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    up_row = x_ptr + row * (2 * hidden) + hidden
    out_row = out_ptr + row * hidden
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hidden
        s = tl.load(out_row + c, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(up_row + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + c, (s * u).to(out_ptr.dtype.element_ty), mask=mask)


def swiglu(x, out, tokens, hidden):
    _silu_rows[(tokens,)](x, out, hidden, BLOCK=BLOCK)
    _mul_up_rows[(tokens,)](x, out, hidden, BLOCK=BLOCK)
    return None

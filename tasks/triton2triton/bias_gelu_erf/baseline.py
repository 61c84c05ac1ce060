"""Starting kernel for bias + exact GELU: correct for every shape, deliberately simple.

Written the way the PyTorch expression gelu(x + bias) reads, one step at a time, with two
kernels: the first writes x + bias into out, the second reads out back and applies the GELU
in place. Each kernel runs one program per token that walks the row in fixed chunks of 256
columns, with default launch settings. (x + bias is rounded to fp16 in between, as eager
PyTorch would do.)
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _add_bias_rows(x_ptr, bias_ptr, out_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hidden
        x = tl.load(x_ptr + row * hidden + c, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(bias_ptr + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * hidden + c, (x + b).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gelu_rows(out_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hidden
        h = tl.load(out_ptr + row * hidden + c, mask=mask, other=0.0).to(tl.float32)
        y = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
        tl.store(out_ptr + row * hidden + c, y.to(out_ptr.dtype.element_ty), mask=mask)


def bias_gelu_erf(x, bias, out, tokens, hidden):
    _add_bias_rows[(tokens,)](x, bias, out, hidden, BLOCK=BLOCK)
    _gelu_rows[(tokens,)](out, hidden, BLOCK=BLOCK)
    return None

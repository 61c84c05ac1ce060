"""Starting kernel for GeGLU (tanh GELU): correct for every shape, deliberately simple.

Written the way the PyTorch expression gelu(gate, approximate='tanh') * up reads, one step
at a time, with two kernels: the first writes gelu(gate) into out, the second reads out back
and multiplies it by up. Each kernel runs one program per token that walks the row in fixed
chunks of 256 columns, with default launch settings. (gelu(gate) is rounded to fp16 in
between, as eager PyTorch would do.) tanh(z) is formed as 1 - 2 / (1 + exp(2 z)), which
saturates correctly to +-1 for large |z|.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _gelu_tanh_rows(gate_ptr, out_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hidden
        g = tl.load(gate_ptr + row * hidden + c, mask=mask, other=0.0).to(tl.float32)
        z = 0.7978845608028654 * (g + 0.044715 * g * g * g)
        t = 1.0 - 2.0 / (1.0 + tl.exp(2.0 * z))
        tl.store(out_ptr + row * hidden + c, (0.5 * g * (1.0 + t)).to(out_ptr.dtype.element_ty),
                 mask=mask)


@triton.jit
def _mul_up_rows(up_ptr, out_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hidden
        a = tl.load(out_ptr + row * hidden + c, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(up_ptr + row * hidden + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * hidden + c, (a * u).to(out_ptr.dtype.element_ty), mask=mask)


def geglu_tanh(gate, up, out, tokens, hidden):
    _gelu_tanh_rows[(tokens,)](gate, out, hidden, BLOCK=BLOCK)
    _mul_up_rows[(tokens,)](up, out, hidden, BLOCK=BLOCK)
    return None

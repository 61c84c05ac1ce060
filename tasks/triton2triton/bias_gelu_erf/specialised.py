"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

It walks x and out as one flat array in blocks of 1024 and assumes hidden is a multiple of
1024 (true of every seen shape), so that a block never crosses a row: the bias offset is
worked out once per program from the block's first element, with no per-element modulo.
When hidden is not a multiple of 1024 a block that runs into the next row adds the wrong
bias values to its tail: the values are wrong, quietly. Bias loads are bounded by hidden and
the rest by the size of x, so every access stays inside the buffers.
"""

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _bias_gelu_flat(x_ptr, bias_ptr, out_ptr, hidden, total, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    col0 = start % hidden                      # one row per block: "hidden % BLOCK == 0"
    o = start + tl.arange(0, BLOCK)
    c = col0 + tl.arange(0, BLOCK)
    mask = o < total
    b = tl.load(bias_ptr + c, mask=mask & (c < hidden), other=0.0).to(tl.float32)
    h = tl.load(x_ptr + o, mask=mask, other=0.0).to(tl.float32) + b
    y = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    tl.store(out_ptr + o, y.to(out_ptr.dtype.element_ty), mask=mask)


def bias_gelu_erf(x, bias, out, tokens, hidden):
    total = tokens * hidden
    _bias_gelu_flat[(triton.cdiv(total, BLOCK),)](x, bias, out, hidden, total, BLOCK=BLOCK,
                                                   num_warps=4)
    return None

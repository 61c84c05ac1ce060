"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

It walks out as one flat array in blocks of 2048 and assumes hidden is a multiple of 2048
(true of every seen shape), so that a block never crosses a row: the token index is worked
out once per program from the block's first element, with no per-element division. When
hidden is not a multiple of 2048 a block that starts in row t and runs into row t + 1 reads
row t + 1's outputs from the wrong places (up of row t as the gate, the gate of row t + 1 as
up): the values are wrong, quietly. Loads are bounded by the size of x and stores by the size
of out, so every access stays inside the buffers and the failure is never a fault.
"""

import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _swiglu_flat(x_ptr, out_ptr, hidden, total, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    row = start // hidden                      # one row per block: "hidden % BLOCK == 0"
    o = start + tl.arange(0, BLOCK)
    col = o - row * hidden
    g_offs = row * (2 * hidden) + col
    u_offs = g_offs + hidden
    in_out = o < total
    g = tl.load(x_ptr + g_offs, mask=in_out & (g_offs < 2 * total), other=0.0).to(tl.float32)
    u = tl.load(x_ptr + u_offs, mask=in_out & (u_offs < 2 * total), other=0.0).to(tl.float32)
    y = g / (1.0 + tl.exp(-g)) * u
    tl.store(out_ptr + o, y.to(out_ptr.dtype.element_ty), mask=in_out)


def swiglu(x, out, tokens, hidden):
    total = tokens * hidden
    _swiglu_flat[(triton.cdiv(total, BLOCK),)](x, out, hidden, total, BLOCK=BLOCK, num_warps=8)
    return None

"""Reference solution for SwiGLU: one fused pass, correct for every shape.

- One kernel: gate and up are read once, out is written once (6 bytes an output instead of
  the starting kernel's 10), and silu(gate) * up is formed in fp32 and rounded once.
- A 2-D grid (token, column block) of short programs instead of one long loop per token:
  tens of thousands of programs keep enough loads in flight to saturate HBM, also when there
  are few tokens. Each thread covers 8 contiguous fp16 values, so loads and stores are
  16-byte vectors whenever hidden is a multiple of 8 (Triton sees the divisibility of the
  row stride); other sizes stay correct with narrower accesses.
"""

import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _swiglu_tile(x_ptr, out_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = c < hidden
    gate_row = x_ptr + row * (2 * hidden)
    g = tl.load(gate_row + c, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(gate_row + hidden + c, mask=mask, other=0.0).to(tl.float32)
    y = g / (1.0 + tl.exp(-g)) * u
    tl.store(out_ptr + row * hidden + c, y.to(out_ptr.dtype.element_ty), mask=mask)


def swiglu(x, out, tokens, hidden):
    block = min(BLOCK, triton.next_power_of_2(hidden))
    num_warps = max(1, min(8, block // 256))       # 8 fp16 values a thread
    grid = (tokens, triton.cdiv(hidden, block))
    _swiglu_tile[grid](x, out, hidden, BLOCK=block, num_warps=num_warps)
    return None

"""Starting kernel for the linear recurrence scan: correct for every shape, simple.

One program per (batch, block of 256 channels) walks the sequence one step at a time,
exactly as the recurrence is written: load a_t and x_t for its channels, h = a_t * h + x_t
in fp32 registers, store h_t. Each step is one dependent round trip to memory.
Default launch settings.
"""

import triton
import triton.language as tl

BLOCK_C = 256


@triton.jit
def _scan_steps(a_ptr, x_ptr, h_ptr, seqlen, channels, BLOCK_C: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = c < channels
    base = b * seqlen * channels + c
    h = tl.zeros([BLOCK_C], dtype=tl.float32)
    for t in range(0, seqlen):
        offs = base + t * channels
        a = tl.load(a_ptr + offs, mask=mask, other=0.0)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        h = a * h + x
        tl.store(h_ptr + offs, h, mask=mask)


def linear_recurrence_scan(a, x, h, batch, seqlen, channels):
    grid = (batch, triton.cdiv(channels, BLOCK_C))
    _scan_steps[grid](a, x, h, seqlen, channels, BLOCK_C=BLOCK_C)
    return None

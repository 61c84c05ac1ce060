"""Starting kernel for the channel-last depthwise causal conv1d: correct for every shape,
deliberately simple.

One program per (batch, channel) sequence, batch * dim programs, as the math reads: a
channel's filter slides along its time series. The program loads the channel's bias once,
then walks time in steps of BLOCK_T = 256: for each tap k it loads the tap's weight (a
cached scalar) and the shifted slice x[b, t - (width - 1) + k, c] (masked: zeros before the
start), accumulates in fp32, applies SiLU and stores the slice. In this layout the 256
values of a slice are dim elements apart: every load and store gathers / scatters single
2-byte values. The time loop runs in one program, one step after the other.
"""

import triton
import triton.language as tl

BLOCK_T = 256


@triton.jit
def _causal_conv1d_channel(x_ptr, w_ptr, b_ptr, y_ptr, seqlen, dim,
                           WIDTH: tl.constexpr, SILU: tl.constexpr, BLOCK_T: tl.constexpr):
    pid = tl.program_id(0)                      # b * dim + c
    b = pid // dim
    c = pid % dim
    base = b.to(tl.int64) * seqlen * dim + c
    bias = tl.load(b_ptr + c).to(tl.float32)
    rt = tl.arange(0, BLOCK_T)
    for t0 in range(0, seqlen, BLOCK_T):
        t = t0 + rt
        acc = tl.zeros([BLOCK_T], dtype=tl.float32) + bias
        for k in tl.static_range(WIDTH):
            w = tl.load(w_ptr + c * WIDTH + k).to(tl.float32)
            src = t - (WIDTH - 1) + k
            xv = tl.load(x_ptr + base + src.to(tl.int64) * dim, mask=(src >= 0) & (src < seqlen), other=0.0)
            acc += w * xv.to(tl.float32)
        if SILU:
            acc = acc * tl.sigmoid(acc)
        tl.store(y_ptr + base + t.to(tl.int64) * dim, acc.to(y_ptr.dtype.element_ty), mask=t < seqlen)


def causal_conv1d(x, weight, bias, y, batch, seqlen, dim, width, silu):
    _causal_conv1d_channel[(batch * dim,)](x, weight, bias, y, seqlen, dim,
                                           WIDTH=width, SILU=bool(silu), BLOCK_T=BLOCK_T)
    return None

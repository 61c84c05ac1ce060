"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

It is the reference solution's register-slab path with one assumption taken from the seen
shapes: no column is longer than 1024 tokens (196, 576 and 1024 there), so the whole
column block always fits one [<= 1024, BLOCK_S] register tile and the two-pass path for
long columns is dropped. With more tokens (2048, Whisper's 1500) the softmax is taken over
the first 1024 tokens only and the later rows of y are never written. Every access stays
inside x and y.
"""

import triton
import triton.language as tl

MAX_T_BLOCK = 1024   # "no column is longer than 1024 tokens"
SLAB = 16384


@triton.jit
def _softmax_slab(x_ptr, y_ptr, tokens, slots, T_BLOCK: tl.constexpr, BLOCK_S: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    s = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    t = tl.arange(0, T_BLOCK)
    mask = (t[:, None] < tokens) & (s[None, :] < slots)
    offs = b * tokens * slots + t[:, None] * slots + s[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    m = tl.where(m == -float("inf"), 0.0, m)
    e = tl.exp(x - m[None, :])
    den = tl.sum(e, axis=0)
    den = tl.where(den == 0.0, 1.0, den)
    tl.store(y_ptr + offs, e / den[None, :], mask=mask)


def softmax_middle_dim(x, y, batch, tokens, slots):
    t_block = min(triton.next_power_of_2(tokens), MAX_T_BLOCK)
    block_s = min(triton.next_power_of_2(slots), 128, max(16, SLAB // t_block))
    num_warps = max(4, min(16, t_block * block_s // 1024))
    grid = (batch, triton.cdiv(slots, block_s))
    _softmax_slab[grid](x, y, tokens, slots, T_BLOCK=t_block, BLOCK_S=block_s, num_warps=num_warps)
    return None

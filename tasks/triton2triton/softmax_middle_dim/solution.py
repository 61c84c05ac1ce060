"""Reference solution for the softmax over the middle dimension: correct for every shape.

The starting kernel gives every column its own program and walks it three times with
strided 4-byte loads (each one its own memory sector). Here a program owns a block of
BLOCK_S adjacent columns of one batch, so every load reads BLOCK_S contiguous floats:

- up to 1024 tokens: the whole [tokens, BLOCK_S] slab (next power of two of tokens x
  BLOCK_S, about 16384 elements) is loaded once into registers, reduced over the tokens
  axis (max, then sum of exp) and written: one read, one write;
- longer columns: two passes over [256, 32] tiles, the first keeping an online
  (max, sum of exp) per column (rescaled once per tile), the second writing the
  probabilities (the slab is re-read, mostly from L2).
"""

import triton
import triton.language as tl

MAX_T_BLOCK = 1024
SLAB = 16384
LONG_T = 256
LONG_S = 32


@triton.jit
def _softmax_slab(x_ptr, y_ptr, tokens, slots, T_BLOCK: tl.constexpr, BLOCK_S: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    s = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    t = tl.arange(0, T_BLOCK)
    mask = (t[:, None] < tokens) & (s[None, :] < slots)
    offs = b * tokens * slots + t[:, None] * slots + s[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    m = tl.where(m == -float("inf"), 0.0, m)          # columns past the end stay finite
    e = tl.exp(x - m[None, :])
    den = tl.sum(e, axis=0)
    den = tl.where(den == 0.0, 1.0, den)
    tl.store(y_ptr + offs, e / den[None, :], mask=mask)


@triton.jit
def _softmax_long(x_ptr, y_ptr, tokens, slots, BLOCK_T: tl.constexpr, BLOCK_S: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    s = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    s_ok = s < slots
    base = b * tokens * slots
    rows = tl.arange(0, BLOCK_T)
    m = tl.full([BLOCK_S], -float("inf"), dtype=tl.float32)
    den = tl.zeros([BLOCK_S], dtype=tl.float32)
    for t0 in range(0, tokens, BLOCK_T):
        t = t0 + rows
        mask = (t[:, None] < tokens) & s_ok[None, :]
        x = tl.load(x_ptr + base + t[:, None] * slots + s[None, :], mask=mask, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        den = den * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe[None, :]), axis=0)
        m = m_new
    m = tl.where(m == -float("inf"), 0.0, m)
    inv = 1.0 / tl.where(den == 0.0, 1.0, den)
    for t0 in range(0, tokens, BLOCK_T):
        t = t0 + rows
        mask = (t[:, None] < tokens) & s_ok[None, :]
        offs = base + t[:, None] * slots + s[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        tl.store(y_ptr + offs, tl.exp(x - m[None, :]) * inv[None, :], mask=mask)


def softmax_middle_dim(x, y, batch, tokens, slots):
    t_block = triton.next_power_of_2(tokens)
    if t_block <= MAX_T_BLOCK:
        block_s = min(triton.next_power_of_2(slots), 128, max(16, SLAB // t_block))
        num_warps = max(4, min(16, t_block * block_s // 1024))
        grid = (batch, triton.cdiv(slots, block_s))
        _softmax_slab[grid](x, y, tokens, slots, T_BLOCK=t_block, BLOCK_S=block_s, num_warps=num_warps)
        return None
    block_s = min(triton.next_power_of_2(slots), LONG_S)
    grid = (batch, triton.cdiv(slots, block_s))
    _softmax_long[grid](x, y, tokens, slots, BLOCK_T=LONG_T, BLOCK_S=block_s, num_warps=8)
    return None

"""Reference solution for the QKV head split: correct for every shape.

- One launch for all three outputs: a program owns a block of BLOCK_S tokens of one
  (batch, head) pair and moves the q, k and v tiles of that block ([BLOCK_S, head_dim] each,
  unrolled over the three): 3 x 4096 values a program instead of head_dim values. The
  starting kernel spent a program (and for head_dim 64 most of its 128 threads idle) on each
  64-value row.
- Stores are fully contiguous (BLOCK_S * head_dim values of one output), loads are head_dim
  contiguous values a token; each thread moves 8 contiguous fp16 values (16-byte vectors when
  head_dim is a multiple of 8, which every model's is).
"""

import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _split_tile(qkv_ptr, q_ptr, k_ptr, v_ptr, seq, heads, head_dim,
                BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    h = tl.program_id(1).to(tl.int64)
    b = tl.program_id(2).to(tl.int64)
    d = tl.arange(0, BLOCK_D)
    mask = (s < seq)[:, None] & (d < head_dim)[None, :]
    row = b * seq + s                                               # token index, [BLOCK_S]
    src = (row * 3 * heads + h)[:, None] * head_dim + d[None, :]    # which = 0
    dst = ((b * heads + h) * seq + s)[:, None] * head_dim + d[None, :]
    hd = heads * head_dim
    tl.store(q_ptr + dst, tl.load(qkv_ptr + src, mask=mask), mask=mask)
    tl.store(k_ptr + dst, tl.load(qkv_ptr + src + hd, mask=mask), mask=mask)
    tl.store(v_ptr + dst, tl.load(qkv_ptr + src + 2 * hd, mask=mask), mask=mask)


def qkv_split_heads(qkv, q, k, v, batch, seq, heads, head_dim):
    block_d = triton.next_power_of_2(head_dim)
    block_s = max(1, min(TILE // block_d, triton.next_power_of_2(seq)))
    grid = (triton.cdiv(seq, block_s), heads, batch)
    _split_tile[grid](qkv, q, k, v, seq, heads, head_dim,
                      BLOCK_S=block_s, BLOCK_D=block_d, num_warps=4)
    return None

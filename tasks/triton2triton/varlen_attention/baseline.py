"""Starting kernel for packed variable-length causal attention: correct for every shape,
deliberately simple.

One program per (tile of BLOCK_M = 16 queries, sequence, query head); the grid covers
cdiv(max_seqlen, 16) tiles per sequence and the programs past a sequence's end return at
once. A program loads its [16, head_dim] query tile and visits the keys of its sequence up
to the tile's last query twice, BLOCK_N = 32 at a time:
  pass 1: scores q k^T (tl.dot), causal mask, running row maxima and denominators;
  pass 2: the scores again, p = exp(s - m) / l, and o += p v (tl.dot).
Small tiles, k read twice and v once per 16 queries, every load masked.
"""

import triton
import triton.language as tl

LOG2E = 1.4426950408889634
BLOCK_M = 16
BLOCK_N = 32


@triton.jit
def _varlen_two_pass(q_ptr, k_ptr, v_ptr, cu_ptr, o_ptr, heads, kv_heads, head_dim, qk_scale,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    m_tile = tl.program_id(0)
    seq = tl.program_id(1)
    h = tl.program_id(2)
    start = tl.load(cu_ptr + seq)
    length = tl.load(cu_ptr + seq + 1) - start
    m0 = m_tile * BLOCK_M
    if m0 >= length:
        return
    hk = h // (heads // kv_heads)
    rm = m0 + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    m_ok = rm < length
    d_ok = rd < head_dim

    q_rows = (start + rm).to(tl.int64) * heads + h
    q = tl.load(q_ptr + q_rows[:, None] * head_dim + rd[None, :], mask=m_ok[:, None] & d_ok[None, :], other=0.0)
    hi = tl.minimum(m0 + BLOCK_M, length)

    # pass 1: row maxima and denominators
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    for n0 in range(0, hi, BLOCK_N):
        keys = n0 + rn
        n_ok = keys < hi
        kv_rows = (start + keys).to(tl.int64) * kv_heads + hk
        kt = tl.load(k_ptr + kv_rows[None, :] * head_dim + rd[:, None], mask=n_ok[None, :] & d_ok[:, None], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        s = tl.where(keys[None, :] <= rm[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        l_i = l_i * tl.exp2(m_i - m_new) + tl.sum(tl.exp2(s - m_new[:, None]), axis=1)
        m_i = m_new

    # pass 2: normalised probabilities times v
    inv_l = 1.0 / l_i
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    for n0 in range(0, hi, BLOCK_N):
        keys = n0 + rn
        n_ok = keys < hi
        kv_rows = (start + keys).to(tl.int64) * kv_heads + hk
        kt = tl.load(k_ptr + kv_rows[None, :] * head_dim + rd[:, None], mask=n_ok[None, :] & d_ok[:, None], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        s = tl.where(keys[None, :] <= rm[:, None], s, float("-inf"))
        p = tl.exp2(s - m_i[:, None]) * inv_l[:, None]
        vb = tl.load(v_ptr + kv_rows[:, None] * head_dim + rd[None, :], mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        acc = tl.dot(p.to(vb.dtype), vb, acc)

    tl.store(o_ptr + q_rows[:, None] * head_dim + rd[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=m_ok[:, None] & d_ok[None, :])


def varlen_attention(q, k, v, cu_seqlens, o, total_tokens, num_seqs, heads, kv_heads, head_dim, max_seqlen,
                     sm_scale):
    grid = (triton.cdiv(max_seqlen, BLOCK_M), num_seqs, heads)
    _varlen_two_pass[grid](q, k, v, cu_seqlens, o, heads, kv_heads, head_dim, sm_scale * LOG2E,
                           BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                           BLOCK_D=max(16, triton.next_power_of_2(head_dim)))
    return None

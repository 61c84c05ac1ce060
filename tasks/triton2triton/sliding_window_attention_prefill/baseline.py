"""Starting kernel for sliding-window causal attention: correct for every shape, simple.

A flash-attention forward: one program per (block of BLOCK_M = 64 queries, batch, head). It
streams the keys and values of its kv head in blocks of BLOCK_N = 64 with an online softmax
(tensor-core products, fp32 statistics), from key 0 up to the block's last query, and
applies the causal and the sliding-window mask to every block: key blocks that lie entirely
before the window are still loaded, multiplied and masked out. head_dim is padded to a
power of two with masked loads. Default launch settings otherwise.
"""

import triton
import triton.language as tl

LOG2E = 1.4426950408889634
BLOCK_M = 64
BLOCK_N = 64


@triton.jit
def _swa_fwd(q_ptr, k_ptr, v_ptr, o_ptr, seq, heads, kv_heads, head_dim, window, qk_scale,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    m_blk = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // heads
    h = bh % heads
    g = h // (heads // kv_heads)
    rm = m_blk * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    d_ok = rd < head_dim
    m_ok = rm < seq
    q_rows = ((b * seq + rm).to(tl.int64) * heads + h) * head_dim
    q = tl.load(q_ptr + q_rows[:, None] + rd[None, :], mask=m_ok[:, None] & d_ok[None, :], other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    hi = tl.minimum((m_blk + 1) * BLOCK_M, seq)
    for start_n in range(0, hi, BLOCK_N):
        n = start_n + rn
        n_ok = n < seq
        kv_rows = ((b * seq + n).to(tl.int64) * kv_heads + g) * head_dim
        kt = tl.load(k_ptr + kv_rows[None, :] + rd[:, None], mask=n_ok[None, :] & d_ok[:, None], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        visible = (n[None, :] <= rm[:, None]) & (rm[:, None] - n[None, :] < window) & n_ok[None, :]
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)     # rows with nothing visible yet
        alpha = tl.exp2(m_i - m_safe)
        p = tl.exp2(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_rows[:, None] + rd[None, :], mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    o = acc / l_i[:, None]
    tl.store(o_ptr + q_rows[:, None] + rd[None, :], o.to(o_ptr.dtype.element_ty), mask=m_ok[:, None] & d_ok[None, :])


def sliding_window_attention(q, k, v, o, batch, seq, heads, kv_heads, head_dim, window, sm_scale):
    grid = (triton.cdiv(seq, BLOCK_M), batch * heads)
    _swa_fwd[grid](q, k, v, o, seq, heads, kv_heads, head_dim, window, sm_scale * LOG2E,
                   BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=triton.next_power_of_2(head_dim))
    return None

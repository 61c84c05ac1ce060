"""Reference solution for sliding-window causal attention: visit only the window.

A flash-attention forward, one program per (block of BLOCK_M = 128 queries, batch, head),
streaming keys and values in blocks of BLOCK_N = 64 with an online softmax in exp2
(tensor-core products, fp32 statistics, probabilities rounded to fp16 for p @ v). The
starting kernel walks every key block from 0 to the diagonal and masks all of them; here
the key range of a query block is split in three:
  1. [lo, full_lo): the blocks at the lower edge of the window, where some (query, key)
     pairs are outside it: window + causal mask.
  2. [full_lo, start_m): blocks that every query of the block sees: no mask, no bounds.
  3. [start_m, start_m + BLOCK_M): the diagonal blocks: window + causal + length mask.
lo is the block holding the first key the first query sees (start_m - window + 1); blocks
before it are never loaded, so a query block costs ~window / BLOCK_N key blocks instead of
start_m / BLOCK_N. head_dim that is not a power of two (80, 96) is padded to BLOCK_D with
masked loads. Rows whose visible keys all lie in later blocks keep a running maximum of
-inf; it is replaced by 0 in the exponentials so they never produce NaN.
"""

import triton
import triton.language as tl

LOG2E = 1.4426950408889634
BLOCK_M = 128
BLOCK_N = 64


@triton.jit
def _attend(acc, l_i, m_i, q, k_ptr, v_ptr, kv_base, kv_stride, rm, rn, rd, d_ok, seq, window,
            qk_scale, lo, hi, MASKED: tl.constexpr, BLOCK_N: tl.constexpr):
    for start_n in range(lo, hi, BLOCK_N):
        n = start_n + rn
        kv_rows = kv_base + n.to(tl.int64) * kv_stride
        if MASKED:
            n_ok = n < seq
            kt = tl.load(k_ptr + kv_rows[None, :] + rd[:, None], mask=n_ok[None, :] & d_ok[:, None], other=0.0)
            v = tl.load(v_ptr + kv_rows[:, None] + rd[None, :], mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        else:
            kt = tl.load(k_ptr + kv_rows[None, :] + rd[:, None], mask=d_ok[:, None], other=0.0)
            v = tl.load(v_ptr + kv_rows[:, None] + rd[None, :], mask=d_ok[None, :], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        if MASKED:
            visible = (n[None, :] <= rm[:, None]) & (rm[:, None] - n[None, :] < window) & n_ok[None, :]
            s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_safe)
        p = tl.exp2(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _swa_fwd_window(q_ptr, k_ptr, v_ptr, o_ptr, seq, heads, kv_heads, head_dim, window, qk_scale,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    m_blk = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // heads
    h = bh % heads
    g = h // (heads // kv_heads)
    start_m = m_blk * BLOCK_M
    rm = start_m + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    d_ok = rd < head_dim
    m_ok = rm < seq
    q_rows = ((b * seq + rm).to(tl.int64) * heads + h) * head_dim
    q = tl.load(q_ptr + q_rows[:, None] + rd[None, :], mask=m_ok[:, None] & d_ok[None, :], other=0.0)
    kv_base = (b.to(tl.int64) * seq * kv_heads + g) * head_dim
    kv_stride = kv_heads * head_dim

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    lo = tl.maximum(start_m - window + 1, 0) // BLOCK_N * BLOCK_N
    full_lo = tl.maximum(tl.cdiv(tl.maximum(start_m + BLOCK_M - window, 0), BLOCK_N) * BLOCK_N, lo)
    edge_hi = tl.minimum(full_lo, start_m)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptr, v_ptr, kv_base, kv_stride, rm, rn, rd, d_ok, seq,
                            window, qk_scale, lo, edge_hi, True, BLOCK_N)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptr, v_ptr, kv_base, kv_stride, rm, rn, rd, d_ok, seq,
                            window, qk_scale, edge_hi, start_m, False, BLOCK_N)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_ptr, v_ptr, kv_base, kv_stride, rm, rn, rd, d_ok, seq,
                            window, qk_scale, start_m, tl.minimum(start_m + BLOCK_M, seq), True, BLOCK_N)

    o = acc / l_i[:, None]
    tl.store(o_ptr + q_rows[:, None] + rd[None, :], o.to(o_ptr.dtype.element_ty), mask=m_ok[:, None] & d_ok[None, :])


def sliding_window_attention(q, k, v, o, batch, seq, heads, kv_heads, head_dim, window, sm_scale):
    grid = (triton.cdiv(seq, BLOCK_M), batch * heads)
    _swa_fwd_window[grid](q, k, v, o, seq, heads, kv_heads, head_dim, window, sm_scale * LOG2E,
                          BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=triton.next_power_of_2(head_dim),
                          num_warps=8, num_stages=3)
    return None

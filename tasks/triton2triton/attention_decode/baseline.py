"""Starting kernel for grouped-query decode attention: correct for every shape, deliberately
simple.

One program per (sequence, query head), batch * q_heads programs in all. Each walks the whole
cache of its kv head in blocks of BLOCK_N keys with an online softmax: scores are an
elementwise product of the [BLOCK_N, BLOCK_D] key block with q summed over head_dim, a
running maximum and denominator are kept, and p[:, None] * v_block is added into a
[BLOCK_N, BLOCK_D] fp32 accumulator (rescaled when the maximum grows) that is summed over
its rows at the end. No tensor cores; the kv_len loop runs in one program, so a call has only
batch * q_heads programs; each kv head is read by each of the query heads of its group.
Every load is masked.
"""

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _decode_one_head(q_ptr, k_ptr, v_ptr, o_ptr, q_heads, kv_heads, kv_len, head_dim, qk_scale,
                     BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)                  # b * q_heads + h
    b = pid // q_heads
    h = pid % q_heads
    g = h // (q_heads // kv_heads)
    kv_base = (b * kv_heads + g).to(tl.int64) * kv_len * head_dim
    rd = tl.arange(0, BLOCK_D)
    d_ok = rd < head_dim
    rn = tl.arange(0, BLOCK_N)

    q = tl.load(q_ptr + pid.to(tl.int64) * head_dim + rd, mask=d_ok, other=0.0).to(tl.float32) * qk_scale

    m_i = tl.max(tl.full([BLOCK_N], float("-inf"), tl.float32), axis=0)
    l_i = tl.sum(tl.zeros([BLOCK_N], tl.float32), axis=0)
    acc = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    for start in range(0, kv_len, BLOCK_N):
        keys = start + rn
        n_ok = keys < kv_len
        offs = kv_base + keys[:, None] * head_dim + rd[None, :]
        kb = tl.load(k_ptr + offs, mask=n_ok[:, None] & d_ok[None, :], other=0.0).to(tl.float32)
        s = tl.sum(kb * q[None, :], axis=1)
        s = tl.where(n_ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        vb = tl.load(v_ptr + offs, mask=n_ok[:, None] & d_ok[None, :], other=0.0).to(tl.float32)
        acc = acc * alpha + p[:, None] * vb
        m_i = m_new

    o = tl.sum(acc, axis=0) / l_i
    tl.store(o_ptr + pid.to(tl.int64) * head_dim + rd, o.to(o_ptr.dtype.element_ty), mask=d_ok)


def attention_decode(q, k_cache, v_cache, o, batch, q_heads, kv_heads, kv_len, head_dim, sm_scale):
    block_d = triton.next_power_of_2(head_dim)
    block_n = max(16, 8192 // block_d)          # 64 keys for head_dim 128
    _decode_one_head[(batch * q_heads,)](q, k_cache, v_cache, o, q_heads, kv_heads, kv_len, head_dim,
                                         sm_scale * LOG2E, BLOCK_N=block_n, BLOCK_D=block_d)
    return None

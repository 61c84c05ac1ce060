"""Starting kernel for paged decode attention: correct for every shape, deliberately simple.

One program per (sequence, query head), num_seqs * q_heads programs in all. Each reads its
context length, then walks its block table one KV block (block_size tokens) at a time: it
loads the block number, then the block's [block_size, head_dim] keys of its kv head, takes
the elementwise product with q summed over head_dim as scores, updates a running maximum and
denominator (online softmax), loads the block's values and adds p[:, None] * v into a
[BLOCK_T, BLOCK_D] fp32 accumulator that is summed over its rows at the end. No tensor cores,
block_size tokens per step, and the kv head's cache is read once per query head of its group.
Every load is masked.
"""

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _paged_one_head(q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, o_ptr, q_heads, kv_heads, head_dim,
                    block_size, max_blocks, qk_scale, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)                  # seq * q_heads + h
    seq = pid // q_heads
    h = pid % q_heads
    g = h // (q_heads // kv_heads)
    ctx = tl.load(lens_ptr + seq)
    rd = tl.arange(0, BLOCK_D)
    d_ok = rd < head_dim
    rt = tl.arange(0, BLOCK_T)
    token_stride = kv_heads * head_dim      # between consecutive tokens of a block

    q = tl.load(q_ptr + pid.to(tl.int64) * head_dim + rd, mask=d_ok, other=0.0).to(tl.float32) * qk_scale

    m_i = tl.max(tl.full([BLOCK_T], float("-inf"), tl.float32), axis=0)
    l_i = tl.sum(tl.zeros([BLOCK_T], tl.float32), axis=0)
    acc = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.float32)
    n_blocks = (ctx + block_size - 1) // block_size
    for j in range(0, n_blocks):
        blk = tl.load(table_ptr + seq.to(tl.int64) * max_blocks + j).to(tl.int64)
        t_ok = (rt < block_size) & (j * block_size + rt < ctx)
        offs = (blk * block_size + rt)[:, None] * token_stride + g * head_dim + rd[None, :]
        kb = tl.load(k_ptr + offs, mask=t_ok[:, None] & d_ok[None, :], other=0.0).to(tl.float32)
        s = tl.sum(kb * q[None, :], axis=1)
        s = tl.where(t_ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        vb = tl.load(v_ptr + offs, mask=t_ok[:, None] & d_ok[None, :], other=0.0).to(tl.float32)
        acc = acc * alpha + p[:, None] * vb
        m_i = m_new

    o = tl.sum(acc, axis=0) / l_i
    tl.store(o_ptr + pid.to(tl.int64) * head_dim + rd, o.to(o_ptr.dtype.element_ty), mask=d_ok)


def paged_attention_decode(q, k_cache, v_cache, block_tables, context_lens, o, num_seqs, q_heads, kv_heads,
                           head_dim, block_size, max_context, max_blocks, sm_scale):
    _paged_one_head[(num_seqs * q_heads,)](q, k_cache, v_cache, block_tables, context_lens, o,
                                           q_heads, kv_heads, head_dim, block_size, max_blocks,
                                           sm_scale * LOG2E,
                                           BLOCK_T=triton.next_power_of_2(block_size),
                                           BLOCK_D=triton.next_power_of_2(head_dim))
    return None

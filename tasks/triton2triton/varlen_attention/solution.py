"""Reference solution for packed variable-length causal attention (FlashAttention-2 style):
correct for every shape.

- One program per (tile of BLOCK_M = 128 queries, sequence, query head), query tiles
  launched longest first; programs past a sequence's end return at once.
- Single pass with an online softmax (running maxima and denominators, an unnormalised fp32
  accumulator rescaled when the maximum grows, divided once at the end): k and v are read
  once per 128 queries, q k^T and p v are tl.dot on tensor cores with BLOCK_N = 64 key
  tiles through a software pipeline.
- Causal block skipping: key tiles above the diagonal are never visited; the key tiles
  entirely below the tile's first query (all inside the sequence) run without any mask;
  only the diagonal tiles apply the causal mask and the sequence bound.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _varlen_flash(q_ptr, k_ptr, v_ptr, cu_ptr, o_ptr, heads, kv_heads, head_dim, qk_scale, n_m_tiles,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, EVEN_D: tl.constexpr):
    m_tile = n_m_tiles - 1 - tl.program_id(0)       # longest tiles first
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
    kv_stride = kv_heads * head_dim
    kv_base = start.to(tl.int64) * kv_stride + hk * head_dim
    kt_ptrs = k_ptr + kv_base + rn[None, :] * kv_stride + rd[:, None]       # [BLOCK_D, BLOCK_N]
    v_ptrs = v_ptr + kv_base + rn[:, None] * kv_stride + rd[None, :]        # [BLOCK_N, BLOCK_D]

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    # keys [0, m0): below the diagonal, all visible and inside the sequence
    for n0 in range(0, m0, BLOCK_N):
        if EVEN_D:
            kt = tl.load(kt_ptrs + n0 * kv_stride)
        else:
            kt = tl.load(kt_ptrs + n0 * kv_stride, mask=d_ok[:, None], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if EVEN_D:
            vb = tl.load(v_ptrs + n0 * kv_stride)
        else:
            vb = tl.load(v_ptrs + n0 * kv_stride, mask=d_ok[None, :], other=0.0)
        acc = tl.dot(p.to(vb.dtype), vb, acc * alpha[:, None])
        m_i = m_new

    # the diagonal: keys [m0, min(m0 + BLOCK_M, length)), causal mask and sequence bound
    hi = tl.minimum(m0 + BLOCK_M, length)
    for n0 in range(m0, hi, BLOCK_N):
        keys = n0 + rn
        n_ok = keys < length
        kt = tl.load(kt_ptrs + n0 * kv_stride, mask=n_ok[None, :] & d_ok[:, None], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        s = tl.where(keys[None, :] <= rm[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        vb = tl.load(v_ptrs + n0 * kv_stride, mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        acc = tl.dot(p.to(vb.dtype), vb, acc * alpha[:, None])
        m_i = m_new

    out = acc / l_i[:, None]
    tl.store(o_ptr + q_rows[:, None] * head_dim + rd[None, :], out.to(o_ptr.dtype.element_ty),
             mask=m_ok[:, None] & d_ok[None, :])


def varlen_attention(q, k, v, cu_seqlens, o, total_tokens, num_seqs, heads, kv_heads, head_dim, max_seqlen,
                     sm_scale):
    block_d = max(16, triton.next_power_of_2(head_dim))
    block_m, block_n = 128, 64
    if torch.version.hip:
        num_warps, num_stages = 4, 1
    else:
        num_warps, num_stages = (4, 3) if block_d <= 64 else (8, 3)
    n_m_tiles = triton.cdiv(max_seqlen, block_m)
    grid = (n_m_tiles, num_seqs, heads)
    _varlen_flash[grid](q, k, v, cu_seqlens, o, heads, kv_heads, head_dim, sm_scale * LOG2E, n_m_tiles,
                        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d, EVEN_D=(block_d == head_dim),
                        num_warps=num_warps, num_stages=num_stages)
    return None

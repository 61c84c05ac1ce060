"""Reference solution for causal attention (FlashAttention-2 style): correct for every shape.

- One program per tile of BLOCK_M = 128 queries of one (batch, head); it streams the keys
  and values in tiles of BLOCK_N = 64 rows and never materialises the scores: an online
  softmax keeps, per query row, the running maximum m, the running denominator l and an
  unnormalised fp32 accumulator that is rescaled by exp(m_old - m_new) when m grows; it is
  divided by l once, at the end. q k^T and p v are tl.dot on tensor cores (fp16 inputs,
  fp32 accumulation; p is rounded to fp16 for the second product).
- Causal block skipping: key tiles entirely above the diagonal are never visited. Key tiles
  entirely below it (keys < the tile's first query) run without any mask; only the
  BLOCK_M / BLOCK_N tiles on the diagonal apply the causal mask (which also hides the keys
  >= seq of a last, partial tile, since every stored query is < seq).
- Each of k and v is read once per query tile instead of once per query row, and the
  tiles are loaded through a software pipeline (num_stages).
- Query tiles are launched heaviest first (the last tiles of a sequence have the most keys),
  so the short tiles fill in the tail of the grid.
- head_dim that is not a power of two (80, 96) is padded to BLOCK_D with masked loads.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _flash_attention_causal(q_ptr, k_ptr, v_ptr, o_ptr, seq, head_dim, qk_scale, n_m_tiles,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                            EVEN_D: tl.constexpr):
    m_tile = n_m_tiles - 1 - tl.program_id(0)        # heaviest (last) query tiles first
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * seq * head_dim
    start_m = m_tile * BLOCK_M
    rm = start_m + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    m_ok = rm < seq
    d_ok = rd < head_dim

    q_ptrs = q_ptr + base + rm[:, None] * head_dim + rd[None, :]
    if EVEN_D:
        q = tl.load(q_ptrs, mask=m_ok[:, None], other=0.0)
    else:
        q = tl.load(q_ptrs, mask=m_ok[:, None] & d_ok[None, :], other=0.0)

    kt_ptrs = k_ptr + base + rn[None, :] * head_dim + rd[:, None]     # [BLOCK_D, BLOCK_N] = k^T
    v_ptrs = v_ptr + base + rn[:, None] * head_dim + rd[None, :]      # [BLOCK_N, BLOCK_D]

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    # keys [0, start_m): below the diagonal, all visible and all < seq
    for start_n in range(0, start_m, BLOCK_N):
        if EVEN_D:
            kt = tl.load(kt_ptrs + start_n * head_dim)
        else:
            kt = tl.load(kt_ptrs + start_n * head_dim, mask=d_ok[:, None], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if EVEN_D:
            vb = tl.load(v_ptrs + start_n * head_dim)
        else:
            vb = tl.load(v_ptrs + start_n * head_dim, mask=d_ok[None, :], other=0.0)
        acc = tl.dot(p.to(vb.dtype), vb, acc * alpha[:, None])
        m_i = m_new

    # keys [start_m, min(start_m + BLOCK_M, seq)): the diagonal tiles, causal mask
    hi = tl.minimum(start_m + BLOCK_M, seq)
    for start_n in range(start_m, hi, BLOCK_N):
        keys = start_n + rn
        n_ok = keys < seq
        kt = tl.load(kt_ptrs + start_n * head_dim, mask=n_ok[None, :] & d_ok[:, None], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        s = tl.where(keys[None, :] <= rm[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        vb = tl.load(v_ptrs + start_n * head_dim, mask=n_ok[:, None] & d_ok[None, :], other=0.0)
        acc = tl.dot(p.to(vb.dtype), vb, acc * alpha[:, None])
        m_i = m_new

    out = acc / l_i[:, None]
    o_ptrs = o_ptr + base + rm[:, None] * head_dim + rd[None, :]
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=m_ok[:, None] & d_ok[None, :])


def attention_prefill(q, k, v, o, batch, heads, seq, head_dim, sm_scale):
    block_d = max(16, triton.next_power_of_2(head_dim))
    block_m, block_n = 128, 64
    if torch.version.hip:
        num_warps, num_stages = 4, 1
    else:
        num_warps, num_stages = (4, 3) if block_d <= 64 else (8, 3)
    n_m_tiles = triton.cdiv(seq, block_m)
    grid = (n_m_tiles, batch * heads)
    _flash_attention_causal[grid](q, k, v, o, seq, head_dim, sm_scale * LOG2E, n_m_tiles,
                                  BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d,
                                  EVEN_D=(block_d == head_dim),
                                  num_warps=num_warps, num_stages=num_stages)
    return None

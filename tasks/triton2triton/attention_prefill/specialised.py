"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's FlashAttention kernel with one assumption baked in: seq is a multiple of
BLOCK_M = 128 (true for every seen shape). It launches seq // 128 query tiles and drops the
row and key bounds from every load and store, so when seq % 128 != 0 the last seq % 128
query rows of every (batch, head) are never computed and stay unwritten. Every access stays
inside the buffers (only full tiles are visited); the failure is a wrong output, never a
fault.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _flash_attention_causal_full_tiles(q_ptr, k_ptr, v_ptr, o_ptr, seq, head_dim, qk_scale, n_m_tiles,
                                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                       BLOCK_D: tl.constexpr, EVEN_D: tl.constexpr):
    m_tile = n_m_tiles - 1 - tl.program_id(0)
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * seq * head_dim
    start_m = m_tile * BLOCK_M
    rm = start_m + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    d_ok = rd < head_dim

    q_ptrs = q_ptr + base + rm[:, None] * head_dim + rd[None, :]
    if EVEN_D:
        q = tl.load(q_ptrs)
    else:
        q = tl.load(q_ptrs, mask=d_ok[None, :], other=0.0)
    kt_ptrs = k_ptr + base + rn[None, :] * head_dim + rd[:, None]
    v_ptrs = v_ptr + base + rn[:, None] * head_dim + rd[None, :]

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    for start_n in range(0, start_m + BLOCK_M, BLOCK_N):     # assumes seq % BLOCK_M == 0
        if EVEN_D:
            kt = tl.load(kt_ptrs + start_n * head_dim)
            vb = tl.load(v_ptrs + start_n * head_dim)
        else:
            kt = tl.load(kt_ptrs + start_n * head_dim, mask=d_ok[:, None], other=0.0)
            vb = tl.load(v_ptrs + start_n * head_dim, mask=d_ok[None, :], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        if start_n >= start_m:
            s = tl.where((start_n + rn)[None, :] <= rm[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(vb.dtype), vb, acc * alpha[:, None])
        m_i = m_new

    out = acc / l_i[:, None]
    o_ptrs = o_ptr + base + rm[:, None] * head_dim + rd[None, :]
    if EVEN_D:
        tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty))
    else:
        tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=d_ok[None, :])


def attention_prefill(q, k, v, o, batch, heads, seq, head_dim, sm_scale):
    block_d = max(16, triton.next_power_of_2(head_dim))
    block_m, block_n = 128, 64
    if torch.version.hip:
        num_warps, num_stages = 4, 1
    else:
        num_warps, num_stages = (4, 3) if block_d <= 64 else (8, 3)
    n_m_tiles = seq // block_m                    # assumes seq % 128 == 0
    if n_m_tiles == 0:
        return None
    grid = (n_m_tiles, batch * heads)
    _flash_attention_causal_full_tiles[grid](q, k, v, o, seq, head_dim, sm_scale * LOG2E, n_m_tiles,
                                             BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d,
                                             EVEN_D=(block_d == head_dim),
                                             num_warps=num_warps, num_stages=num_stages)
    return None

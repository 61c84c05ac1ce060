"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's flash-decoding kernels with one assumption baked in: kv_len is a multiple of
BLOCK_N = 64 (true for every seen shape). The splits cover kv_len // 64 whole key tiles and
the key loads carry no bound, so when kv_len % 64 != 0 the last kv_len % 64 cached tokens
are silently left out of the softmax. Every access stays inside the buffers; the failure is
a wrong value, never a fault.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
BLOCK_N = 64
BLOCK_S = 16

_SM_COUNT = {}


def _sm_count(device):
    if device.type != "cuda":
        return 4
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SM_COUNT:
        _SM_COUNT[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SM_COUNT[idx]


@triton.jit
def _decode_split_whole_tiles(q_ptr, k_ptr, v_ptr, acc_ptr, ml_ptr, q_heads, kv_heads, kv_len, head_dim, qk_scale,
                  chunk, num_splits,
                  GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    split = tl.program_id(0)
    bg = tl.program_id(1)                          # b * kv_heads + g
    b = bg // kv_heads
    g = bg % kv_heads
    rg = tl.arange(0, BLOCK_G)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    g_ok = rg < GROUP
    d_ok = rd < head_dim
    heads = b * q_heads + g * GROUP + rg           # global query-head rows of this group

    q = tl.load(q_ptr + heads.to(tl.int64)[:, None] * head_dim + rd[None, :],
                mask=g_ok[:, None] & d_ok[None, :], other=0.0)
    kv_base = bg.to(tl.int64) * kv_len * head_dim
    kt_ptrs = k_ptr + kv_base + rn[None, :] * head_dim + rd[:, None]     # [BLOCK_D, BLOCK_N]
    v_ptrs = v_ptr + kv_base + rn[:, None] * head_dim + rd[None, :]      # [BLOCK_N, BLOCK_D]

    lo = split * chunk
    hi = tl.minimum(lo + chunk, (kv_len // BLOCK_N) * BLOCK_N)
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], dtype=tl.float32)
    for start in range(lo, hi, BLOCK_N):             # whole tiles only: kv_len % BLOCK_N == 0
        kt = tl.load(kt_ptrs + start * head_dim, mask=d_ok[:, None], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        vb = tl.load(v_ptrs + start * head_dim, mask=d_ok[None, :], other=0.0)
        acc = tl.dot(p.to(vb.dtype), vb, acc * alpha[:, None])
        m_i = m_new

    # partials: acc [batch * q_heads, num_splits, BLOCK_D], ml [batch * q_heads, num_splits, 2]
    row = heads.to(tl.int64) * num_splits + split
    tl.store(acc_ptr + row[:, None] * BLOCK_D + rd[None, :], acc, mask=g_ok[:, None])
    tl.store(ml_ptr + row * 2, m_i, mask=g_ok)
    tl.store(ml_ptr + row * 2 + 1, l_i, mask=g_ok)


@triton.jit
def _decode_combine(acc_ptr, ml_ptr, o_ptr, head_dim, num_splits,
                    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    head = tl.program_id(0).to(tl.int64)          # b * q_heads + h
    rs = tl.arange(0, BLOCK_S)
    rd = tl.arange(0, BLOCK_D)
    base = head * num_splits
    # the common maximum over the splits
    m_run = tl.full([BLOCK_S], float("-inf"), dtype=tl.float32)
    for s0 in range(0, num_splits, BLOCK_S):
        s_ok = (s0 + rs) < num_splits
        m_run = tl.maximum(m_run, tl.load(ml_ptr + (base + s0 + rs) * 2, mask=s_ok, other=float("-inf")))
    m_all = tl.max(m_run, axis=0)
    num = tl.zeros([BLOCK_S, BLOCK_D], dtype=tl.float32)
    den = tl.zeros([BLOCK_S], dtype=tl.float32)
    for s0 in range(0, num_splits, BLOCK_S):
        s_ok = (s0 + rs) < num_splits
        m_s = tl.load(ml_ptr + (base + s0 + rs) * 2, mask=s_ok, other=float("-inf"))
        l_s = tl.load(ml_ptr + (base + s0 + rs) * 2 + 1, mask=s_ok, other=0.0)
        w = tl.exp2(m_s - m_all)
        a = tl.load(acc_ptr + (base + s0 + rs)[:, None] * BLOCK_D + rd[None, :], mask=s_ok[:, None], other=0.0)
        num += w[:, None] * a
        den += w * l_s
    out = tl.sum(num, axis=0) / tl.sum(den, axis=0)
    tl.store(o_ptr + head * head_dim + rd, out.to(o_ptr.dtype.element_ty), mask=rd < head_dim)


def attention_decode(q, k_cache, v_cache, o, batch, q_heads, kv_heads, kv_len, head_dim, sm_scale):
    group = q_heads // kv_heads
    block_g = max(16, triton.next_power_of_2(group))
    block_d = max(16, triton.next_power_of_2(head_dim))
    n_tiles = kv_len // BLOCK_N                      # assumes kv_len % BLOCK_N == 0
    if n_tiles == 0:
        return None
    want = max(1, 3 * _sm_count(q.device) // (batch * kv_heads))
    num_splits = min(want, n_tiles)
    chunk = triton.cdiv(n_tiles, num_splits) * BLOCK_N
    num_splits = triton.cdiv(n_tiles * BLOCK_N, chunk)

    acc = torch.empty((batch * q_heads, num_splits, block_d), dtype=torch.float32, device=q.device)
    ml = torch.empty((batch * q_heads, num_splits, 2), dtype=torch.float32, device=q.device)
    num_stages = 1 if torch.version.hip else 2
    _decode_split_whole_tiles[(num_splits, batch * kv_heads)](
        q, k_cache, v_cache, acc, ml, q_heads, kv_heads, kv_len, head_dim, sm_scale * LOG2E, chunk, num_splits,
        GROUP=group, BLOCK_G=block_g, BLOCK_N=BLOCK_N, BLOCK_D=block_d, num_warps=4, num_stages=num_stages)
    _decode_combine[(batch * q_heads,)](acc, ml, o, head_dim, num_splits,
                                        BLOCK_S=BLOCK_S, BLOCK_D=block_d, num_warps=4)
    return None

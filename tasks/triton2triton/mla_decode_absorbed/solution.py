"""Reference solution for absorbed MLA decode: all heads per cache block, tensor cores,
split-KV.

- The cache is shared by every head, so a program takes a block of BLOCK_H query heads
  (16 or 32) and one cache row block serves them all: scores are two tensor-core products,
  [BLOCK_H, 512] x [512, BLOCK_N] and [BLOCK_H, 64] x [64, BLOCK_N], and the weighted values
  one more, [BLOCK_H, BLOCK_N] x [BLOCK_N, 512], into a [BLOCK_H, 512] fp32 accumulator
  (online softmax in exp2, fp32 statistics, probabilities rounded to fp16 for the product).
  The latent block loaded for the keys is the value block: one read of each cache row per
  head block (heads beyond q_heads are masked rows).
- Split-KV: the cache of each sequence is cut into splits so that about 2 * SMs programs
  run even for one sequence; program axis 0 is the head block, so the head blocks that
  share a cache split run side by side and reuse it from L2.
- `_mla_combine` merges the splits of each (sequence, head) with their log-sum-exps and
  writes o in fp16. The partial buffers come from PyTorch's caching allocator.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
LATENT = 512
ROPE = 64
BLOCK_N = 32


def _num_sms(device):
    try:
        return triton.runtime.driver.active.utils.get_device_properties(device.index or 0)["multiprocessor_count"]
    except Exception:                     # the CPU interpreter has no device properties
        return 132


@triton.jit
def _mla_split(q_ptr, kv_ptr, opart_ptr, lse_ptr, q_heads, kv_len, split_len, n_splits, qk_scale,
               LATENT: tl.constexpr, ROPE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr):
    hb = tl.program_id(0)
    split = tl.program_id(1)
    b = tl.program_id(2)
    ROW: tl.constexpr = LATENT + ROPE
    h = hb * BLOCK_H + tl.arange(0, BLOCK_H)
    h_ok = h < q_heads
    dl = tl.arange(0, LATENT)
    dr = tl.arange(0, ROPE)
    q_rows = q_ptr + (b.to(tl.int64) * q_heads + h)[:, None] * ROW
    q_lat = tl.load(q_rows + dl[None, :], mask=h_ok[:, None], other=0.0)
    q_rope = tl.load(q_rows + LATENT + dr[None, :], mask=h_ok[:, None], other=0.0)

    lo = split * split_len
    hi = tl.minimum(lo + split_len, kv_len)
    rn = tl.arange(0, BLOCK_N)
    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, LATENT], tl.float32)
    kv_seq = kv_ptr + b.to(tl.int64) * kv_len * ROW
    for start in range(lo, hi, BLOCK_N):
        n = start + rn
        n_ok = n < hi
        rows = kv_seq + n.to(tl.int64)[:, None] * ROW
        k_lat = tl.load(rows + dl[None, :], mask=n_ok[:, None], other=0.0)            # [BLOCK_N, 512]
        k_rope = tl.load(rows + LATENT + dr[None, :], mask=n_ok[:, None], other=0.0)  # [BLOCK_N, 64]
        s = tl.dot(q_lat, tl.trans(k_lat)) + tl.dot(q_rope, tl.trans(k_rope))        # [BLOCK_H, BLOCK_N]
        s = tl.where(n_ok[None, :], s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(k_lat.dtype), k_lat)
        m_i = m_new

    part = (b.to(tl.int64) * q_heads + h) * n_splits + split                       # [BLOCK_H]
    tl.store(opart_ptr + part[:, None] * LATENT + dl[None, :], acc / l_i[:, None], mask=h_ok[:, None])
    tl.store(lse_ptr + part, m_i + tl.log2(l_i), mask=h_ok)


@triton.jit
def _mla_combine(opart_ptr, lse_ptr, o_ptr, n_splits, LATENT: tl.constexpr, S_BLOCK: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)              # b * q_heads + h
    s = tl.arange(0, S_BLOCK)
    s_ok = s < n_splits
    lse = tl.load(lse_ptr + bh * n_splits + s, mask=s_ok, other=float("-inf"))
    wgt = tl.exp2(lse - tl.max(lse, axis=0))
    wgt = wgt / tl.sum(wgt, axis=0)
    dl = tl.arange(0, LATENT)
    parts = tl.load(opart_ptr + (bh * n_splits + s)[:, None] * LATENT + dl[None, :],
                    mask=s_ok[:, None], other=0.0)
    o = tl.sum(parts * wgt[:, None], axis=0)
    tl.store(o_ptr + bh * LATENT + dl, o.to(o_ptr.dtype.element_ty))


def mla_decode(q, kv_cache, o, batch, q_heads, kv_len, sm_scale):
    block_h = 16 if q_heads <= 16 else 32
    head_blocks = triton.cdiv(q_heads, block_h)
    want = 2 * _num_sms(q.device)
    splits = max(1, min(triton.cdiv(want, batch * head_blocks), triton.cdiv(kv_len, 4 * BLOCK_N), 64))
    split_len = triton.cdiv(triton.cdiv(kv_len, splits), BLOCK_N) * BLOCK_N
    n_splits = triton.cdiv(kv_len, split_len)
    opart = torch.empty((batch * q_heads * n_splits, LATENT), dtype=torch.float32, device=q.device)
    lse = torch.empty((batch * q_heads * n_splits,), dtype=torch.float32, device=q.device)
    _mla_split[(head_blocks, n_splits, batch)](q, kv_cache, opart, lse, q_heads, kv_len, split_len,
                                               n_splits, sm_scale * LOG2E, LATENT=LATENT, ROPE=ROPE,
                                               BLOCK_H=block_h, BLOCK_N=BLOCK_N,
                                               num_warps=4 if block_h == 16 else 8, num_stages=2)
    _mla_combine[(batch * q_heads,)](opart, lse, o, n_splits, LATENT=LATENT,
                                     S_BLOCK=triton.next_power_of_2(n_splits), num_warps=4)
    return None

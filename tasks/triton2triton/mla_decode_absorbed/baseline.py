"""Starting kernel for absorbed MLA decode: correct for every shape, deliberately simple.

One program per (sequence, query head), batch * q_heads programs in all. Each walks the
whole latent cache of its sequence in blocks of BLOCK_N rows with an online softmax: the
scores are elementwise products of the [BLOCK_N, 512] latent block and the [BLOCK_N, 64]
rotary block with q, summed over the row; the same latent block (already in registers) is
the value block, weighted by p and summed into a 512-wide fp32 accumulator, rescaled when
the running maximum grows. No tensor cores; each cache row is read once per query head;
the kv_len loop runs in one program. Every load is masked.
"""

import triton
import triton.language as tl

LOG2E = 1.4426950408889634
LATENT = 512
ROPE = 64
ROW = LATENT + ROPE
BLOCK_N = 16


@triton.jit
def _mla_decode_head(q_ptr, kv_ptr, o_ptr, q_heads, kv_len, qk_scale,
                     LATENT: tl.constexpr, ROPE: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)                  # b * q_heads + h
    b = pid // q_heads
    ROW: tl.constexpr = LATENT + ROPE
    dl = tl.arange(0, LATENT)
    dr = tl.arange(0, ROPE)
    q_row = q_ptr + pid.to(tl.int64) * ROW
    q_lat = tl.load(q_row + dl).to(tl.float32) * qk_scale
    q_rope = tl.load(q_row + LATENT + dr).to(tl.float32) * qk_scale
    rn = tl.arange(0, BLOCK_N)

    m_i = tl.max(tl.full([BLOCK_N], float("-inf"), tl.float32), axis=0)
    l_i = tl.sum(tl.zeros([BLOCK_N], tl.float32), axis=0)
    acc = tl.zeros([LATENT], dtype=tl.float32)
    for start in range(0, kv_len, BLOCK_N):
        n = start + rn
        n_ok = n < kv_len
        rows = kv_ptr + (b.to(tl.int64) * kv_len + n)[:, None] * ROW
        k_lat = tl.load(rows + dl[None, :], mask=n_ok[:, None], other=0.0).to(tl.float32)
        k_rope = tl.load(rows + LATENT + dr[None, :], mask=n_ok[:, None], other=0.0).to(tl.float32)
        s = tl.sum(k_lat * q_lat[None, :], axis=1) + tl.sum(k_rope * q_rope[None, :], axis=1)
        s = tl.where(n_ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * k_lat, axis=0)
        m_i = m_new

    tl.store(o_ptr + pid.to(tl.int64) * LATENT + dl, (acc / l_i).to(o_ptr.dtype.element_ty))


def mla_decode(q, kv_cache, o, batch, q_heads, kv_len, sm_scale):
    _mla_decode_head[(batch * q_heads,)](q, kv_cache, o, q_heads, kv_len, sm_scale * LOG2E,
                                         LATENT=LATENT, ROPE=ROPE, BLOCK_N=BLOCK_N)
    return None

"""Starting kernel for causal attention: correct for every shape, deliberately simple.

One program per query row (grid: seq x batch*heads). The row's q vector is loaded once,
then the keys 0..i are visited twice in blocks of BLOCK_N rows of k (only up to the
diagonal, never past it):
  pass 1: scores s = k_block @ q (an elementwise product summed over head_dim), kept as a
          running maximum m and a running sum l of exp(s - m) (rescaled when m grows);
  pass 2: the scores are computed again, p = exp(s - m) / l, and p[:, None] * v_block is
          added into a [BLOCK_N, BLOCK_D] fp32 accumulator, summed over its rows at the end.
No tensor cores: every product is an fp32 multiply-add on the CUDA cores, and k is read
twice (v once) per query row, from the caches. Every load is masked.
"""

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _attention_row(q_ptr, k_ptr, v_ptr, o_ptr, seq, head_dim, qk_scale,
                   BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    row = tl.program_id(0)                      # query index inside its (batch, head)
    bh = tl.program_id(1)
    base = bh.to(tl.int64) * seq * head_dim
    rd = tl.arange(0, BLOCK_D)
    d_ok = rd < head_dim
    rn = tl.arange(0, BLOCK_N)

    # scores in base 2: exp(x) == exp2(x * log2(e)), log2(e) folded into qk_scale
    q = tl.load(q_ptr + base + row * head_dim + rd, mask=d_ok, other=0.0).to(tl.float32) * qk_scale

    # pass 1: row maximum and softmax denominator
    m_i = tl.max(tl.full([BLOCK_N], float("-inf"), tl.float32), axis=0)
    l_i = tl.sum(tl.zeros([BLOCK_N], tl.float32), axis=0)
    for start in range(0, row + 1, BLOCK_N):
        keys = start + rn
        n_ok = keys <= row
        kb = tl.load(k_ptr + base + keys[:, None] * head_dim + rd[None, :],
                     mask=n_ok[:, None] & d_ok[None, :], other=0.0).to(tl.float32)
        s = tl.sum(kb * q[None, :], axis=1)
        s = tl.where(n_ok, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        l_i = l_i * tl.exp2(m_i - m_new) + tl.sum(tl.exp2(s - m_new), axis=0)
        m_i = m_new

    # pass 2: probabilities times v
    inv_l = 1.0 / l_i
    acc = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    for start in range(0, row + 1, BLOCK_N):
        keys = start + rn
        n_ok = keys <= row
        kb = tl.load(k_ptr + base + keys[:, None] * head_dim + rd[None, :],
                     mask=n_ok[:, None] & d_ok[None, :], other=0.0).to(tl.float32)
        s = tl.sum(kb * q[None, :], axis=1)
        p = tl.where(n_ok, tl.exp2(s - m_i) * inv_l, 0.0)
        vb = tl.load(v_ptr + base + keys[:, None] * head_dim + rd[None, :],
                     mask=n_ok[:, None] & d_ok[None, :], other=0.0).to(tl.float32)
        acc += p[:, None] * vb

    o = tl.sum(acc, axis=0)
    tl.store(o_ptr + base + row * head_dim + rd, o.to(o_ptr.dtype.element_ty), mask=d_ok)


def attention_prefill(q, k, v, o, batch, heads, seq, head_dim, sm_scale):
    block_d = triton.next_power_of_2(head_dim)
    block_n = max(16, 8192 // block_d)          # 64 rows of k for head_dim 128
    grid = (seq, batch * heads)
    _attention_row[grid](q, k, v, o, seq, head_dim, sm_scale * LOG2E,
                         BLOCK_N=block_n, BLOCK_D=block_d)
    return None

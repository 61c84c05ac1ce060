"""Reference solution for paged decode attention (split-KV over the block table): correct for
every shape.

- Split-KV: the token range [0, max_context) is cut into num_splits chunks of `chunk`
  tokens (a multiple of BLOCK_N); program (split, sequence, kv head) handles the tokens of
  its chunk that are below the sequence's context length, and exits at once when there are
  none. num_splits is chosen for ~8 programs per SM (half of them, on average, have work),
  so that even a few long sequences are streamed at full bandwidth.
- Wide gathers: each step covers BLOCK_N = 64 tokens, i.e. 64 / block_size pool blocks. The
  block numbers of the 64 tokens are loaded as one vector (token t is in table entry
  t // block_size, row t % block_size), and the key and value tiles are gathered row by row
  (each row is head_dim contiguous values) through a software pipeline.
- GQA: a program handles all the query heads of its kv head at once (rows of a
  [BLOCK_G >= 16, BLOCK_D] query tile), so each cached key and value is read once; scores and
  the weighted sum are tl.dot on tensor cores (fp32 accumulation) with an online softmax.
- Each program writes its unnormalised partial output, row maxima and denominators (fp32
  scratch allocated per call: the ABI gives no workspace and its size depends on the split
  count; a few MB at most, from PyTorch's caching allocator); a second kernel, one program per (sequence, query head),
  combines the cdiv(context_len, chunk) partials of its sequence.
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
def _paged_split(q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr, acc_ptr, ml_ptr, q_heads, kv_heads, head_dim,
                 max_blocks, qk_scale, chunk, num_splits,
                 GROUP: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                 BLOCK_SIZE: tl.constexpr):
    split = tl.program_id(0)
    sg = tl.program_id(1)                          # seq * kv_heads + g
    seq = sg // kv_heads
    g = sg % kv_heads
    ctx = tl.load(lens_ptr + seq)
    lo = split * chunk
    if lo >= ctx:
        return
    hi = tl.minimum(lo + chunk, ctx)

    rg = tl.arange(0, BLOCK_G)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    g_ok = rg < GROUP
    d_ok = rd < head_dim
    heads = seq * q_heads + g * GROUP + rg
    q = tl.load(q_ptr + heads.to(tl.int64)[:, None] * head_dim + rd[None, :],
                mask=g_ok[:, None] & d_ok[None, :], other=0.0)

    table_row = table_ptr + seq.to(tl.int64) * max_blocks
    token_stride = kv_heads * head_dim
    head_off = g * head_dim
    m_i = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], dtype=tl.float32)
    for start in range(lo, hi, BLOCK_N):
        t = start + rn
        t_ok = t < hi
        blk = tl.load(table_row + t // BLOCK_SIZE, mask=t_ok, other=0).to(tl.int64)
        row = (blk * BLOCK_SIZE + t % BLOCK_SIZE) * token_stride + head_off     # [BLOCK_N] int64
        kt = tl.load(k_ptr + row[None, :] + rd[:, None], mask=t_ok[None, :] & d_ok[:, None], other=0.0)
        s = tl.dot(q, kt) * qk_scale
        s = tl.where(t_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        vb = tl.load(v_ptr + row[:, None] + rd[None, :], mask=t_ok[:, None] & d_ok[None, :], other=0.0)
        acc = tl.dot(p.to(vb.dtype), vb, acc * alpha[:, None])
        m_i = m_new

    prow = heads.to(tl.int64) * num_splits + split
    tl.store(acc_ptr + prow[:, None] * BLOCK_D + rd[None, :], acc, mask=g_ok[:, None])
    tl.store(ml_ptr + prow * 2, m_i, mask=g_ok)
    tl.store(ml_ptr + prow * 2 + 1, l_i, mask=g_ok)


@triton.jit
def _paged_combine(acc_ptr, ml_ptr, lens_ptr, o_ptr, q_heads, head_dim, chunk, num_splits,
                   BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    head = tl.program_id(0)                        # seq * q_heads + h
    seq = head // q_heads
    ctx = tl.load(lens_ptr + seq)
    n_used = (ctx + chunk - 1) // chunk            # splits that held tokens of this sequence
    rs = tl.arange(0, BLOCK_S)
    rd = tl.arange(0, BLOCK_D)
    base = head.to(tl.int64) * num_splits
    m_run = tl.full([BLOCK_S], float("-inf"), dtype=tl.float32)
    for s0 in range(0, n_used, BLOCK_S):
        s_ok = (s0 + rs) < n_used
        m_run = tl.maximum(m_run, tl.load(ml_ptr + (base + s0 + rs) * 2, mask=s_ok, other=float("-inf")))
    m_all = tl.max(m_run, axis=0)
    num = tl.zeros([BLOCK_S, BLOCK_D], dtype=tl.float32)
    den = tl.zeros([BLOCK_S], dtype=tl.float32)
    for s0 in range(0, n_used, BLOCK_S):
        s_ok = (s0 + rs) < n_used
        m_s = tl.load(ml_ptr + (base + s0 + rs) * 2, mask=s_ok, other=float("-inf"))
        l_s = tl.load(ml_ptr + (base + s0 + rs) * 2 + 1, mask=s_ok, other=0.0)
        w = tl.exp2(m_s - m_all)
        a = tl.load(acc_ptr + (base + s0 + rs)[:, None] * BLOCK_D + rd[None, :], mask=s_ok[:, None], other=0.0)
        num += w[:, None] * a
        den += w * l_s
    out = tl.sum(num, axis=0) / tl.sum(den, axis=0)
    tl.store(o_ptr + head.to(tl.int64) * head_dim + rd, out.to(o_ptr.dtype.element_ty), mask=rd < head_dim)


def paged_attention_decode(q, k_cache, v_cache, block_tables, context_lens, o, num_seqs, q_heads, kv_heads,
                           head_dim, block_size, max_context, max_blocks, sm_scale):
    group = q_heads // kv_heads
    block_g = max(16, triton.next_power_of_2(group))
    block_d = max(16, triton.next_power_of_2(head_dim))
    want = max(1, triton.cdiv(8 * _sm_count(q.device), num_seqs * kv_heads))
    num_splits = min(want, triton.cdiv(max_context, BLOCK_N))
    chunk = triton.cdiv(triton.cdiv(max_context, num_splits), BLOCK_N) * BLOCK_N
    num_splits = triton.cdiv(max_context, chunk)

    acc = torch.empty((num_seqs * q_heads, num_splits, block_d), dtype=torch.float32, device=q.device)
    ml = torch.empty((num_seqs * q_heads, num_splits, 2), dtype=torch.float32, device=q.device)
    num_stages = 1 if torch.version.hip else 3
    _paged_split[(num_splits, num_seqs * kv_heads)](
        q, k_cache, v_cache, block_tables, context_lens, acc, ml, q_heads, kv_heads, head_dim, max_blocks,
        sm_scale * LOG2E, chunk, num_splits,
        GROUP=group, BLOCK_G=block_g, BLOCK_N=BLOCK_N, BLOCK_D=block_d, BLOCK_SIZE=block_size,
        num_warps=4, num_stages=num_stages)
    _paged_combine[(num_seqs * q_heads,)](acc, ml, context_lens, o, q_heads, head_dim, chunk, num_splits,
                                          BLOCK_S=BLOCK_S, BLOCK_D=block_d, num_warps=4)
    return None

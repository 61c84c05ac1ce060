"""Reference solution for RMSNorm + QKV projection + RoPE: one GEMM with a RoPE epilogue.

1. `_rmsnorm_rows`: the whole row in registers (one read of x), several rows a program,
   xn written once in fp16 to a scratch buffer.
2. `_qkv_rope_gemm`: one program per (block of BLOCK_M tokens, output head). It computes
   the head's two halves as two [BLOCK_M, head_dim / 2] fp32 accumulators (tensor cores,
   BLOCK_K = 64, software-pipelined loads, 8 warps), so the rotate-half pairs (d, d + half)
   of a head meet in the same program: the epilogue applies RoPE to q and k heads straight
   from the accumulators (cos / sin of the tile's tokens) and stores q, k or v directly in
   their [tokens, heads, head_dim] layouts. qkv never goes through memory and there is no
   third kernel. Tiles are visited in groups of GROUP_M token blocks so that the x rows
   and w_qkv rows in use stay in L2. Short chunks use BLOCK_M = 64 to keep more programs.
The scratch buffer comes from PyTorch's caching allocator.
"""

import torch
import triton
import triton.language as tl

NORM_TILE = 8192
BLOCK_K = 64
GROUP_M = 8


@triton.jit
def _rmsnorm_rows(x_ptr, w_ptr, xn_ptr, tokens, hidden, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    c = tl.arange(0, BLOCK)
    mask = (r < tokens)[:, None] & (c < hidden)[None, :]
    offs = r[:, None] * hidden + c[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + c, mask=c < hidden, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / hidden + eps)
    tl.store(xn_ptr + offs, (x * rstd[:, None] * w[None, :]).to(xn_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _qkv_rope_gemm(xn_ptr, w_ptr, cos_ptr, sin_ptr, q_ptr, k_ptr, v_ptr, tokens, hidden, q_heads,
                   kv_heads, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr):
    HALF: tl.constexpr = HEAD_DIM // 2
    pid = tl.program_id(0)
    n_heads = q_heads + 2 * kv_heads
    num_m = tl.cdiv(tokens, BLOCK_M)
    group = GROUP_M * n_heads
    first_m = (pid // group) * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    head = (pid % group) // size_m

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = rm < tokens
    rh = tl.arange(0, HALF)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = xn_ptr + rm.to(tl.int64)[:, None] * hidden + rk[None, :]
    n_lo = head * HEAD_DIM + rh
    b_lo = w_ptr + n_lo.to(tl.int64)[None, :] * hidden + rk[:, None]          # [BLOCK_K, HALF]
    b_hi = b_lo + HALF * hidden
    acc_lo = tl.zeros([BLOCK_M, HALF], dtype=tl.float32)
    acc_hi = tl.zeros([BLOCK_M, HALF], dtype=tl.float32)
    for k0 in range(0, hidden, BLOCK_K):
        k_ok = (k0 + rk) < hidden
        a = tl.load(a_ptrs, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        wl = tl.load(b_lo, mask=k_ok[:, None], other=0.0)
        wh = tl.load(b_hi, mask=k_ok[:, None], other=0.0)
        acc_lo = tl.dot(a, wl, acc_lo)
        acc_hi = tl.dot(a, wh, acc_hi)
        a_ptrs += BLOCK_K
        b_lo += BLOCK_K
        b_hi += BLOCK_K

    is_q = head < q_heads
    is_k = (head >= q_heads) & (head < q_heads + kv_heads)
    is_v = head >= q_heads + kv_heads
    rot = is_q | is_k
    cs_offs = rm.to(tl.int64)[:, None] * HALF + rh[None, :]
    c = tl.load(cos_ptr + cs_offs, mask=m_ok[:, None] & rot, other=1.0)
    s = tl.load(sin_ptr + cs_offs, mask=m_ok[:, None] & rot, other=0.0)
    out_lo = acc_lo * c - acc_hi * s                      # c = 1, s = 0 for v heads
    out_hi = acc_hi * c + acc_lo * s
    out_lo = out_lo.to(q_ptr.dtype.element_ty)
    out_hi = out_hi.to(q_ptr.dtype.element_ty)

    hq = tl.minimum(head, q_heads - 1)
    hk = tl.minimum(tl.maximum(head - q_heads, 0), kv_heads - 1)
    hv = tl.minimum(tl.maximum(head - q_heads - kv_heads, 0), kv_heads - 1)
    row = rm.to(tl.int64)[:, None]
    q_offs = (row * q_heads + hq) * HEAD_DIM + rh[None, :]
    k_offs = (row * kv_heads + hk) * HEAD_DIM + rh[None, :]
    v_offs = (row * kv_heads + hv) * HEAD_DIM + rh[None, :]
    tl.store(q_ptr + q_offs, out_lo, mask=m_ok[:, None] & is_q)
    tl.store(q_ptr + q_offs + HALF, out_hi, mask=m_ok[:, None] & is_q)
    tl.store(k_ptr + k_offs, out_lo, mask=m_ok[:, None] & is_k)
    tl.store(k_ptr + k_offs + HALF, out_hi, mask=m_ok[:, None] & is_k)
    tl.store(v_ptr + v_offs, out_lo, mask=m_ok[:, None] & is_v)
    tl.store(v_ptr + v_offs + HALF, out_hi, mask=m_ok[:, None] & is_v)


def rmsnorm_qkv_rope(x, norm_weight, w_qkv, cos, sin, q, k, v, tokens, hidden, q_heads, kv_heads,
                     head_dim, eps):
    xn = torch.empty((tokens, hidden), dtype=x.dtype, device=x.device)
    block = triton.next_power_of_2(hidden)
    rows = max(1, NORM_TILE // block)
    _rmsnorm_rows[(triton.cdiv(tokens, rows),)](x, norm_weight, xn, tokens, hidden, eps, ROWS=rows,
                                                BLOCK=block, num_warps=max(4, min(16, rows * block // 512)))
    n_heads = q_heads + 2 * kv_heads
    block_m = 128 if triton.cdiv(tokens, 128) * n_heads >= 264 else 64
    grid = (triton.cdiv(tokens, block_m) * n_heads,)
    _qkv_rope_gemm[grid](xn, w_qkv, cos, sin, q, k, v, tokens, hidden, q_heads, kv_heads,
                         HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                         num_warps=8 if block_m == 128 else 4, num_stages=3)
    return None

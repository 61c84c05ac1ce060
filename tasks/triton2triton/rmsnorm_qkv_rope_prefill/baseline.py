"""Starting kernel for RMSNorm + QKV projection + RoPE: correct for every shape, simple.

Three kernels, as a model that runs the three steps separately:
1. RMSNorm, one program per token row (two passes over the row in chunks of 1024), writing
   xn in fp16 to a scratch buffer.
2. The projection qkv = xn @ w_qkv^T with tl.dot: one program per 32 x 32 tile of qkv in
   row-major tile order, stepping through hidden 32 at a time (fp32 accumulator), every load
   masked; qkv is written in fp16 to a second scratch buffer. Small tiles, 4 warps, 2 stages.
3. RoPE, one program per (token, head) of qkv: q and k heads are rotated with the token's
   cos / sin and written to q / k, v heads are copied to v.
The scratch buffers come from PyTorch's caching allocator.
"""

import torch
import triton
import triton.language as tl

NORM_BLOCK = 1024
BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32


@triton.jit
def _rmsnorm_row(x_ptr, w_ptr, xn_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * hidden + c, mask=c < hidden, other=0.0).to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / hidden + eps)
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hidden
        x = tl.load(x_ptr + row * hidden + c, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(xn_ptr + row * hidden + c, (x * rstd * w).to(xn_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _matmul_nt(a_ptr, b_ptr, c_ptr, M, N, K,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # c[M, N] = a[M, K] @ b[N, K]^T, all row-major
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_n
    pid_n = pid % num_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + rm.to(tl.int64)[:, None] * K + kk[None, :],
                    mask=(rm < M)[:, None] & (kk < K)[None, :], other=0.0)
        b = tl.load(b_ptr + rn.to(tl.int64)[None, :] * K + kk[:, None],
                    mask=(rn < N)[None, :] & (kk < K)[:, None], other=0.0)        # [BLOCK_K, BLOCK_N]
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm.to(tl.int64)[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm < M)[:, None] & (rn < N)[None, :])


@triton.jit
def _rope_split(qkv_ptr, cos_ptr, sin_ptr, q_ptr, k_ptr, v_ptr, q_heads, kv_heads, head_dim,
                BLOCK_HALF: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    hd = tl.program_id(1)
    n_heads = q_heads + 2 * kv_heads
    half = head_dim // 2
    j = tl.arange(0, BLOCK_HALF)
    mask = j < half
    src = qkv_ptr + (t * n_heads + hd) * head_dim
    u1 = tl.load(src + j, mask=mask, other=0.0).to(tl.float32)
    u2 = tl.load(src + half + j, mask=mask, other=0.0).to(tl.float32)
    if hd < q_heads + kv_heads:
        c = tl.load(cos_ptr + t * half + j, mask=mask, other=0.0)
        s = tl.load(sin_ptr + t * half + j, mask=mask, other=0.0)
        o1 = u1 * c - u2 * s
        o2 = u2 * c + u1 * s
        if hd < q_heads:
            dst = q_ptr + (t * q_heads + hd) * head_dim
        else:
            dst = k_ptr + (t * kv_heads + (hd - q_heads)) * head_dim
        tl.store(dst + j, o1.to(q_ptr.dtype.element_ty), mask=mask)
        tl.store(dst + half + j, o2.to(q_ptr.dtype.element_ty), mask=mask)
    else:
        dst = v_ptr + (t * kv_heads + (hd - q_heads - kv_heads)) * head_dim
        tl.store(dst + j, u1.to(v_ptr.dtype.element_ty), mask=mask)
        tl.store(dst + half + j, u2.to(v_ptr.dtype.element_ty), mask=mask)


def rmsnorm_qkv_rope(x, norm_weight, w_qkv, cos, sin, q, k, v, tokens, hidden, q_heads, kv_heads,
                     head_dim, eps):
    n_out = (q_heads + 2 * kv_heads) * head_dim
    xn = torch.empty((tokens, hidden), dtype=x.dtype, device=x.device)
    qkv = torch.empty((tokens, n_out), dtype=x.dtype, device=x.device)
    _rmsnorm_row[(tokens,)](x, norm_weight, xn, hidden, eps, BLOCK=NORM_BLOCK)
    grid = (triton.cdiv(tokens, BLOCK_M) * triton.cdiv(n_out, BLOCK_N),)
    _matmul_nt[grid](xn, w_qkv, qkv, tokens, n_out, hidden,
                     BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=4, num_stages=2)
    _rope_split[(tokens, q_heads + 2 * kv_heads)](qkv, cos, sin, q, k, v, q_heads, kv_heads, head_dim,
                                                  BLOCK_HALF=triton.next_power_of_2(head_dim // 2))
    return None

"""Starting kernels for o_proj + residual add + RMSNorm: correct for every shape, deliberately
simple.

Written the way the model code reads, one operation at a time, with three kernels:
1. `_matmul_tile`: o = attn @ w_o, one program per 32 x 32 tile of o in row-major tile
   order, stepping through k 32 at a time with tl.dot (fp32 accumulator); every load is
   masked. Small tiles, 4 warps, 2 stages. o ([tokens, hidden] fp16) is allocated per call.
2. `_add_rows`: residual_out = residual + o.
3. `_rms_norm_rows`: normed = RMSNorm(residual_out) * norm_weight, two passes over the row
   (sum of squares, then scale and write).
Kernels 2 and 3 run one program per row that walks the row in fixed chunks of 256 columns,
with default launch settings.
"""

import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32
BLOCK = 256


@triton.jit
def _matmul_tile(a_ptr, b_ptr, c_ptr, m, n, k,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # c[m, n] = a[m, k] @ b[k, n], all row-major
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm.to(tl.int64)[:, None] * k + rk[None, :]
    b_ptrs = b_ptr + rk.to(tl.int64)[:, None] * n + rn[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = (k0 + rk) < k
        a = tl.load(a_ptrs, mask=(rm[:, None] < m) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (rn[None, :] < n), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * n
    c_ptrs = c_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


@triton.jit
def _add_rows(a_ptr, b_ptr, c_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    off = row * cols
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        a = tl.load(a_ptr + off + c, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + off + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(c_ptr + off + c, (a + b).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rms_norm_rows(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + c, mask=c < cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        x = tl.load(x_row + c, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + c, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def transformer_block_norm_attn_out(attn, w_o, residual, norm_weight, residual_out, normed,
                                    tokens, hidden, eps):
    o = torch.empty((tokens, hidden), dtype=attn.dtype, device=attn.device)
    grid = (triton.cdiv(tokens, BLOCK_M) * triton.cdiv(hidden, BLOCK_N),)
    _matmul_tile[grid](attn, w_o, o, tokens, hidden, hidden,
                       BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=4, num_stages=2)
    _add_rows[(tokens,)](residual, o, residual_out, hidden, BLOCK=BLOCK)
    _rms_norm_rows[(tokens,)](residual_out, norm_weight, normed, hidden, eps, BLOCK=BLOCK)
    return None

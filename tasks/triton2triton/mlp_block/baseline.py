"""Starting kernels for the SwiGLU MLP: correct for every shape, deliberately simple.

Written the way the model code reads, one operation at a time:
1. g = x @ w_gate and u = x @ w_up, two launches of one plain GEMM kernel (x is read twice);
2. h = silu(g) * u, an elementwise kernel (written over g);
3. out = h @ w_down, the same GEMM kernel.
The GEMM runs one program per 32 x 32 tile of its output, in row-major tile order, stepping
through k 32 at a time with tl.dot (fp32 accumulator, fp16 result); every load is masked.
Small tiles, 4 warps, 2 stages. g and u ([tokens, inter] fp16) are allocated per call.
"""

import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32
BLOCK = 1024


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
def _silu_mul(g_ptr, u_ptr, h_ptr, numel, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < numel
    g = tl.load(g_ptr + i, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + i, mask=mask, other=0.0).to(tl.float32)
    h = g / (1.0 + tl.exp(-g)) * u
    tl.store(h_ptr + i, h.to(h_ptr.dtype.element_ty), mask=mask)


def _matmul(a, b, c, m, n, k):
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _matmul_tile[grid](a, b, c, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                       num_warps=4, num_stages=2)


def mlp_block(x, w_gate, w_up, w_down, out, tokens, hidden, inter):
    g = torch.empty((tokens, inter), dtype=x.dtype, device=x.device)
    u = torch.empty((tokens, inter), dtype=x.dtype, device=x.device)
    _matmul(x, w_gate, g, tokens, inter, hidden)
    _matmul(x, w_up, u, tokens, inter, hidden)
    numel = tokens * inter
    _silu_mul[(triton.cdiv(numel, BLOCK),)](g, u, g, numel, BLOCK=BLOCK)
    _matmul(g, w_down, out, tokens, hidden, inter)
    return None

"""Starting kernels for y = x @ w^T + scale * ((x @ a^T) @ b^T): correct for every shape, simple.

Three launches, each a plain tiled loop with small tiles and masked loads (4 warps, 2 stages):

1. `_shrink`: xa = x @ a^T into an fp32 [m, r] scratch, one program per 32 rows of x
   stepping through k 32 at a time (only m / 32 programs, each over the whole of k).
2. `_base_gemm`: x @ w^T into an fp32 [m, n] scratch, one program per 32 x 32 output tile in
   row-major tile order, k stepped 32 at a time with tl.dot.
3. `_add_low_rank`: per 32 x 32 tile, reads the fp32 base result back, adds
   scale * sum_j xa[i, j] * b[c, j] with one fp32 outer product per rank index j (CUDA-core
   FMAs) and rounds y to fp16 once.

The [m, n] fp32 scratch is written and read once more than needed; the scratches are
allocated per call.
"""

import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32


@triton.jit
def _shrink(x_ptr, a_ptr, xa_ptr, m, k, r,
            BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rr = tl.arange(0, BLOCK_R)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm.to(tl.int64)[:, None] * k + rk[None, :]     # [BLOCK_M, BLOCK_K]
    a_ptrs = a_ptr + rr.to(tl.int64)[None, :] * k + rk[:, None]     # [BLOCK_K, BLOCK_R] = a^T tile
    acc = tl.zeros([BLOCK_M, BLOCK_R], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = (k0 + rk) < k
        xt = tl.load(x_ptrs, mask=(rm[:, None] < m) & k_ok[None, :], other=0.0)
        at = tl.load(a_ptrs, mask=k_ok[:, None] & (rr[None, :] < r), other=0.0)
        acc = tl.dot(xt, at, acc)
        x_ptrs += BLOCK_K
        a_ptrs += BLOCK_K
    out = xa_ptr + rm.to(tl.int64)[:, None] * r + rr[None, :]
    tl.store(out, acc, mask=(rm[:, None] < m) & (rr[None, :] < r))


@triton.jit
def _base_gemm(x_ptr, w_ptr, c_ptr, m, n, k,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm.to(tl.int64)[:, None] * k + rk[None, :]     # [BLOCK_M, BLOCK_K]
    w_ptrs = w_ptr + rn.to(tl.int64)[None, :] * k + rk[:, None]     # [BLOCK_K, BLOCK_N] = w^T tile
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = (k0 + rk) < k
        xt = tl.load(x_ptrs, mask=(rm[:, None] < m) & k_ok[None, :], other=0.0)
        wt = tl.load(w_ptrs, mask=k_ok[:, None] & (rn[None, :] < n), other=0.0)
        acc = tl.dot(xt, wt, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    out = c_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(out, acc, mask=(rm[:, None] < m) & (rn[None, :] < n))


@triton.jit
def _add_low_rank(c_ptr, xa_ptr, b_ptr, y_ptr, m, n, r, scale,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = rm < m
    n_ok = rn < n
    low = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for j in range(0, r):
        xa_j = tl.load(xa_ptr + rm.to(tl.int64) * r + j, mask=m_ok, other=0.0)
        b_j = tl.load(b_ptr + rn.to(tl.int64) * r + j, mask=n_ok, other=0.0).to(tl.float32)
        low += xa_j[:, None] * b_j[None, :]
    offs = rm.to(tl.int64)[:, None] * n + rn[None, :]
    mask = m_ok[:, None] & n_ok[None, :]
    base = tl.load(c_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, (base + scale * low).to(y_ptr.dtype.element_ty), mask=mask)


def lora_linear(x, w, a, b, y, m, n, k, r, scale):
    xa = torch.empty((m, r), dtype=torch.float32, device=x.device)
    base = torch.empty((m, n), dtype=torch.float32, device=x.device)
    block_r = max(16, triton.next_power_of_2(r))          # tl.dot needs a dimension >= 16
    _shrink[(triton.cdiv(m, BLOCK_M),)](x, a, xa, m, k, r,
                                        BLOCK_M=BLOCK_M, BLOCK_R=block_r, BLOCK_K=BLOCK_K,
                                        num_warps=4, num_stages=2)
    tiles = triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N)
    _base_gemm[(tiles,)](x, w, base, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                         num_warps=4, num_stages=2)
    _add_low_rank[(tiles,)](base, xa, b, y, m, n, r, scale, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                            num_warps=4)
    return None

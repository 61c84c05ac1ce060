"""Starting kernel for y = x_scale[i] * w_scale[j] * (xq @ wq^T): correct for every shape,
deliberately simple.

Two kernels, the textbook way to reuse an integer GEMM:
1. an int8 x int8 -> int32 GEMM: one program per 32 x 32 tile of the product, launched in
   row-major tile order, stepping through k 32 at a time with tl.dot (int32 accumulator),
   every load masked, 4 warps, 2 stages; the int32 tile is stored to a [m, n] buffer
   (allocated per call);
2. a dequantise pass: one program per 1024 elements reads the int32 buffer and both scales
   and writes y in fp16.
"""

import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32
DEQUANT_BLOCK = 1024


@triton.jit
def _int8_gemm_tile(x_ptr, w_ptr, acc_ptr, m, n, k,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)      # rows of xq and of the product
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)      # rows of wq, columns of the product
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm.to(tl.int64)[:, None] * k + rk[None, :]      # [BLOCK_M, BLOCK_K]
    w_ptrs = w_ptr + rn.to(tl.int64)[None, :] * k + rk[:, None]      # [BLOCK_K, BLOCK_N] = wq^T tile

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.int32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = (k0 + rk) < k
        a = tl.load(x_ptrs, mask=(rm[:, None] < m) & k_ok[None, :], other=0)
        b = tl.load(w_ptrs, mask=k_ok[:, None] & (rn[None, :] < n), other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    acc_ptrs = acc_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(acc_ptrs, acc, mask=(rm[:, None] < m) & (rn[None, :] < n))


@triton.jit
def _dequantize(acc_ptr, xs_ptr, ws_ptr, y_ptr, total, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    acc = tl.load(acc_ptr + offs, mask=mask, other=0)
    xs = tl.load(xs_ptr + offs // n, mask=mask, other=0.0)
    ws = tl.load(ws_ptr + offs % n, mask=mask, other=0.0)
    y = acc.to(tl.float32) * xs * ws
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def w8a8_int8_gemm(xq, wq, x_scale, w_scale, y, m, n, k):
    acc = torch.empty((m, n), dtype=torch.int32, device=y.device)
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _int8_gemm_tile[grid](xq, wq, acc, m, n, k,
                          BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                          num_warps=4, num_stages=2)
    _dequantize[(triton.cdiv(m * n, DEQUANT_BLOCK),)](acc, x_scale, w_scale, y, m * n, n,
                                                     BLOCK=DEQUANT_BLOCK, num_warps=4)
    return None

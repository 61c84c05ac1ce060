"""Starting kernel for y = x @ dequant(qweight, scales, zeros): correct for every shape,
deliberately simple.

Two kernels, the textbook way to reuse an fp16 GEMM for 4-bit weights:
1. dequantise: one program per 1024 elements of w [k, n] unpacks each 4-bit value from its
   int32 word, subtracts the group's zero point, multiplies by the group's scale and writes
   w in fp16 to a [k, n] buffer (allocated per call);
2. a plain tiled GEMM of x by that buffer: one program per 64 x 64 tile of y, row-major tile
   order, stepping through k 32 at a time with tl.dot (fp32 accumulator), every load
   masked, 4 warps, 2 stages.
The weights therefore cross memory three times (half a byte read, 2 bytes written, 2 read
back) instead of once.
"""

import torch
import triton
import triton.language as tl

GROUP_SIZE = 128
DEQUANT_BLOCK = 1024
BLOCK_M = 64
BLOCK_N = 64
BLOCK_K = 32


@triton.jit
def _dequantize(q_ptr, s_ptr, z_ptr, w_ptr, total, n, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    row = offs // n
    col = offs % n
    word = tl.load(q_ptr + (row // 8) * n + col, mask=mask, other=0)
    q = (word >> ((row % 8) * 4).to(tl.int32)) & 0xF
    g = (row // GROUP) * n + col
    s = tl.load(s_ptr + g, mask=mask, other=0.0).to(tl.float32)
    z = tl.load(z_ptr + g, mask=mask, other=0).to(tl.float32)
    w = (q.to(tl.float32) - z) * s
    tl.store(w_ptr + offs, w.to(w_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gemm_tile(x_ptr, b_ptr, y_ptr, m, n, k,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm.to(tl.int64)[:, None] * k + rk[None, :]        # [BLOCK_M, BLOCK_K]
    b_ptrs = b_ptr + rk.to(tl.int64)[:, None] * n + rn[None, :]        # [BLOCK_K, BLOCK_N]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = (k0 + rk) < k
        a = tl.load(x_ptrs, mask=(rm[:, None] < m) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (rn[None, :] < n), other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * n

    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def w4a16_gptq_gemm(x, qweight, scales, zeros, y, m, n, k):
    wf = torch.empty((k, n), dtype=torch.float16, device=x.device)
    _dequantize[(triton.cdiv(k * n, DEQUANT_BLOCK),)](qweight, scales, zeros, wf, k * n, n,
                                                     GROUP=GROUP_SIZE, BLOCK=DEQUANT_BLOCK)
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _gemm_tile[grid](x, wf, y, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                     num_warps=4, num_stages=2)
    return None

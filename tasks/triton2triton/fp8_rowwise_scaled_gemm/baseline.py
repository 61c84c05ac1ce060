"""Starting kernel for y = a_scale[i] * b_scale[j] * (a @ b^T) with fp8 e4m3 operands:
correct for every shape, deliberately simple.

One program per 32 x 32 tile of y, launched in row-major tile order (no grouping for L2
reuse), stepping through k 32 at a time with tl.dot on the fp8 tiles into an fp32
accumulator; every load is masked. 4 warps, a single stage (no software pipelining). Tiles
this small are below the size of Hopper's warpgroup MMA, so the compiler feeds the fp8 tiles
to the fp16 tensor-core instructions. The two scales multiply the accumulator before the
single fp16 store.

Each k step's product is added to the accumulator in fp32 (acc += dot) instead of being
accumulated inside the dot: fp8 tensor-core accumulation may be reduced-precision on some
GPUs, and the sum over k must stay fp32-accurate.
"""

import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32


@triton.jit
def _fp8_gemm_tile(a_ptr, b_ptr, as_ptr, bs_ptr, y_ptr, m, n, k,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)      # rows of a and y
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)      # rows of b, columns of y
    rk = tl.arange(0, BLOCK_K)
    # a tile [BLOCK_M, BLOCK_K] at a[rm, kk]; b^T tile [BLOCK_K, BLOCK_N] at b[rn, kk].
    a_ptrs = a_ptr + rm.to(tl.int64)[:, None] * k + rk[None, :]
    b_ptrs = b_ptr + rn.to(tl.int64)[None, :] * k + rk[:, None]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        k_ok = (k0 + rk) < k
        a = tl.load(a_ptrs, mask=(rm[:, None] < m) & k_ok[None, :], other=0.0)
        bt = tl.load(b_ptrs, mask=k_ok[:, None] & (rn[None, :] < n), other=0.0)
        acc += tl.dot(a, bt)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K

    a_s = tl.load(as_ptr + rm, mask=rm < m, other=0.0)
    b_s = tl.load(bs_ptr + rn, mask=rn < n, other=0.0)
    y = acc * a_s[:, None] * b_s[None, :]
    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, y.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def fp8_rowwise_scaled_gemm(a, b, a_scale, b_scale, y, m, n, k):
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N),)
    _fp8_gemm_tile[grid](a, b, a_scale, b_scale, y, m, n, k,
                         BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                         num_warps=4, num_stages=1)
    return None

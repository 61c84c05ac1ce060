"""Starting kernel for the block-scaled fp8 GEMM, written the way serving code writes it: an
autotuned kernel (tile sizes and warps, keyed on n and k), heuristics that drop the bound
checks when the tiles divide m and n, @triton.jit helpers for the scale loads and the scaled
block product, and do_not_specialize on m (the token count changes with every batch).

One program per [BLOCK_M, BLOCK_N] tile of y walks k in 128-wide steps (one step = one scale
block): it loads the fp8 tiles of a and b, their scales, multiplies the tiles on the tensor
cores and adds the product, scaled, to an fp32 accumulator. Correct for every shape. The
tiles are small, the k loop keeps at most two steps in flight, and the tiles are visited
row by row of the grid, so neighbouring programs share little of b in the L2.
"""

import triton
import triton.language as tl

BLOCK_K = 128      # = the quantisation block: one a_scale / b_scale per k step


@triton.jit
def _a_scales(as_ptr, rows, rows_ok, kb, num_kb):
    return tl.load(as_ptr + rows * num_kb + kb, mask=rows_ok, other=0.0)


@triton.jit
def _b_scale(bs_ptr, pid_n, kb, num_kb, BLOCK_N: tl.constexpr):
    # BLOCK_N divides 128: the tile's columns all sit in one 128-row block of the weight
    return tl.load(bs_ptr + (pid_n * BLOCK_N // 128) * num_kb + kb)


@triton.jit
def _scaled_block_dot(acc, a, b, sa, sb):
    return acc + tl.dot(a, b) * (sa[:, None] * sb)


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 64}, num_warps=4, num_stages=2),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=2),
    ],
    key=["n", "k"],
)
@triton.heuristics({
    "EVEN_M": lambda args: args["m"] % args["BLOCK_M"] == 0,
    "EVEN_N": lambda args: args["n"] % args["BLOCK_N"] == 0,
})
@triton.jit(do_not_specialize=["m"])
def _block_fp8_gemm_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, y_ptr, m, n, k,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           EVEN_M: tl.constexpr, EVEN_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_ok = rm < m
    n_ok = rn < n
    num_kb = k // BLOCK_K

    a_ptrs = a_ptr + rm.to(tl.int64)[:, None] * k + rk[None, :]
    b_ptrs = b_ptr + rn.to(tl.int64)[None, :] * k + rk[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kb in range(0, num_kb):
        if EVEN_M:
            a = tl.load(a_ptrs)
        else:
            a = tl.load(a_ptrs, mask=m_ok[:, None], other=0.0)
        if EVEN_N:
            b = tl.load(b_ptrs)
        else:
            b = tl.load(b_ptrs, mask=n_ok[None, :], other=0.0)
        sa = _a_scales(as_ptr, rm, m_ok, kb, num_kb)
        sb = _b_scale(bs_ptr, pid_n, kb, num_kb, BLOCK_N)
        acc = _scaled_block_dot(acc, a, b, sa, sb)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K

    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def block_fp8_gemm(a, a_scale, b, b_scale, y, m, n, k):
    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]))

    _block_fp8_gemm_kernel[grid](a, a_scale, b, b_scale, y, m, n, k, BLOCK_K=BLOCK_K)
    return None

"""Reference solution for the block-scaled fp8 GEMM: correct for every shape.

- 128 x 128 output tiles (64 x 128 when m is small, so a decode batch still fills the GPU
  with programs), 8 warps: four times the work per loaded byte of the starting kernel's
  32 x 64 tiles. BLOCK_N = 128 is one weight-scale block, so each k step needs one b scale
  per tile.
- A deeper software pipeline (num_stages = 4): three k steps of a and b load while the
  tensor cores work on the fourth.
- Grouped launch order: programs run in groups of GROUP_M row tiles that sweep the same
  column tiles together, so a column tile of b is read from DRAM about once per group
  instead of once per row tile.
"""

import triton
import triton.language as tl

BLOCK_K = 128
GROUP_M = 8


@triton.jit
def _block_fp8_gemm_grouped(a_ptr, as_ptr, b_ptr, bs_ptr, y_ptr, m, n, k,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(m, BLOCK_M)
    tiles_n = tl.cdiv(n, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    m_ok = rm < m
    n_ok = rn < n
    # clamp the rows and columns of edge tiles onto the matrix: loads need no mask, the
    # store drops the duplicates
    rm_c = tl.minimum(rm, m - 1).to(tl.int64)
    rn_c = tl.minimum(rn, n - 1).to(tl.int64)
    num_kb = k // BLOCK_K

    a_ptrs = a_ptr + rm_c[:, None] * k + rk[None, :]
    b_ptrs = b_ptr + rn_c[None, :] * k + rk[:, None]
    as_ptrs = as_ptr + rm_c * num_kb
    bs_ptr_n = bs_ptr + (pid_n * BLOCK_N // 128) * num_kb
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kb in range(0, num_kb):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        sa = tl.load(as_ptrs + kb)
        sb = tl.load(bs_ptr_n + kb)
        acc += tl.dot(a, b) * (sa[:, None] * sb)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K

    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


def block_fp8_gemm(a, a_scale, b, b_scale, y, m, n, k):
    block_m = 128 if m > 1024 else 64
    block_n = 128
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    _block_fp8_gemm_grouped[grid](a, a_scale, b, b_scale, y, m, n, k, BLOCK_M=block_m, BLOCK_N=block_n,
                                  BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, num_warps=8 if block_m == 128 else 4,
                                  num_stages=4)
    return None

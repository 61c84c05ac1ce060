"""Reference solution for the grouped (per-expert) GEMM: correct for every shape.

- One launch for all experts. The grid covers an upper bound of the row tiles of all
  experts, cdiv(rows, BLOCK_M) + experts (each expert wastes at most one partial tile),
  times the column tiles. Each program reads the experts' offsets as one vector, turns
  them into tile counts and their prefix sum (tl.cumsum), and finds its expert and its
  tile inside the expert by comparing its tile index with the prefix sum; programs past the
  last real tile return at once. No host synchronisation, no empty launches per expert,
  and the whole grouped GEMM fills the GPU even when single experts have few rows.
- Tiles sized by the mean rows per expert: >= 512 rows take 128 x 256 x 64 tiles (8 warps,
  3 stages, 144 KB of shared memory), the compute-bound regime; fewer take 64 x 128 x 64
  (4 warps, 4 stages), or 16 / 32-row tiles when experts hold a handful of rows (decode:
  bound by reading the weights, nothing gained from padding rows up to 64). Smaller tiles
  and 2 stages where shared memory is 64 KB (AMD).
- Grouped tile order: consecutive programs walk down a band of GROUP_M row tiles before
  moving to the next column tile, so the w[e] tiles they share stay in L2.
- Rows beyond the expert's end are clamped to its last row instead of masked (their results
  are dropped by the masked store). Columns of w are contiguous, so they are masked (a
  clamp would break the 16-byte loads); the n and k masks are compiled out when n and k are
  multiples of the block (EVEN_N, EVEN_K).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _grouped_gemm(x_ptr, w_ptr, off_ptr, y_ptr, rows, experts, k, n,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, E_PAD: tl.constexpr,
                  EVEN_K: tl.constexpr, EVEN_N: tl.constexpr):
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(n, BLOCK_N)
    tiles_m_bound = tl.cdiv(rows, BLOCK_M) + experts
    band = pid // (GROUP_M * tiles_n)
    first_m = band * GROUP_M
    band_height = tl.minimum(tiles_m_bound - first_m, GROUP_M)
    within = pid - band * (GROUP_M * tiles_n)
    tile_m = first_m + within % band_height
    pid_n = within // band_height

    # which expert owns row tile `tile_m`
    ei = tl.arange(0, E_PAD)
    e_ok = ei < experts
    lo = tl.load(off_ptr + ei, mask=e_ok, other=0)
    hi = tl.load(off_ptr + ei + 1, mask=e_ok, other=0)
    tiles_e = (hi - lo + BLOCK_M - 1) // BLOCK_M
    ends = tl.cumsum(tiles_e, 0)                       # inclusive prefix sum
    if tile_m >= tl.sum(tiles_e):
        return
    e = tl.sum((ends <= tile_m).to(tl.int32))
    sel = ei == e
    first_tile = tl.sum(tl.where(sel, ends - tiles_e, 0))
    end = tl.sum(tl.where(sel, hi, 0))
    row0 = tl.sum(tl.where(sel, lo, 0)) + (tile_m - first_tile) * BLOCK_M

    rm = row0 + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm_in = tl.minimum(rm, end - 1).to(tl.int64)
    n_ok = rn[None, :] < n
    x_ptrs = x_ptr + rm_in[:, None] * k + rk[None, :]                                   # [BLOCK_M, BLOCK_K]
    w_ptrs = w_ptr + e.to(tl.int64) * k * n + rk.to(tl.int64)[:, None] * n + rn[None, :]  # [BLOCK_K, BLOCK_N]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        if EVEN_K:
            a = tl.load(x_ptrs)
            if EVEN_N:
                b = tl.load(w_ptrs)
            else:
                b = tl.load(w_ptrs, mask=n_ok, other=0.0)
        else:
            k_ok = (k0 + rk) < k
            a = tl.load(x_ptrs, mask=k_ok[None, :], other=0.0)
            b = tl.load(w_ptrs, mask=k_ok[:, None] & n_ok, other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * n

    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < end) & n_ok)


def _config(rows, experts):
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)."""
    mean = rows / experts
    if torch.version.hip:
        if mean >= 512:
            return 128, 128, 64, 8, 8, 2
        return (16 if mean <= 16 else 32 if mean <= 32 else 64), 128, 64, 8, 4, 2
    if mean >= 512:
        return 128, 256, 64, 8, 8, 3
    if mean <= 16:
        return 16, 128, 64, 8, 4, 4
    if mean <= 32:
        return 32, 128, 64, 8, 4, 4
    return 64, 128, 64, 8, 4, 4


def grouped_gemm(x, w, expert_offsets, y, rows, experts, k, n):
    block_m, block_n, block_k, group_m, num_warps, num_stages = _config(rows, experts)
    grid = ((triton.cdiv(rows, block_m) + experts) * triton.cdiv(n, block_n),)
    _grouped_gemm[grid](x, w, expert_offsets, y, rows, experts, k, n,
                        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m,
                        E_PAD=max(16, triton.next_power_of_2(experts)),
                        EVEN_K=(k % block_k == 0), EVEN_N=(n % block_n == 0),
                        num_warps=num_warps, num_stages=num_stages)
    return None

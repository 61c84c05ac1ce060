"""Reference solution for y = x @ w^T + scale * ((x @ a^T) @ b^T): correct for every shape.

Two launches:

1. `_shrink_splitk`: xa = x @ a^T ([m, r], fp32). The rank is tiny, so with one program per
   64 rows there would be only m / 64 programs; k is also split so that about two programs
   per SM run, each adding its partial product into a zeroed fp32 [m, BLOCK_R] scratch with
   atomics (columns r..BLOCK_R stay 0). This reads x once (a few % of the GEMM's time).
2. `_base_gemm_lora`: the base GEMM with large tiles (128 x 256 x 64, 8 warps, 3 stages on
   NVIDIA; 128 x 128 x 64, 2 stages where shared memory is 64 KB), grouped tile order (a
   band of GROUP_M row tiles walked column by column, so x and w tiles stay in L2), rows
   beyond m / n clamped instead of masked, the k mask compiled out when k is a multiple of
   BLOCK_K. The low-rank update is folded into the epilogue: the program loads its
   [BLOCK_M, BLOCK_R] rows of xa, multiplies them by scale, rounds them to fp16 and adds
   (scale * xa) @ b_tile^T to the fp32 accumulator with one more tl.dot before the single
   fp16 store. Smaller tiles are used when the large ones would leave SMs idle (m = 256).

When k is not a multiple of 8, rows of x and w do not start on 16-byte boundaries and the
tile loads fall back to 2-byte accesses; then x and w are first copied into zero-padded
buffers whose rows are a multiple of BLOCK_K, by a kernel of this file (``_repack_rows``, one
read and one write: (m + n) * k * 4 more bytes; torch's fill and copy would be copies and
fills, not this solution's work, and take half a skinny call's time). Scratch buffers are
allocated per call.
"""

import torch
import triton
import triton.language as tl

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
LARGE_NVIDIA = (128, 256, 64, 8, 8, 3)
MEDIUM_NVIDIA = (128, 128, 64, 8, 4, 4)
SMALL_NVIDIA = (64, 128, 64, 8, 4, 4)
LARGE_AMD = (128, 128, 64, 8, 8, 2)
SMALL_AMD = (64, 128, 64, 8, 4, 2)
SKINNY = (32, 64, 128, 1, 4, 3)

SHRINK_M = 64
SHRINK_K = 64

_SM_COUNT = {}


def _sm_count(device):
    if device.type != "cuda":
        return 4
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SM_COUNT:
        _SM_COUNT[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SM_COUNT[idx]


@triton.jit
def _shrink_splitk(x_ptr, a_ptr, xa_ptr, m, k, r, k_per_split,
                   BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    split = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rr = tl.arange(0, BLOCK_R)
    rk = tl.arange(0, BLOCK_K)
    rm_in = tl.minimum(rm, m - 1).to(tl.int64)
    k_lo = split * k_per_split
    k_hi = tl.minimum(k_lo + k_per_split, k)
    x_ptrs = x_ptr + rm_in[:, None] * k + (k_lo + rk)[None, :]                  # [BLOCK_M, BLOCK_K]
    a_ptrs = a_ptr + rr.to(tl.int64)[None, :] * k + (k_lo + rk)[:, None]        # [BLOCK_K, BLOCK_R]
    r_ok = rr < r
    acc = tl.zeros([BLOCK_M, BLOCK_R], dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        k_ok = (k0 + rk) < k_hi
        xt = tl.load(x_ptrs, mask=k_ok[None, :], other=0.0)
        at = tl.load(a_ptrs, mask=k_ok[:, None] & r_ok[None, :], other=0.0)
        acc = tl.dot(xt, at, acc)
        x_ptrs += BLOCK_K
        a_ptrs += BLOCK_K
    out = xa_ptr + rm.to(tl.int64)[:, None] * BLOCK_R + rr[None, :]
    tl.atomic_add(out, acc, mask=rm[:, None] < m)


@triton.jit
def _base_gemm_lora(x_ptr, w_ptr, xa_ptr, b_ptr, y_ptr, m, n, k, r, scale,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    BLOCK_R: tl.constexpr, GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    # Grouped order: programs [g * GROUP_M * tiles_n, (g + 1) * GROUP_M * tiles_n) cover a
    # band of GROUP_M row tiles, column by column (row tile fastest).
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(m, BLOCK_M)
    tiles_n = tl.cdiv(n, BLOCK_N)
    band = pid // (GROUP_M * tiles_n)
    first_m = band * GROUP_M
    band_height = tl.minimum(tiles_m - first_m, GROUP_M)
    within = pid - band * (GROUP_M * tiles_n)
    pid_m = first_m + within % band_height
    pid_n = within // band_height

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm_in = tl.minimum(rm, m - 1).to(tl.int64)
    rn_in = tl.minimum(rn, n - 1).to(tl.int64)
    x_ptrs = x_ptr + rm_in[:, None] * k + rk[None, :]          # [BLOCK_M, BLOCK_K]
    w_ptrs = w_ptr + rn_in[None, :] * k + rk[:, None]          # [BLOCK_K, BLOCK_N] = w^T tile

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        if EVEN_K:
            xt = tl.load(x_ptrs)
            wt = tl.load(w_ptrs)
        else:
            k_ok = (k0 + rk) < k
            xt = tl.load(x_ptrs, mask=k_ok[None, :], other=0.0)
            wt = tl.load(w_ptrs, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(xt, wt, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    # Low-rank update: acc += (scale * xa[rm, :]) @ b[rn, :]^T. Columns r..BLOCK_R of xa are
    # 0 and the matching rows of the b^T tile are masked to 0.
    rr = tl.arange(0, BLOCK_R)
    xa = tl.load(xa_ptr + rm_in[:, None] * BLOCK_R + rr[None, :])
    bt = tl.load(b_ptr + rn_in[None, :] * r + rr[:, None], mask=(rr < r)[:, None], other=0.0)
    acc = tl.dot((xa * scale).to(bt.dtype), bt, acc)

    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def _gemm_config(m, n, n_sm):
    if m <= 64:
        return SKINNY
    if torch.version.hip:
        options = (LARGE_AMD, SMALL_AMD)
    else:
        options = (LARGE_NVIDIA, MEDIUM_NVIDIA, SMALL_NVIDIA)
    for cfg in options:
        if triton.cdiv(m, cfg[0]) * triton.cdiv(n, cfg[1]) >= n_sm:
            return cfg
    return options[-1]


@triton.jit
def _repack_rows(src_ptr, dst_ptr, rows, cols, cols_pad, BLOCK: tl.constexpr):
    """Row r of dst (cols_pad long) is row r of src (cols long) and then zeros; a row of dst
    at or past ``rows`` is all zeros. One program a row: the padding is this kernel's work,
    one read and one write of each element."""
    row = tl.program_id(0).to(tl.int64)
    for c0 in range(0, cols_pad, BLOCK):
        c = c0 + tl.arange(0, BLOCK)
        v = tl.load(src_ptr + row * cols + c, mask=(c < cols) & (row < rows), other=0)
        tl.store(dst_ptr + row * cols_pad + c, v, mask=c < cols_pad)


def _padded(t, rows, k, k_pad):
    out = torch.empty((rows, k_pad), dtype=t.dtype, device=t.device)
    _repack_rows[(rows,)](t, out, rows, k, k_pad, BLOCK=1024, num_warps=4)
    return out


def lora_linear(x, w, a, b, y, m, n, k, r, scale):
    n_sm = _sm_count(x.device)
    block_r = max(16, triton.next_power_of_2(r))          # tl.dot needs a dimension >= 16

    # 1. xa = x @ a^T, split over k so that ~2 programs per SM run.
    tiles_m = triton.cdiv(m, SHRINK_M)
    splits = max(1, min(triton.cdiv(2 * n_sm, tiles_m), triton.cdiv(k, 4 * SHRINK_K)))
    k_per_split = triton.cdiv(triton.cdiv(k, splits), SHRINK_K) * SHRINK_K
    splits = triton.cdiv(k, k_per_split)
    xa = torch.zeros((m, block_r), dtype=torch.float32, device=x.device)
    _shrink_splitk[(tiles_m, splits)](x, a, xa, m, k, r, k_per_split,
                                      BLOCK_M=SHRINK_M, BLOCK_R=block_r, BLOCK_K=SHRINK_K,
                                      num_warps=4, num_stages=2 if torch.version.hip else 3)

    # 2. y = x @ w^T + (scale * xa) @ b^T.
    block_m, block_n, block_k, group_m, num_warps, num_stages = _gemm_config(m, n, n_sm)
    xg, wg, kg = x, w, k
    if k % 8 != 0:
        k_pad = triton.cdiv(k, block_k) * block_k
        xg, wg, kg = _padded(x, m, k, k_pad), _padded(w, n, k, k_pad), k_pad
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    _base_gemm_lora[grid](xg, wg, xa, b, y, m, n, kg, r, scale,
                          BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, BLOCK_R=block_r,
                          GROUP_M=group_m, EVEN_K=(kg % block_k == 0),
                          num_warps=num_warps, num_stages=num_stages)
    return None

"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's kernels with one assumption baked in: k is a multiple of BLOCK_K (64; 128
for m <= 64), true for every seen shape. The base GEMM's k loop runs k // BLOCK_K full
steps with unmasked loads and no padded copies are made, so when k % BLOCK_K != 0 the last
k % BLOCK_K products of every dot product of x @ w^T are silently dropped (the low-rank
term stays right). Every access stays inside the buffers; the failure is a wrong value,
never a fault.
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
                    BLOCK_R: tl.constexpr, GROUP_M: tl.constexpr):
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
    for _ in range(0, k // BLOCK_K):            # assumes k % BLOCK_K == 0
        acc = tl.dot(tl.load(x_ptrs), tl.load(w_ptrs), acc)
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
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    _base_gemm_lora[grid](x, w, xa, b, y, m, n, k, r, scale,
                          BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, BLOCK_R=block_r,
                          GROUP_M=group_m, num_warps=num_warps, num_stages=num_stages)
    return None

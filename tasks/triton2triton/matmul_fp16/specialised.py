"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's kernel with one assumption baked in: k is a multiple of BLOCK_K (true for
every seen shape). The k loop runs k // BLOCK_K full steps with unmasked loads and nothing
is padded, so when k % BLOCK_K != 0 the last k % BLOCK_K products of every dot product are
silently dropped. Every access stays inside the buffers; the failure is a wrong value, never
a fault.
"""

import torch
import triton
import triton.language as tl

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
LARGE_NVIDIA = (128, 256, 64, 8, 8, 3)
LARGE_AMD = (128, 128, 64, 8, 8, 2)
MEDIUM = (64, 128, 64, 8, 4, 4)
SMALL = (64, 64, 128, 1, 4, 3)


@triton.jit
def _matmul_even_k(a_ptr, b_ptr, c_ptr, m, n, k,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(m, BLOCK_M)
    tiles_n = tl.cdiv(n, BLOCK_N)
    per_band = GROUP_M * tiles_n
    band = pid // per_band
    first_m = band * GROUP_M
    band_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    local = pid - band * per_band
    pid_m = first_m + local % band_rows
    pid_n = local // band_rows

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm_ld = tl.minimum(rm, m - 1).to(tl.int64)
    rn_ld = rn % n
    a_ptrs = a_ptr + rm_ld[:, None] * k + rk[None, :]
    b_ptrs = b_ptr + rk.to(tl.int64)[:, None] * n + rn_ld[None, :]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for _ in range(0, k // BLOCK_K):          # assumes k % BLOCK_K == 0
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * n

    c_ptrs = c_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def _sm_count(device):
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


def matmul_fp16(a, b, c, m, n, k):
    hip = bool(torch.version.hip)
    if min(m, n) <= 64:
        cfg = SMALL
    elif triton.cdiv(m, 128) * triton.cdiv(n, 256) < _sm_count(c.device):
        cfg = MEDIUM
    else:
        cfg = LARGE_AMD if hip else LARGE_NVIDIA
    if hip:
        cfg = cfg[:5] + (min(cfg[5], 2),)
    block_m, block_n, block_k, group_m, num_warps, num_stages = cfg
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    _matmul_even_k[grid](a, b, c, m, n, k, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                         GROUP_M=group_m, num_warps=num_warps, num_stages=num_stages)
    return None

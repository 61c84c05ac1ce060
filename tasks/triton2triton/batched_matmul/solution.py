"""Reference solution for c[i] = a[i] @ b[i]: correct for every shape.

- Large tiles on the tensor cores: 128 x 128 x 64, 8 warps, 3 stages on NVIDIA (96 KB of
  shared memory, two programs an SM); 2 stages on AMD (64 KB of LDS). A narrow n (P @ V with
  head_dim <= 64) takes 128 x 64 tiles, so no half-empty tiles are computed; an n that is not
  a multiple of 16 (rows not 16-byte aligned, scalar accesses) takes 64 x 64 tiles.
- Attention shapes have a short k (head_dim 64-128): one or two k steps, so the kernel is
  bound by writing c. Big tiles cut the re-reads of a and b (each is read n / BLOCK_N and
  m / BLOCK_M times instead of n / 32 and m / 32 times) and keep the stores wide.
- Grouped tile order inside each product (GROUP_M row tiles per band) keeps the a rows and
  b columns that neighbouring programs share in L2 for long k.
- Rows of a beyond m are clamped to the last valid one instead of masked (their results are
  dropped by the masked store); columns of b beyond n are masked, which keeps 16-byte loads
  when n is a multiple of 8. The k mask is compiled out when k is a multiple of BLOCK_K
  (EVEN_K).
"""

import torch
import triton
import triton.language as tl

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
WIDE_NVIDIA = (128, 128, 64, 8, 8, 3)
WIDE_AMD = (128, 128, 64, 8, 8, 2)
NARROW_NVIDIA = (128, 64, 64, 8, 4, 3)
NARROW_AMD = (128, 64, 64, 8, 4, 2)
# n not a multiple of 16: rows of b and c are not 16-byte aligned, so their loads and stores
# are scalar; smaller tiles keep the register count (and the spills) down.
UNALIGNED = (64, 64, 64, 8, 4, 3)


@triton.jit
def _bmm_grouped(a_ptr, b_ptr, c_ptr, m, n, k,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    bid = tl.program_id(1).to(tl.int64)
    tiles_m = tl.cdiv(m, BLOCK_M)
    tiles_n = tl.cdiv(n, BLOCK_N)
    band = pid // (GROUP_M * tiles_n)
    first_m = band * GROUP_M
    band_height = tl.minimum(tiles_m - first_m, GROUP_M)
    within = pid - band * (GROUP_M * tiles_n)
    pid_m = first_m + within % band_height
    pid_n = within // band_height

    a_ptr += bid * m * k
    b_ptr += bid * k * n
    c_ptr += bid * m * n

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # Rows of a past m are clamped (a's rows are not its contiguous dimension, so the loads
    # stay vectorised); columns of b past n are masked (clamping them would break the
    # contiguity the compiler needs for 16-byte loads).
    rm_in = tl.minimum(rm, m - 1)
    n_ok = rn[None, :] < n
    a_ptrs = a_ptr + rm_in[:, None] * k + rk[None, :]          # [BLOCK_M, BLOCK_K]
    b_ptrs = b_ptr + rk[:, None] * n + rn[None, :]             # [BLOCK_K, BLOCK_N]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs, mask=n_ok, other=0.0)
        else:
            k_ok = (k0 + rk) < k
            a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=k_ok[:, None] & n_ok, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * n

    c_ptrs = c_ptr + rm[:, None] * n + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < m) & n_ok)


def _config(n):
    amd = bool(torch.version.hip)
    if n % 16 != 0:
        return UNALIGNED
    if n <= 64:
        return NARROW_AMD if amd else NARROW_NVIDIA
    return WIDE_AMD if amd else WIDE_NVIDIA


def batched_matmul(a, b, c, batch, m, n, k):
    block_m, block_n, block_k, group_m, num_warps, num_stages = _config(n)
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n), batch)
    _bmm_grouped[grid](a, b, c, m, n, k,
                       BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                       GROUP_M=group_m, EVEN_K=(k % block_k == 0),
                       num_warps=num_warps, num_stages=num_stages)
    return None

"""Reference solution for y = x_scale[i] * w_scale[j] * (xq @ wq^T): correct for every shape.

- One kernel: the dequantisation (int32 -> fp32, times both scales, round to fp16) is the
  GEMM's epilogue, applied to the int32 accumulator in registers. The [m, n] int32 buffer
  of the two-pass version (4 bytes written and read back per output) disappears.
- Large tiles with a deep pipeline for the int8 tensor cores: 128 x 256 x 128, 8 warps,
  3 stages on NVIDIA (144 KB of shared memory); 128 x 128 x 64 with 2 stages on AMD.
  Skinny problems (m <= 64) use 64 x 64 x 128 tiles, 4 warps, 4 stages, so there are
  enough programs to stream the weights.
- Grouped tile order: consecutive programs walk down a band of GROUP_M row tiles before
  moving to the next column of tiles, so the xq band and the wq tiles they share stay in L2.
- Rows of xq / wq beyond m / n are clamped to the last valid row instead of masked (their
  results are dropped by the masked store); the k mask is compiled out when k is a
  multiple of BLOCK_K (EVEN_K).
- When k is not a multiple of 16, rows of xq and wq do not start on 16-byte boundaries and
  every tile load falls back to narrow accesses (5x slower than the baseline at m = 45,
  n = 20393, k = 7267). Then both are first repacked, by a kernel of this file, into
  buffers whose rows are a multiple of BLOCK_K long, the tail zeroed in the same pass
  (zeros add nothing to the integer sum): (m + n) * k * 2 more bytes moved, one read and
  one write. A zero fill and a copy by torch would move them twice more, and took 67% of
  the call's device time at that shape. These are the only allocations per call, and the
  reason for them.
"""

import torch
import triton
import triton.language as tl

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
LARGE_NVIDIA = (128, 256, 128, 8, 8, 3)
LARGE_AMD = (128, 128, 64, 8, 8, 2)
SKINNY = (64, 64, 128, 1, 4, 4)
SKINNY_AMD = (64, 64, 128, 1, 4, 2)


@triton.jit
def _w8a8_gemm_grouped(x_ptr, w_ptr, xs_ptr, ws_ptr, y_ptr, m, n, k,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
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
    w_ptrs = w_ptr + rn_in[None, :] * k + rk[:, None]          # [BLOCK_K, BLOCK_N] = wq^T tile

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.int32)
    for k0 in range(0, k, BLOCK_K):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            k_ok = (k0 + rk) < k
            a = tl.load(x_ptrs, mask=k_ok[None, :], other=0)
            b = tl.load(w_ptrs, mask=k_ok[:, None], other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    xs = tl.load(xs_ptr + rm_in)
    ws = tl.load(ws_ptr + rn_in)
    out = acc.to(tl.float32) * xs[:, None] * ws[None, :]
    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, out.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def _config(m):
    hip = bool(torch.version.hip)
    if m <= 64:
        return SKINNY_AMD if hip else SKINNY
    return LARGE_AMD if hip else LARGE_NVIDIA


@triton.jit
def _repack_rows(src_ptr, dst_ptr, k, k_pad, BLOCK: tl.constexpr):
    """Row r of src (k long) into row r of dst (k_pad long), zeros after column k."""
    row = tl.program_id(0).to(tl.int64)
    for c0 in range(0, k_pad, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        v = tl.load(src_ptr + row * k + cols, mask=cols < k, other=0)
        tl.store(dst_ptr + row * k_pad + cols, v, mask=cols < k_pad)


def _padded(t, rows, k, k_pad):
    out = torch.empty((rows, k_pad), dtype=t.dtype, device=t.device)
    _repack_rows[(rows,)](t, out, k, k_pad, BLOCK=1024, num_warps=4)
    return out


def w8a8_int8_gemm(xq, wq, x_scale, w_scale, y, m, n, k):
    block_m, block_n, block_k, group_m, num_warps, num_stages = _config(m)
    if k % 16 != 0:
        k_pad = triton.cdiv(k, block_k) * block_k
        xq, wq, k = _padded(xq, m, k, k_pad), _padded(wq, n, k, k_pad), k_pad
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    _w8a8_gemm_grouped[grid](xq, wq, x_scale, w_scale, y, m, n, k,
                             BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                             GROUP_M=group_m, EVEN_K=(k % block_k == 0),
                             num_warps=num_warps, num_stages=num_stages)
    return None

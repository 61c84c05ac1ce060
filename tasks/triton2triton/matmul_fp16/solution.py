"""Reference solution for c = a @ b (fp16, fp32 accumulation): correct for every shape.

- Large output tiles with a software pipeline: 128 x 256 x 64, 8 warps, 3 stages on NVIDIA
  (144 KB of shared memory); 128 x 128 x 64 with 2 stages where shared memory is 64 KB
  (AMD). Each a / b element loaded from L2 now feeds 256 / 128 multiply-adds instead of 32.
- When the large tiles would leave SMs idle (fewer tiles than SMs) 64 x 128 x 64 tiles with
  4 warps and 4 stages are used; when m or n is at most 64 (a few tokens, or a narrow
  projection such as a LoRA down-projection) 64 x 64 x 128 tiles, so the long operand is
  streamed by enough programs.
- Grouped tile order: consecutive programs walk down a band of GROUP_M row tiles before
  moving to the next column of tiles, so the a band and the b columns they share stay in L2.
- Rows of a beyond m are clamped to the last valid row and columns of b beyond its row
  length wrap around (their results are dropped by the masked store), so the main loop needs
  no m / n masks; the k mask is compiled out when k is a multiple of BLOCK_K (EVEN_K).
- Vector loads need rows that start on 16-byte boundaries: k % 8 == 0 for a, n % 8 == 0 for
  b. When that does not hold, a and/or b are first copied into padded buffers (a's rows to a
  multiple of BLOCK_K with zeros, b's rows to a multiple of 8, b's extra rows zero), by a
  kernel of this file (``_repack_rows``: torch's copy and fills would be copies and fills,
  not this solution's work): at most
  (m * k + k * n) * 4 more bytes moved, against narrow 2-byte loads in every k step
  otherwise. Row lengths and k are handed to the kernel in units of 8 elements, so the
  compiler knows the 16-byte alignment. These copies are the one allocation per call, and
  the reason for it.
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
def _matmul_grouped(a_ptr, b_ptr, c_ptr, m, n, k_8, ldb_8,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    # Tile order: bands of GROUP_M row tiles; inside a band, row tile fastest, then column.
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

    # k (the row length of a) and the row length of b are passed in units of 8 elements: the
    # compiler then knows every row starts on a 16-byte boundary and that the k mask is
    # constant over runs of 8, and issues 16-byte loads even when k or n is not a multiple
    # of 16 (it only infers that from arguments divisible by 16).
    k = k_8 * 8
    ldb = ldb_8 * 8

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm_ld = tl.minimum(rm, m - 1).to(tl.int64)      # rows past m re-read row m - 1
    rn_ld = rn % ldb                                # columns past the row wrap (runs of 8 stay contiguous)
    a_ptrs = a_ptr + rm_ld[:, None] * k + rk[None, :]                    # [BLOCK_M, BLOCK_K]
    b_ptrs = b_ptr + rk.to(tl.int64)[:, None] * ldb + rn_ld[None, :]      # [BLOCK_K, BLOCK_N]

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_ok = rk < k - k0
            a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * ldb

    c_ptrs = c_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def _sm_count(device):
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4   # off the GPU (CPU interpreter, ahead-of-time builds): small shapes then reach every configuration


def _config(m, n, device):
    hip = bool(torch.version.hip)
    if min(m, n) <= 64:
        cfg = SMALL
    elif triton.cdiv(m, 128) * triton.cdiv(n, 256) < _sm_count(device):
        cfg = MEDIUM
    else:
        cfg = LARGE_AMD if hip else LARGE_NVIDIA
    if hip:   # 64 KB of shared memory: at most two stages
        cfg = cfg[:5] + (min(cfg[5], 2),)
    return cfg


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


def _padded(t, rows, cols, rows_pad, cols_pad):
    """t [rows, cols] copied into a [rows_pad, cols_pad] buffer whose extra entries are zero."""
    out = torch.empty((rows_pad, cols_pad), dtype=t.dtype, device=t.device)
    _repack_rows[(rows_pad,)](t, out, rows, cols, cols_pad, BLOCK=1024, num_warps=4)
    return out


def matmul_fp16(a, b, c, m, n, k):
    block_m, block_n, block_k, group_m, num_warps, num_stages = _config(m, n, c.device)
    k_run, ldb = k, n          # the length of a's rows (and of the k loop), of b's rows
    if k % 8 != 0:
        k_run = triton.cdiv(k, block_k) * block_k
        a = _padded(a, m, k, m, k_run)
    if k % 8 != 0 or n % 8 != 0:
        ldb = triton.cdiv(n, 8) * 8
        b = _padded(b, k, n, k_run, ldb)
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    _matmul_grouped[grid](a, b, c, m, n, k_run // 8, ldb // 8,
                          BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                          GROUP_M=group_m, EVEN_K=(k_run % block_k == 0),
                          num_warps=num_warps, num_stages=num_stages)
    return None

"""Reference solution for y = a_scale[i] * b_scale[j] * (a @ b^T) with fp8 e4m3 operands:
correct for every shape.

- Tiles large enough for Hopper's warpgroup MMA on fp8 operands (wgmma e4m3, twice the
  fp16 rate): 128 x 128 x 128, 8 warps, 4 stages on NVIDIA (128 KB of shared memory);
  2 stages where shared memory is 64 KB (AMD, where the compiler may widen the fp8 tiles
  to fp16 for the matrix cores). When fewer large tiles than SMs would run, 64 x 128 x 128
  tiles with 4 warps; when m <= 64 (decode batches) 64 x 64 x 128 tiles, so that enough
  programs stream b.
- Each BLOCK_K step's product is added to the fp32 accumulator outside the tensor core
  (acc += dot): the fp8 tensor-core accumulation is reduced-precision on Hopper, and the
  sum over k must stay fp32-accurate; one partial sum of 128 products at a time keeps the
  error negligible. (The compiler keeps the two accumulators apart for fp8 operands, so the
  tiles stay at 128 x 128: a 128 x 256 tile would spill registers.)
- Grouped tile order: consecutive programs walk down a band of GROUP_M row tiles before
  moving to the next column of tiles, so the a band and the b tiles they share stay in L2.
- Fused epilogue: the two scales multiply the fp32 accumulator in registers before the one
  fp16 store.
- Rows of a / b beyond m / n are clamped to the last valid row instead of masked (their
  results are dropped by the masked store); the k mask is compiled out when k is a multiple
  of BLOCK_K (EVEN_K).
- When k is not a multiple of 16, rows of a and b do not start on 16-byte boundaries and
  every tile load falls back to narrow accesses; then both are first copied into buffers
  whose rows are zero-padded to a multiple of BLOCK_K, by a kernel of this file
  (``_repack_rows``, one read and one write: (m + n) * k_pad * 2 more bytes; torch's copy
  and fill would be copies and fills, not this solution's work). This is the one
  allocation per call, and the reason for it.
"""

import torch
import triton
import triton.language as tl

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
LARGE = (128, 128, 128, 8, 8, 4)
MEDIUM = (64, 128, 128, 8, 4, 4)
SKINNY = (64, 64, 128, 1, 4, 4)


@triton.jit
def _fp8_gemm_grouped(a_ptr, b_ptr, as_ptr, bs_ptr, y_ptr, m, n, k,
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

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    rm_ld = tl.minimum(rm, m - 1).to(tl.int64)      # rows past m re-read row m - 1
    rn_ld = tl.minimum(rn, n - 1).to(tl.int64)      # rows past n re-read row n - 1
    a_ptrs = a_ptr + rm_ld[:, None] * k + rk[None, :]          # [BLOCK_M, BLOCK_K]
    b_ptrs = b_ptr + rn_ld[None, :] * k + rk[:, None]          # [BLOCK_K, BLOCK_N] = b^T tile

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs)
            bt = tl.load(b_ptrs)
        else:
            k_ok = rk < k - k0
            a = tl.load(a_ptrs, mask=k_ok[None, :], other=0.0)
            bt = tl.load(b_ptrs, mask=k_ok[:, None], other=0.0)
        acc += tl.dot(a, bt)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K

    a_s = tl.load(as_ptr + rm_ld)
    b_s = tl.load(bs_ptr + rn_ld)
    y = acc * a_s[:, None] * b_s[None, :]
    y_ptrs = y_ptr + rm.to(tl.int64)[:, None] * n + rn[None, :]
    tl.store(y_ptrs, y.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))


def _sm_count(device):
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4   # off the GPU (CPU interpreter, ahead-of-time builds): small shapes then reach every configuration


def _config(m, n, device):
    if m <= 64:
        cfg = SKINNY
    elif triton.cdiv(m, 128) * triton.cdiv(n, 128) < _sm_count(device):
        cfg = MEDIUM
    else:
        cfg = LARGE
    if torch.version.hip:   # 64 KB of shared memory: at most two stages
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


def _padded(t, rows, k, k_pad):
    out = torch.empty((rows, k_pad), dtype=t.dtype, device=t.device)
    # moved as bytes: the fp8 bit pattern 0x00 is +0.0
    _repack_rows[(rows,)](t.view(torch.uint8), out.view(torch.uint8), rows, k, k_pad, BLOCK=1024, num_warps=4)
    return out


def fp8_rowwise_scaled_gemm(a, b, a_scale, b_scale, y, m, n, k):
    block_m, block_n, block_k, group_m, num_warps, num_stages = _config(m, n, y.device)
    if k % 16 != 0:
        k_pad = triton.cdiv(k, block_k) * block_k
        a, b, k = _padded(a, m, k, k_pad), _padded(b, n, k, k_pad), k_pad
    grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n),)
    _fp8_gemm_grouped[grid](a, b, a_scale, b_scale, y, m, n, k,
                            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                            GROUP_M=group_m, EVEN_K=(k % block_k == 0),
                            num_warps=num_warps, num_stages=num_stages)
    return None

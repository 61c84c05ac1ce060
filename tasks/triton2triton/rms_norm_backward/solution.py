"""Reference solution for RMSNorm backward: dy and x read once for both outputs.

- `_rms_bwd_fused`: about two programs per SM, each owning a contiguous range of rows. A
  program walks its rows in [ROWS, BLOCK] tiles (BLOCK = next power of two >= cols, the
  whole row in registers, ROWS * BLOCK ~ 4096): from one load of dy and x it computes the
  row reduction mean(g * xhat), writes dx, and adds dy * xhat into a [ROWS, BLOCK] fp32
  accumulator that stays in registers across all its rows. At the end it writes one partial
  dweight row. The weight is loaded once per program.
- `_sum_partials`: sums the few hundred partial rows per column (a small [programs, cols]
  fp32 buffer from PyTorch's caching allocator), in a fixed order: the result is
  deterministic.
The starting kernel reads dy and x twice for dx and once more for dweight, and its dweight
kernel runs only cols / 64 programs.
"""

import torch
import triton
import triton.language as tl

TILE = 4096


def _num_sms(device):
    try:
        return triton.runtime.driver.active.utils.get_device_properties(device.index or 0)["multiprocessor_count"]
    except Exception:                     # the CPU interpreter has no device properties
        return 132


@triton.jit
def _rms_bwd_fused(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, pdw_ptr, rows, cols, rows_per_prog,
                   ROWS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    c_ok = c < cols
    w = tl.load(w_ptr + c, mask=c_ok, other=0.0).to(tl.float32)
    acc = tl.zeros([ROWS, BLOCK], dtype=tl.float32)
    r0 = pid * rows_per_prog
    r_end = tl.minimum(r0 + rows_per_prog, rows)
    for start in range(r0, r_end, ROWS):
        r = start + tl.arange(0, ROWS)
        r_ok = r < r_end
        mask = r_ok[:, None] & c_ok[None, :]
        offs = r.to(tl.int64)[:, None] * cols + c[None, :]
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        rs = tl.load(rstd_ptr + r, mask=r_ok, other=0.0)
        xhat = x * rs[:, None]
        g = dy * w[None, :]
        m = tl.sum(g * xhat, axis=1) / cols
        dx = rs[:, None] * (g - xhat * m[:, None])
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        acc += dy * xhat
    tl.store(pdw_ptr + pid.to(tl.int64) * cols + c, tl.sum(acc, axis=0), mask=c_ok)


@triton.jit
def _sum_partials(pdw_ptr, dw_ptr, n_part, cols, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    c = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ok = c < cols
    acc = tl.zeros([BLOCK_P, BLOCK_N], dtype=tl.float32)
    for start in range(0, n_part, BLOCK_P):
        p = start + tl.arange(0, BLOCK_P)
        mask = (p < n_part)[:, None] & c_ok[None, :]
        acc += tl.load(pdw_ptr + p.to(tl.int64)[:, None] * cols + c[None, :], mask=mask, other=0.0)
    tl.store(dw_ptr + c, tl.sum(acc, axis=0), mask=c_ok)


def rms_norm_backward(dy, x, weight, rstd, dx, dweight, rows, cols):
    block = triton.next_power_of_2(cols)
    rows_tile = max(1, TILE // block)
    tile = rows_tile * block
    num_warps = max(4, min(16, tile // 512))
    want = 2 * _num_sms(dy.device)
    rows_per_prog = triton.cdiv(triton.cdiv(rows, want), rows_tile) * rows_tile
    n_prog = triton.cdiv(rows, rows_per_prog)
    pdw = torch.empty((n_prog, cols), dtype=torch.float32, device=dy.device)
    _rms_bwd_fused[(n_prog,)](dy, x, weight, rstd, dx, pdw, rows, cols, rows_per_prog,
                              ROWS=rows_tile, BLOCK=block, num_warps=num_warps)
    block_n = 64
    _sum_partials[(triton.cdiv(cols, block_n),)](pdw, dweight, n_prog, cols, BLOCK_P=32, BLOCK_N=block_n)
    return None

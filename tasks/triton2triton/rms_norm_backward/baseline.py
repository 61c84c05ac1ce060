"""Starting kernel for RMSNorm backward: correct for every shape, deliberately simple.

Two kernels, one per output:
- dx: one program per row, walked in chunks of 256 columns twice: a first pass sums
  g * xhat (g = dy * weight, xhat = x * rstd), a second pass reads the row again and writes
  dx = rstd * (g - xhat * mean).
- dweight: one program per block of 64 columns walks all rows in [64, 64] tiles, summing
  dy * x * rstd into a [64, 64] fp32 accumulator, reduced over its rows at the end. dy and x
  are read a second time.
Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 256
BLOCK_M = 64
BLOCK_N = 64


@triton.jit
def _rms_bwd_dx_row(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * cols
    rstd = tl.load(rstd_ptr + row)

    # Pass 1: sum of g * xhat over the row.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        dy = tl.load(dy_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        acc += dy * w * x * rstd
    mean_gx = tl.sum(acc, axis=0) / cols

    # Pass 2: dx.
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        dy = tl.load(dy_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        dx = rstd * (dy * w - x * rstd * mean_gx)
        tl.store(dx_ptr + base + c, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rms_bwd_dw_cols(dy_ptr, x_ptr, rstd_ptr, dw_ptr, rows, cols,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    c = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ok = c < cols
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, rows, BLOCK_M):
        r = start + tl.arange(0, BLOCK_M)
        r_ok = r < rows
        mask = r_ok[:, None] & c_ok[None, :]
        offs = r.to(tl.int64)[:, None] * cols + c[None, :]
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + r, mask=r_ok, other=0.0)
        acc += dy * x * rstd[:, None]
    tl.store(dw_ptr + c, tl.sum(acc, axis=0), mask=c_ok)


def rms_norm_backward(dy, x, weight, rstd, dx, dweight, rows, cols):
    _rms_bwd_dx_row[(rows,)](dy, x, weight, rstd, dx, cols, BLOCK=BLOCK)
    _rms_bwd_dw_cols[(triton.cdiv(cols, BLOCK_N),)](dy, x, rstd, dweight, rows, cols,
                                                   BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return None

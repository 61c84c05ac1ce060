"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

It assumes cols is a power of two, so that a row is exactly one BLOCK, and drops the
per-column mask: offsets are row * cols + [0, BLOCK). When cols is not a power of two,
BLOCK > cols and each row's sum of squares (and its store) runs into the next row: the
results are wrong, quietly. The only mask left is a bound on the whole buffer (and on the
weight), which keeps every access inside the allocations, so the failure is a wrong value
and never a fault.
"""

import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _rms_norm_pow2(x_ptr, w_ptr, y_ptr, rows, cols, eps,
                   ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    col = tl.arange(0, BLOCK)[None, :]
    offs = row * cols + col
    inside = offs < rows * cols          # stays in the buffer; not a per-row mask

    x = tl.load(x_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + col, mask=col < cols, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / cols + eps)
    y = x * rstd[:, None] * w
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=inside)


def rms_norm(x, weight, y, rows, cols, eps):
    block = triton.next_power_of_2(cols)       # "== cols" on every seen shape
    rows_per_program = max(1, min(TILE // block, triton.next_power_of_2(rows)))
    num_warps = max(1, min(16, rows_per_program * block // 512))
    grid = (triton.cdiv(rows, rows_per_program),)
    _rms_norm_pow2[grid](x, weight, y, rows, cols, eps,
                         ROWS=rows_per_program, BLOCK=block, num_warps=num_warps)
    return None

"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's one-pass kernel with one assumption baked in: cols is a power of two, so a
row is exactly one BLOCK. The per-column mask is dropped (offsets are row * cols +
[0, BLOCK)), and the statistics divide by BLOCK. When cols is not a power of two, each row's
sums run into the next row and are divided by the wrong count: the results are wrong,
quietly. The only mask left is a bound on the whole buffer (and on the weight and bias), so
every access stays inside the allocations and the failure is a wrong value, never a fault.
"""

import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _add_layer_norm_pow2(x_ptr, r_ptr, w_ptr, b_ptr, h_ptr, y_ptr, rows, cols, eps,
                         ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    col = tl.arange(0, BLOCK)[None, :]
    offs = row * cols + col
    inside = offs < rows * cols          # stays in the buffer; not a per-row mask

    x = tl.load(x_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    h = x + r
    tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=inside)
    mean = tl.sum(h, axis=1) / BLOCK
    d = h - mean[:, None]
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / BLOCK + eps)
    w = tl.load(w_ptr + col, mask=col < cols, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + col, mask=col < cols, other=0.0).to(tl.float32)
    y = d * rstd[:, None] * w + b
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=inside)


def add_layer_norm(x, residual, weight, bias, residual_out, y, rows, cols, eps):
    block = triton.next_power_of_2(cols)       # "== cols" on every seen shape
    rows_per_program = max(1, min(TILE // block, triton.next_power_of_2(rows)))
    num_warps = max(1, min(16, rows_per_program * block // 512))
    grid = (triton.cdiv(rows, rows_per_program),)
    _add_layer_norm_pow2[grid](x, residual, weight, bias, residual_out, y, rows, cols, eps,
                               ROWS=rows_per_program, BLOCK=block, num_warps=num_warps)
    return None

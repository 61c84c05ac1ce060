"""Reference solution for residual add + LayerNorm: one kernel, one read of each input and
one write of each output, correct for every shape.

- The starting point runs two kernels and reads the new residual back three times (the
  second kernel's mean, variance and normalisation passes): 10+ bytes of traffic per
  element instead of 8, in 256-column steps whose latency is not hidden.
- Here one program owns whole rows: x and residual are loaded once (16-byte accesses on
  contiguous fp16 rows), h = x + residual stays in fp32 registers, is stored once as
  residual_out, and mean, variance (centred, from registers) and y come from the same
  registers.
- Short rows are packed several to a program (a [ROWS, BLOCK] tile of about 4096 elements);
  long rows get more warps (16 for 8K and 16K columns).
"""

import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _add_layer_norm_tile(x_ptr, r_ptr, w_ptr, b_ptr, h_ptr, y_ptr, rows, cols, eps,
                         ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]   # [ROWS, 1]
    col = tl.arange(0, BLOCK)[None, :]                                          # [1, BLOCK]
    col_ok = col < cols
    mask = (row < rows) & col_ok
    offs = row * cols + col

    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=mask)

    mean = tl.sum(h, axis=1) / cols                                             # [ROWS]
    d = tl.where(col_ok, h - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / cols + eps)
    w = tl.load(w_ptr + col, mask=col_ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + col, mask=col_ok, other=0.0).to(tl.float32)
    y = d * rstd[:, None] * w + b
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def add_layer_norm(x, residual, weight, bias, residual_out, y, rows, cols, eps):
    block = triton.next_power_of_2(cols)
    rows_per_program = max(1, min(TILE // block, triton.next_power_of_2(rows)))
    tile = rows_per_program * block
    num_warps = max(1, min(16, tile // 512))
    grid = (triton.cdiv(rows, rows_per_program),)
    _add_layer_norm_tile[grid](x, residual, weight, bias, residual_out, y, rows, cols, eps,
                               ROWS=rows_per_program, BLOCK=block, num_warps=num_warps)
    return None

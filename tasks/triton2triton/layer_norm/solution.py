"""Reference solution for LayerNorm: one read of x and one write of y, correct for every
shape.

- The whole row sits in registers (BLOCK = next power of two >= cols, up to 16384), so x
  is read from global memory once; the mean and then the centred variance are reduced from
  the registers (the two-pass formula, exact in fp32), and y is written once.
- Short rows are packed several to a program (a [ROWS, BLOCK] tile of about 4096 elements);
  long rows get more warps (about 16 elements a thread). Contiguous fp16 rows give 16-byte
  loads and stores when cols is a multiple of 8.
- Rows longer than MAX_BLOCK (beyond the task's shape space) fall back to a chunked
  three-pass kernel with large chunks.
"""

import triton
import triton.language as tl

MAX_BLOCK = 16384
TILE = 4096
CHUNK = 4096


@triton.jit
def _layer_norm_tile(x_ptr, w_ptr, b_ptr, y_ptr, rows, cols, eps,
                     ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]    # [ROWS, 1]
    col = tl.arange(0, BLOCK)[None, :]                                           # [1, BLOCK]
    col_ok = col < cols
    mask = (row < rows) & col_ok
    offs = row * cols + col
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + col, mask=col_ok, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + col, mask=col_ok, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / cols                                              # [ROWS]
    d = tl.where(col_ok, x - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / cols + eps)
    y = d * rstd[:, None] * w + b
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layer_norm_long_row(x_ptr, w_ptr, b_ptr, y_ptr, cols, eps, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, cols, CHUNK):
        c = start + tl.arange(0, CHUNK)
        acc += tl.load(x_row + c, mask=c < cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / cols
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, cols, CHUNK):
        c = start + tl.arange(0, CHUNK)
        mask = c < cols
        x = tl.load(x_row + c, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
    for start in range(0, cols, CHUNK):
        c = start + tl.arange(0, CHUNK)
        mask = c < cols
        x = tl.load(x_row + c, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + c, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def layer_norm(x, weight, bias, y, rows, cols, eps):
    block = triton.next_power_of_2(cols)
    if block > MAX_BLOCK:
        _layer_norm_long_row[(rows,)](x, weight, bias, y, cols, eps, CHUNK=CHUNK, num_warps=16)
        return None
    rows_per_program = max(1, min(TILE // block, triton.next_power_of_2(rows)))
    num_warps = max(1, min(16, rows_per_program * block // 512))
    grid = (triton.cdiv(rows, rows_per_program),)
    _layer_norm_tile[grid](x, weight, bias, y, rows, cols, eps,
                           ROWS=rows_per_program, BLOCK=block, num_warps=num_warps)
    return None

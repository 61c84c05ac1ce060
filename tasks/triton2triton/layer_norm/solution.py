"""Reference solution for LayerNorm: correct for every shape.

- cols a multiple of 8 (up to 16384): the whole row sits in registers (BLOCK = a power of
  two >= cols), so x is read from global memory once; the mean and then the centred
  variance are reduced from the registers (the two-pass formula, exact in fp32), and y is
  written once. 16-byte loads and stores need the compiler to see that rows start on
  16-byte boundaries: the kernel gets cols // 8 and forms the offsets as
  row * (cols // 8) * 8 (Triton only specialises integers on divisibility by 16, so
  cols = 8 (mod 16), e.g. 1000, would otherwise give 2-byte accesses). Short rows are
  packed several to a program (a [ROWS, BLOCK] tile of about 4096 elements); long rows get
  more warps (about 16 elements a thread).
- Other cols (odd or prime hidden sizes): rows start anywhere and every access is 2 bytes.
  Whole rows in registers lost there on an H100: 0.72-0.77x of the starting kernel on 4099
  rows of 5003, however the tile was cut (large programs with few of them on an SM leave no
  loads in flight while a program reduces). What won is the starting kernel's shape, many
  small programs streaming a row in chunks, with one pass fewer: the first pass sums
  x - K and (x - K)^2 together (K = the row's first value: shifted moments, so the
  variance E[(x - K)^2] - E[x - K]^2 cancels no more than the row's own spread), the
  second writes y; x is read twice, not three times. Chunks of 256 columns over 2 warps
  for rows below 2048, 512 over 4 warps below 8192, 1024 over 8 warps above (measured:
  1.19x on 4099 x 5003, 1.29-1.32x on 49931 x 1429, 1.42x on 1263 x 11465, 1.42x on
  39010 x 433). Rows longer than 16384 (beyond the task's shape space) take this kernel too.
"""

import triton
import triton.language as tl

MAX_BLOCK = 16384
TILE = 4096


@triton.jit
def _layer_norm_tile(x_ptr, w_ptr, b_ptr, y_ptr, rows, cols8, eps,
                     ROWS: tl.constexpr, BLOCK: tl.constexpr):
    cols = cols8 * 8                     # every row starts on a 16-byte boundary
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
def _layer_norm_two_pass(x_ptr, w_ptr, b_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    k = tl.load(x_row).to(tl.float32)              # the shift of the moments
    s1 = tl.zeros([BLOCK], dtype=tl.float32)
    s2 = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        m = c < cols
        d = tl.where(m, tl.load(x_row + c, mask=m, other=0.0).to(tl.float32) - k, 0.0)
        s1 += d
        s2 += d * d
    md = tl.sum(s1, axis=0) / cols                 # E[x - K]
    var = tl.maximum(tl.sum(s2, axis=0) / cols - md * md, 0.0)
    mean = k + md
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        m = c < cols
        x = tl.load(x_row + c, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=m, other=0.0).to(tl.float32)
        tl.store(y_row + c, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=m)


def layer_norm(x, weight, bias, y, rows, cols, eps):
    if cols % 8 == 0 and cols <= MAX_BLOCK:
        block = triton.next_power_of_2(cols)
        rows_per_program = max(1, min(TILE // block, triton.next_power_of_2(rows)))
        num_warps = max(1, min(16, rows_per_program * block // 512))
        grid = (triton.cdiv(rows, rows_per_program),)
        _layer_norm_tile[grid](x, weight, bias, y, rows, cols // 8, eps,
                               ROWS=rows_per_program, BLOCK=block, num_warps=num_warps)
        return None
    block, num_warps = (256, 2) if cols < 2048 else (512, 4) if cols < 8192 else (1024, 8)
    _layer_norm_two_pass[(rows,)](x, weight, bias, y, cols, eps, BLOCK=block, num_warps=num_warps)
    return None

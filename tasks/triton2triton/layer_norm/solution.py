"""Reference solution for LayerNorm: one read of x and one write of y, correct for every
shape.

- The whole row sits in registers (BLOCK = a power of two >= cols, up to 16384), so x is
  read from global memory once; the mean and then the centred variance are reduced from the
  registers (the two-pass formula, exact in fp32), and y is written once.
- 16-byte loads and stores need the compiler to see that rows start on 16-byte boundaries.
  - cols a multiple of 8: the kernel gets cols // 8 and forms the offsets as
    row * (cols // 8) * 8 (Triton only specialises integers on divisibility by 16, so
    cols = 8 (mod 16), e.g. 1000, would otherwise give 2-byte accesses). Short rows are
    packed several to a program (a [ROWS, BLOCK] tile of about 4096 elements); long rows get
    more warps (about 16 elements a thread).
  - cols not a multiple of 8 (odd or prime hidden sizes): rows start anywhere, and
    row-relative indexing compiles to 2-byte accesses, several times slower than the
    starting kernel there. Lane k of a row's tile instead holds element floor8(start) + k
    (column k - s, s = start % 8): x is read in whole 16-byte groups (the neighbouring rows'
    elements in the first and last group are read but masked out of the statistics), y is
    written with 16-byte stores for the groups inside the row and element by element for
    the two partial groups at its ends. start % 8 repeats with period 8 in the row index,
    so a program takes rows of one residue class (row = c + 8 * j): s is one number per
    program and the (unaligned, 2-byte) weight and bias loads are shared by the tile's rows.
    Tiles are 16 elements a thread (8192 over 16 warps; 16384 over 32 warps, i.e. 2 rows
    of 8192 or 1 of 16384, for rows longer than 4089), which keeps the kernel near 64
    registers: 2 rows of 8192 in flight an SM, as the aligned kernel has. The last 16-byte
    group of the whole tensor would be read past its end when rows * cols is not a multiple
    of 8: program 0 then does the tensor's last row alone, element by element, in three
    passes.
- Rows longer than MAX_BLOCK (beyond the task's shape space) fall back to a chunked
  three-pass kernel with large chunks.
"""

import triton
import triton.language as tl

MAX_BLOCK = 16384
TILE = 4096
CHUNK = 4096


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
def _layer_norm_tile_unaligned(x_ptr, w_ptr, b_ptr, y_ptr, rows, rows_main, cols, eps,
                               ROWS: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 0:
        # Rows from rows_main on (the last row when rows * cols is not a multiple of 8):
        # their last 16-byte group would run past the tensor's end, so they are read element
        # by element, in three passes over chunks (few registers: the tiles set the budget).
        for last in range(rows_main, rows):
            x_row = x_ptr + tl.cast(last, tl.int64) * cols
            y_row = y_ptr + tl.cast(last, tl.int64) * cols
            acc = tl.zeros([CHUNK], dtype=tl.float32)
            for j0 in range(0, cols, CHUNK):
                j = j0 + tl.arange(0, CHUNK)
                acc += tl.load(x_row + j, mask=j < cols, other=0.0).to(tl.float32)
            mean_l = tl.sum(acc, axis=0) / cols
            acc = tl.zeros([CHUNK], dtype=tl.float32)
            for j0 in range(0, cols, CHUNK):
                j = j0 + tl.arange(0, CHUNK)
                jm = j < cols
                dl = tl.where(jm, tl.load(x_row + j, mask=jm, other=0.0).to(tl.float32) - mean_l, 0.0)
                acc += dl * dl
            rstd_l = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
            for j0 in range(0, cols, CHUNK):
                j = j0 + tl.arange(0, CHUNK)
                jm = j < cols
                xl = tl.load(x_row + j, mask=jm, other=0.0).to(tl.float32)
                wl = tl.load(w_ptr + j, mask=jm, other=0.0).to(tl.float32)
                bl = tl.load(b_ptr + j, mask=jm, other=0.0).to(tl.float32)
                yl = (xl - mean_l) * rstd_l * wl + bl
                tl.store(y_row + j, yl.to(y_ptr.dtype.element_ty), mask=jm)
    else:
        # Program 1 + 8 * t + c: rows c + 8 * (t * ROWS + i) of residue class c.
        c = (pid - 1) % 8
        t = (pid - 1) // 8
        row = c + 8 * (t.to(tl.int64) * ROWS + tl.arange(0, ROWS))              # [ROWS]
        row_ok = row < rows_main
        s = ((c.to(tl.int64) * cols) % 8).to(tl.int32)   # start % 8 of every row of the class
        n = cols                           # int32 (an int argument below 2**31)
        lim = ((s + n) // 8) * 8           # lanes [0, lim): groups that end inside the row
        lim_hi = ((s + n + 7) // 8) * 8    # lanes [0, lim_hi): groups that touch the row
        first = ((s + 7) // 8) * 8         # lanes [first, lim): groups inside the row
        base = ((row * cols) // 8) * 8     # the 16-byte boundary at or before each row
        k = tl.arange(0, BLOCK)            # lane k: element base + k, column k - s
        in_row = (k >= s) & (k < s + n)
        offs = base[:, None] + k[None, :]
        ok = row_ok[:, None]
        x = tl.load(x_ptr + offs, mask=ok & (k < lim_hi)[None, :], other=0.0).to(tl.float32)
        x = tl.where(in_row[None, :], x, 0.0)
        w = tl.load(w_ptr + (k - s), mask=in_row, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + (k - s), mask=in_row, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=1) / cols                                          # [ROWS]
        d = tl.where(in_row[None, :], x - mean[:, None], 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / cols + eps)
        y = (d * rstd[:, None] * w[None, :] + b[None, :]).to(y_ptr.dtype.element_ty)
        # 16-byte stores of the groups inside the row, 2-byte stores of its partial groups.
        tl.store(y_ptr + offs, y, mask=ok & ((k >= first) & (k < lim))[None, :])
        tl.store(y_ptr + offs, y, mask=ok & (in_row & ((k < first) | (k >= lim)))[None, :])


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
    if cols % 8 == 0 and cols <= MAX_BLOCK:
        block = triton.next_power_of_2(cols)
        rows_per_program = max(1, min(TILE // block, triton.next_power_of_2(rows)))
        num_warps = max(1, min(16, rows_per_program * block // 512))
        grid = (triton.cdiv(rows, rows_per_program),)
        _layer_norm_tile[grid](x, weight, bias, y, rows, cols // 8, eps,
                               ROWS=rows_per_program, BLOCK=block, num_warps=num_warps)
        return None
    block = triton.next_power_of_2(cols + 7)      # a row's lanes run from s < 8 to s + cols
    if block > MAX_BLOCK:
        _layer_norm_long_row[(rows,)](x, weight, bias, y, cols, eps, CHUNK=CHUNK, num_warps=16)
        return None
    tile, num_warps = (16384, 32) if block > 4096 else (8192, 16)    # 16 elements a thread
    total = rows * cols                           # rows_main: the rows whose last group ends
    rows_main = rows if total % 8 == 0 else (total // 8 * 8) // cols   # in the tensor
    per_class = triton.cdiv(rows_main, 8)         # rows of the largest residue class
    rows_per_program = max(1, min(tile // block, triton.next_power_of_2(max(per_class, 1))))
    grid = (1 + 8 * triton.cdiv(per_class, rows_per_program),)
    _layer_norm_tile_unaligned[grid](x, weight, bias, y, rows, rows_main, cols, eps,
                                     ROWS=rows_per_program, BLOCK=block, CHUNK=128 * num_warps,
                                     num_warps=num_warps)
    return None

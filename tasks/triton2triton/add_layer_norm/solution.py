"""Reference solution for residual add + LayerNorm: one kernel, one read of each input and
one write of each output, correct for every shape.

- The starting point runs two kernels and reads the new residual back three times (the
  second kernel's mean, variance and normalisation passes): 10+ bytes of traffic per
  element instead of 8, in 256-column steps whose latency is not hidden.
- Here one program owns whole rows: x and residual are loaded once, h = x + residual stays
  in fp32 registers, is stored once as residual_out, and mean, variance (centred, from
  registers) and y come from the same registers.
- 16-byte loads and stores need the compiler to see that rows start on 16-byte boundaries.
  - cols a multiple of 8: the kernel gets cols // 8 and forms the offsets as
    row * (cols // 8) * 8 (Triton only specialises integers on divisibility by 16, so
    cols = 8 (mod 16) would otherwise give 2-byte accesses). Short rows are packed several
    to a program (a [ROWS, BLOCK] tile of about 4096 elements); long rows get more warps
    (16 for 8K and 16K columns).
  - cols not a multiple of 8 (odd or prime hidden sizes): rows start anywhere, and
    row-relative indexing compiles to 2-byte accesses, slower than the starting kernels
    there. Lane k of a row's tile instead holds element floor8(start) + k (column k - s,
    s = start % 8): x and residual are read in whole 16-byte groups (the neighbouring rows'
    elements in the first and last group are read but masked out), residual_out and y are
    written with 16-byte stores for the groups inside the row and element by element for
    the two partial groups at its ends. start % 8 repeats with period 8 in the row index,
    so a program takes rows of one residue class (row = c + 8 * j): s is one number per
    program and the (unaligned, 2-byte) weight and bias loads are shared by the tile's rows.
    Tiles are 16384 elements over 32 warps (16 a thread: 2 rows of 8192, 4 of 4096, ...),
    which keeps the kernel within 64 registers: one program of 32 warps an SM, 2 rows of
    8192 in flight there, as the aligned kernel has with two programs of one row. The last
    16-byte group of the whole tensor would be read past its end when rows * cols is not
    a multiple of 8: program 0 then does the tensor's last row alone, element by element,
    in three passes.
"""

import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _add_layer_norm_tile(x_ptr, r_ptr, w_ptr, b_ptr, h_ptr, y_ptr, rows, cols8, eps,
                         ROWS: tl.constexpr, BLOCK: tl.constexpr):
    cols = cols8 * 8                     # every row starts on a 16-byte boundary
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


@triton.jit
def _add_layer_norm_tile_unaligned(x_ptr, r_ptr, w_ptr, b_ptr, h_ptr, y_ptr, rows, rows_main,
                                   cols, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr,
                                   CHUNK: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 0:
        # Rows from rows_main on (the last row when rows * cols is not a multiple of 8):
        # their last 16-byte group would run past the tensor's end, so they are read element
        # by element, in three passes over chunks (few registers: the tiles set the budget).
        for last in range(rows_main, rows):
            off = tl.cast(last, tl.int64) * cols
            acc = tl.zeros([CHUNK], dtype=tl.float32)
            for j0 in range(0, cols, CHUNK):
                j = j0 + tl.arange(0, CHUNK)
                jm = j < cols
                hl = (tl.load(x_ptr + off + j, mask=jm, other=0.0).to(tl.float32)
                      + tl.load(r_ptr + off + j, mask=jm, other=0.0).to(tl.float32))
                tl.store(h_ptr + off + j, hl.to(h_ptr.dtype.element_ty), mask=jm)
                acc += hl
            mean_l = tl.sum(acc, axis=0) / cols
            acc = tl.zeros([CHUNK], dtype=tl.float32)
            for j0 in range(0, cols, CHUNK):
                j = j0 + tl.arange(0, CHUNK)
                jm = j < cols
                hl = (tl.load(x_ptr + off + j, mask=jm, other=0.0).to(tl.float32)
                      + tl.load(r_ptr + off + j, mask=jm, other=0.0).to(tl.float32))
                dl = tl.where(jm, hl - mean_l, 0.0)
                acc += dl * dl
            rstd_l = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
            for j0 in range(0, cols, CHUNK):
                j = j0 + tl.arange(0, CHUNK)
                jm = j < cols
                hl = (tl.load(x_ptr + off + j, mask=jm, other=0.0).to(tl.float32)
                      + tl.load(r_ptr + off + j, mask=jm, other=0.0).to(tl.float32))
                wl = tl.load(w_ptr + j, mask=jm, other=0.0).to(tl.float32)
                bl = tl.load(b_ptr + j, mask=jm, other=0.0).to(tl.float32)
                yl = (hl - mean_l) * rstd_l * wl + bl
                tl.store(y_ptr + off + j, yl.to(y_ptr.dtype.element_ty), mask=jm)
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
        ld = ok & (k < lim_hi)[None, :]
        st_vec = ok & ((k >= first) & (k < lim))[None, :]        # 16-byte stores
        st_edge = ok & (in_row & ((k < first) | (k >= lim)))[None, :]   # 2-byte stores
        x = tl.load(x_ptr + offs, mask=ld, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + offs, mask=ld, other=0.0).to(tl.float32)
        h = tl.where(in_row[None, :], x + r, 0.0)
        h16 = h.to(h_ptr.dtype.element_ty)
        tl.store(h_ptr + offs, h16, mask=st_vec)
        tl.store(h_ptr + offs, h16, mask=st_edge)
        mean = tl.sum(h, axis=1) / cols                                          # [ROWS]
        d = tl.where(in_row[None, :], h - mean[:, None], 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / cols + eps)
        w = tl.load(w_ptr + (k - s), mask=in_row, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + (k - s), mask=in_row, other=0.0).to(tl.float32)
        y = (d * rstd[:, None] * w[None, :] + b[None, :]).to(y_ptr.dtype.element_ty)
        tl.store(y_ptr + offs, y, mask=st_vec)
        tl.store(y_ptr + offs, y, mask=st_edge)


def add_layer_norm(x, residual, weight, bias, residual_out, y, rows, cols, eps):
    if cols % 8 == 0:
        block = triton.next_power_of_2(cols)
        rows_per_program = max(1, min(TILE // block, triton.next_power_of_2(rows)))
        num_warps = max(1, min(16, rows_per_program * block // 512))
        grid = (triton.cdiv(rows, rows_per_program),)
        _add_layer_norm_tile[grid](x, residual, weight, bias, residual_out, y, rows, cols // 8, eps,
                                   ROWS=rows_per_program, BLOCK=block, num_warps=num_warps)
        return None
    block = triton.next_power_of_2(cols + 7)      # a row's lanes run from s < 8 to s + cols
    tile, num_warps = 16384, 32                   # 16 elements a thread, <= 64 registers
    total = rows * cols                           # rows_main: the rows whose last group ends
    rows_main = rows if total % 8 == 0 else (total // 8 * 8) // cols   # in the tensor
    per_class = triton.cdiv(rows_main, 8)         # rows of the largest residue class
    rows_per_program = max(1, min(tile // block, triton.next_power_of_2(max(per_class, 1))))
    grid = (1 + 8 * triton.cdiv(per_class, rows_per_program),)
    _add_layer_norm_tile_unaligned[grid](x, residual, weight, bias, residual_out, y, rows, rows_main,
                                         cols, eps, ROWS=rows_per_program, BLOCK=block,
                                         CHUNK=128 * num_warps, num_warps=num_warps)
    return None

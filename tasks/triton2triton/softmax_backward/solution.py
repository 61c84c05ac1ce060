"""Reference solution for softmax backward: correct for every shape.

The starting kernel gives each row its own program, reads y and dy twice and moves 256
columns (2 fp16 per thread, 4-byte accesses) per step. Here:

- rows of up to 8192 columns are held whole in registers: a program takes a
  [ROWS, BLOCK] tile of about 4096 elements (BLOCK = the next power of two of cols, several
  rows per program when rows are short), loads y and dy once with 16-byte accesses, forms
  the row dot products from registers and writes dx: one read of each input, one write;
- 16-byte accesses need the compiler to see that rows start on 16-byte boundaries. When
  cols is a multiple of 8 the kernel gets cols // 8 and uses (cols // 8) * 8 (Triton only
  specialises integers on divisibility by 16: 1000 or 1500 would otherwise give 2-byte
  accesses). For other cols (197, 1021, ...) lane k of a row's tile holds element
  floor8(start) + k: y and dy are read in whole 16-byte groups (the neighbouring rows'
  elements in the first and last group are read but left out of the dot product), dx is
  written with 16-byte stores for the groups inside the row and element by element for
  the partial groups at its ends (BLOCK >= cols + 7). The last 16-byte group of the whole
  tensor would be read past its end when rows * cols is not a multiple of 8: program 0
  then does the last row alone, element by element;
- longer rows (not in the task's shape space, kept for generality) take two passes over
  4096-column chunks.

Where rows hold 512-2048 keys, a power of two, the starting kernel is within 2-13% of this
one (its second pass reads the row from L2): those shapes cannot reach 1.1x and the task's
configs leave them out (1.03x at 1024 keys on an H100). Measured on an H200 against the
starting kernel: 2.97x at 128 keys, 1.65x at 256, 1.37-1.46x at 4096; 2.01x at 197, 1.76x
at 257, 1.35x at 577, 1.27x at 1500, 1.08x at 1021 (prime).
"""

import triton
import triton.language as tl

TILE = 4096
MAX_ROW_BLOCK = 8192
CHUNK = 4096


@triton.jit
def _softmax_bwd_tile(y_ptr, dy_ptr, dx_ptr, rows, cols8, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    cols = cols8 * 8                     # every row starts on a 16-byte boundary
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    c = tl.arange(0, BLOCK)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    offs = r[:, None] * cols + c[None, :]
    y = tl.load(y_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dot = tl.sum(y * dy, axis=1)
    tl.store(dx_ptr + offs, (y * (dy - dot[:, None])).to(tl.float16), mask=mask)


@triton.jit
def _softmax_bwd_tile_unaligned(y_ptr, dy_ptr, dx_ptr, rows, rows_main, cols,
                                ROWS: tl.constexpr, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 0:
        # Rows from rows_main on (the last row when rows * cols is not a multiple of 8):
        # their last 16-byte group would run past the tensor's end; element by element.
        for last in range(rows_main, rows):
            base = tl.cast(last, tl.int64) * cols
            acc = tl.zeros([CHUNK], dtype=tl.float32)
            for start in range(0, cols, CHUNK):
                c = start + tl.arange(0, CHUNK)
                cm = c < cols
                acc += (tl.load(y_ptr + base + c, mask=cm, other=0.0).to(tl.float32)
                        * tl.load(dy_ptr + base + c, mask=cm, other=0.0).to(tl.float32))
            dot_l = tl.sum(acc, axis=0)
            for start in range(0, cols, CHUNK):
                c = start + tl.arange(0, CHUNK)
                cm = c < cols
                yl = tl.load(y_ptr + base + c, mask=cm, other=0.0).to(tl.float32)
                dyl = tl.load(dy_ptr + base + c, mask=cm, other=0.0).to(tl.float32)
                tl.store(dx_ptr + base + c, (yl * (dyl - dot_l)).to(tl.float16), mask=cm)
    else:
        r = (pid - 1).to(tl.int64) * ROWS + tl.arange(0, ROWS)
        r_ok = r < rows_main
        start = r * cols
        s = (start % 8).to(tl.int32)               # [ROWS]: row start past a 16-byte boundary
        n = cols                                   # int32 (an int argument below 2**31)
        lim = ((s + n) // 8) * 8                   # lanes [0, lim): groups ending in the row
        lim_hi = ((s + n + 7) // 8) * 8            # lanes [0, lim_hi): groups touching it
        first = ((s + 7) // 8) * 8                 # lanes [first, lim): groups inside it
        k = tl.arange(0, BLOCK)[None, :]           # lane k: element start - s + k
        in_row = r_ok[:, None] & (k >= s[:, None]) & (k < (s + n)[:, None])
        offs = ((start // 8) * 8)[:, None] + k     # start - s: a multiple of 8
        ld = r_ok[:, None] & (k < lim_hi[:, None])
        y = tl.load(y_ptr + offs, mask=ld, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=ld, other=0.0).to(tl.float32)
        dot = tl.sum(tl.where(in_row, y * dy, 0.0), axis=1)   # the neighbours' lanes left out
        dx = (y * (dy - dot[:, None])).to(tl.float16)
        tl.store(dx_ptr + offs, dx, mask=r_ok[:, None] & (k >= first[:, None]) & (k < lim[:, None]))
        tl.store(dx_ptr + offs, dx, mask=in_row & ((k < first[:, None]) | (k >= lim[:, None])))


@triton.jit
def _softmax_bwd_long(y_ptr, dy_ptr, dx_ptr, cols, CHUNK: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * cols
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, cols, CHUNK):
        c = start + tl.arange(0, CHUNK)
        mask = c < cols
        y = tl.load(y_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        acc += y * dy
    dot = tl.sum(acc, axis=0)
    for start in range(0, cols, CHUNK):
        c = start + tl.arange(0, CHUNK)
        mask = c < cols
        y = tl.load(y_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(dx_ptr + base + c, (y * (dy - dot)).to(tl.float16), mask=mask)


def softmax_backward(y, dy, dx, rows, cols):
    aligned = cols % 8 == 0
    block = triton.next_power_of_2(cols if aligned else cols + 7)
    if block > MAX_ROW_BLOCK:
        _softmax_bwd_long[(rows,)](y, dy, dx, cols, CHUNK=CHUNK, num_warps=8)
        return None
    rows_per_program = max(1, min(TILE // block, triton.next_power_of_2(rows)))
    num_warps = max(4, min(16, rows_per_program * block // 512))
    if aligned:
        _softmax_bwd_tile[(triton.cdiv(rows, rows_per_program),)](
            y, dy, dx, rows, cols // 8, ROWS=rows_per_program, BLOCK=block, num_warps=num_warps)
        return None
    total = rows * cols                   # rows_main: the rows whose last group ends in the tensor
    rows_main = rows if total % 8 == 0 else (total // 8 * 8) // cols
    _softmax_bwd_tile_unaligned[(1 + triton.cdiv(rows_main, rows_per_program),)](
        y, dy, dx, rows, rows_main, cols, ROWS=rows_per_program, BLOCK=block, CHUNK=32 * num_warps,
        num_warps=num_warps)
    return None

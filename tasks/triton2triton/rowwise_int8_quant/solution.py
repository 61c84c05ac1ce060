"""Reference solution for per-row absmax int8 quantisation: one read of x, correct for every
shape.

- Rows of up to MAX_BLOCK columns sit whole in one block (BLOCK = next power of two >=
  cols): x is read from global memory once (16-byte loads on contiguous fp16 rows) and kept
  in registers between the absmax and the quantisation; q is stored as packed int8 (16 bytes
  per thread and store where aligned).
- Short rows are packed several to a program (a [ROWS, BLOCK] tile of about 4096 elements);
  long rows get more warps. With few rows (decode batches) every row still gets its own
  program, which now finishes in one step instead of 2 * cols / 256 dependent ones.
- Longer rows (above 16384 columns) use a chunked kernel with 8K chunks; its second pass
  reads the row back from L2.
- The quotient is x * (127 / absmax) in fp32 with floor(v + 0.5) and a tie fix for round
  half to even: exact here (see the task description).
- cols a multiple of 8 but not of 16: the tile kernel gets cols / 8 and multiplies by 8
  itself. Triton learns that a scalar argument is a multiple of 16 only from its value;
  without the visible factor it cannot prove the rows 16-byte aligned and splits every
  vector into 2-byte accesses.
- cols not a multiple of 8 (odd, primes; up to MAX_BLOCK): rows start at arbitrary byte
  offsets, so the row tile could only use 2-byte loads and 1-byte stores, and BLOCK =
  next_power_of_2(cols) wasted up to half its lanes (5003 -> 8192): slower than the
  starting kernel. `_quant_flat` instead sees x and q as flat arrays of 8-element vectors,
  aligned whatever cols is (16-byte loads, 8-byte stores): the vectors wholly inside a row
  are covered by two power-of-two tiles (5003 columns: 512 + 128 vectors = 5120 slots),
  the row's first and last vectors, shared with the neighbouring rows, are read and
  written element by element. Still one read of x, kept in registers. It rounds with the
  1.5 * 2**23 trick (round half to even, exact as well), fewer instructions an element.
"""

import triton
import triton.language as tl

MAX_BLOCK = 16384
TILE = 4096
CHUNK = 8192
FLAT_TILE = 8192     # element slots (rows x vectors x 8) per program of the flat kernel, at most


@triton.jit
def _round_half_even(v):
    r = tl.floor(v + 0.5)
    odd = (r.to(tl.int32) & 1) != 0
    return tl.where((r - v == 0.5) & odd, r - 1.0, r)


@triton.jit
def _quant_tile(x_ptr, q_ptr, scale_ptr, rows, cols_q, CMULT: tl.constexpr, ROWS: tl.constexpr,
                BLOCK: tl.constexpr):
    cols = cols_q * CMULT                 # CMULT = 8: Triton knows 8 | cols (aligned rows)
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]   # [ROWS, 1]
    col = tl.arange(0, BLOCK)[None, :]
    row_ok = row < rows
    mask = row_ok & (col < cols)
    offs = row * cols + col
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    absmax = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-5)                      # [ROWS]
    tl.store(scale_ptr + row.reshape([ROWS]), absmax / 127.0, mask=row_ok.reshape([ROWS]))
    q = _round_half_even(x * (127.0 / absmax)[:, None])
    q = tl.minimum(tl.maximum(q, -127.0), 127.0)
    tl.store(q_ptr + offs, q.to(tl.int8), mask=mask)


@triton.jit
def _quant_long_row(x_ptr, q_ptr, scale_ptr, cols, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    q_row = q_ptr + row * cols
    m = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, cols, CHUNK):
        c = start + tl.arange(0, CHUNK)
        m = tl.maximum(m, tl.abs(tl.load(x_row + c, mask=c < cols, other=0.0).to(tl.float32)))
    absmax = tl.maximum(tl.max(m, axis=0), 1e-5)
    tl.store(scale_ptr + row, absmax / 127.0)
    inv = 127.0 / absmax
    for start in range(0, cols, CHUNK):
        c = start + tl.arange(0, CHUNK)
        mask = c < cols
        x = tl.load(x_row + c, mask=mask, other=0.0).to(tl.float32)
        q = tl.minimum(tl.maximum(_round_half_even(x * inv), -127.0), 127.0)
        tl.store(q_row + c, q.to(tl.int8), mask=mask)


@triton.jit
def _load_vectors(x_ptr, v, e_lo, e_hi, r_ok):
    """The 8-element vectors v ([R, NV] indices into the flat arrays) that lie wholly inside
    their row [e_lo, e_hi) ([R, 1]), as fp32 [R, NV, 8] (16-byte loads; others 0), their
    offsets and the [R, NV, 1] mask."""
    inside = (r_ok & (v * 8 >= e_lo) & (v * 8 + 8 <= e_hi))[:, :, None]
    offs = v[:, :, None] * 8 + tl.arange(0, 8)[None, None, :]
    x = tl.load(x_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    return x, offs, inside


@triton.jit
def _quantise(x, inv):
    # round half to even with the 1.5 * 2**23 trick: |x * inv| <= 127 (+ rounding), so
    # x * inv + 1.5 * 2**23 lies in [2**23, 2**24) where the fp32 spacing is 1, and its bits
    # minus those of 1.5 * 2**23 are the rounded integer. 4 instructions an element instead
    # of ~10 for floor / tie fix / clamp in fp32 (the flat kernel is close to issue-bound).
    t = x * inv + 12582912.0
    qi = t.to(tl.int32, bitcast=True) - 0x4B400000
    return tl.minimum(tl.maximum(qi, -127), 127).to(tl.int8)


@triton.jit
def _quant_flat(x_ptr, q_ptr, scale_ptr, rows, cols,
                ROWS: tl.constexpr, NVA: tl.constexpr, NVB: tl.constexpr):
    # Rows of any length: x and q are seen as flat arrays of 8-element vectors (16-byte
    # aligned in x, 8-byte aligned in q whatever cols is). Row r is [e_lo, e_hi) =
    # [r * cols, (r + 1) * cols); its vectors wholly inside the row are covered by two
    # tiles of NVA and NVB vectors (NVA + NVB >= cdiv(cols, 8), two powers of two instead of
    # one to waste fewer lanes), its first and last vectors, shared with the neighbouring
    # rows, are handled element by element. x is read once, into registers. All offsets fit
    # in int32 (rows * cols <= 2**27).
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]             # [R, 1]
    r_ok = r < rows
    e_lo = r * cols
    e_hi = e_lo + cols
    v_lo = e_lo // 8
    xa, offs_a, in_a = _load_vectors(x_ptr, v_lo + tl.arange(0, NVA)[None, :], e_lo, e_hi, r_ok)
    m = tl.max(tl.max(tl.abs(xa), axis=2), axis=1)                        # [R]
    if NVB > 0:
        xb, offs_b, in_b = _load_vectors(x_ptr, v_lo + NVA + tl.arange(0, NVB)[None, :],
                                         e_lo, e_hi, r_ok)
        m = tl.maximum(m, tl.max(tl.max(tl.abs(xb), axis=2), axis=1))
    # the first and the last vector of the row, element by element
    two = tl.arange(0, 2)[None, :]
    vh = tl.where(two == 0, v_lo, (e_hi - 1) // 8)                        # [R, 2]
    eh = vh[:, :, None] * 8 + tl.arange(0, 8)[None, None, :]              # [R, 2, 8]
    h_ok = r_ok[:, :, None] & (eh >= e_lo[:, :, None]) & (eh < e_hi[:, :, None])
    xh = tl.load(x_ptr + eh, mask=h_ok, other=0.0).to(tl.float32)
    m = tl.maximum(m, tl.max(tl.max(tl.abs(xh), axis=2), axis=1))
    absmax = tl.maximum(m, 1e-5)                                          # [R]
    r1 = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    tl.store(scale_ptr + r1, absmax / 127.0, mask=r1 < rows)
    inv = (127.0 / absmax)[:, None, None]                                 # [R, 1, 1]
    tl.store(q_ptr + offs_a, _quantise(xa, inv), mask=in_a)
    if NVB > 0:
        tl.store(q_ptr + offs_b, _quantise(xb, inv), mask=in_b)
    tl.store(q_ptr + eh, _quantise(xh, inv), mask=h_ok)


def _prev_pow2(v):
    return 1 << (v.bit_length() - 1)


def rowwise_int8_quant(x, q, scale, rows, cols):
    block = triton.next_power_of_2(cols)
    if block <= MAX_BLOCK and cols % 8:
        # a vector wholly inside row r is v_lo + i with 0 <= i < cdiv(cols, 8)
        nv = cols // 8 + 1
        nva = _prev_pow2(nv)
        nvb = 0 if nv == nva else triton.next_power_of_2(nv - nva)
        rows_per_program = max(1, min(_prev_pow2(max(1, FLAT_TILE // (8 * (nva + nvb)))),
                                      triton.next_power_of_2(rows)))
        # ~32 element slots a thread: amortises the per-row reductions and edge vectors
        num_warps = max(1, min(16, _prev_pow2(max(1, rows_per_program * (nva + nvb) * 8 // 1024))))
        _quant_flat[(triton.cdiv(rows, rows_per_program),)](
            x, q, scale, rows, cols, ROWS=rows_per_program, NVA=nva, NVB=nvb, num_warps=num_warps)
        return None
    if block > MAX_BLOCK:
        _quant_long_row[(rows,)](x, q, scale, cols, CHUNK=CHUNK, num_warps=16)
        return None
    rows_per_program = max(1, min(TILE // block, triton.next_power_of_2(rows)))
    tile = rows_per_program * block
    num_warps = max(1, min(16, tile // 512))
    grid = (triton.cdiv(rows, rows_per_program),)
    if cols % 16 == 0:
        cq, cmult = cols, 1
    else:
        cq, cmult = cols // 8, 8
    _quant_tile[grid](x, q, scale, rows, cq, CMULT=cmult, ROWS=rows_per_program, BLOCK=block,
                      num_warps=num_warps)
    return None

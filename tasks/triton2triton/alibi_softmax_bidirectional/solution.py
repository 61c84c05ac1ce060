"""Reference solution for the ALiBi attention softmax: correct for every shape.

The starting kernel gives every query row its own program and reads the row three times in
chunks of 256 (a 128-token row leaves half the lanes idle). Here a program takes
[ROWS, BLOCK] rows of the flattened [batch * heads * seq, seq] scores - BLOCK a power of
two >= seq, ROWS so that a tile holds about 4096 probabilities - loads the scores once,
adds the bias -slope * |i - j| in registers, and writes the probabilities once (times the
reciprocal of the row's sum).

- Row indices: a tile's rows are consecutive and ROWS <= seq, so the query index i and the
  head of each row come from one division of the tile's first row (its (batch, head) slab
  and offset in it) and at most one wrap into the next slab; no per-row 64-bit division
  (which, once the compiler spreads a tile's rows over each thread, cost more than the
  softmax itself).
- 16-byte loads and stores need the compiler to see that rows start on 16-byte boundaries.
  - seq a multiple of 8: the kernel gets seq // 8 and uses (seq // 8) * 8 (Triton only
    specialises integers on divisibility by 16, so seq = 200 would otherwise give 2-byte
    accesses).
  - other seq (odd lengths): lane k of a row's tile holds element floor8(start) + k (key
    j = k - s, s = start % 8): the scores are read in whole 16-byte groups (the neighbouring
    rows' elements in the first and last group are read but masked out), the probabilities
    are written with 16-byte stores for the groups inside the row and element by element
    for the partial groups at its ends; BLOCK >= seq + 7. The last 16-byte group of the
    whole tensor would be read past its end when its size is not a multiple of 8: program
    0 then does the last row alone, element by element.
- Rows longer than 8192 (outside the task's shape space, kept for generality) use an
  online-softmax two-pass path.
"""

import triton
import triton.language as tl

TILE = 4096
MAX_ROW_BLOCK = 8192
CHUNK = 2048


@triton.jit
def _tile_rows(tile, n_rows, heads, seq, ROWS: tl.constexpr):
    """Rows tile * ROWS + [0, ROWS) (ROWS <= seq): their query index and head (int32)."""
    row0 = tile * ROWS
    g0 = row0 // seq                       # (batch, head) slab of the first row
    i0 = row0 - g0 * seq
    r = tl.arange(0, ROWS)
    i = i0 + r
    wrap = i >= seq                        # at most one wrap into the next slab
    i = tl.where(wrap, i - seq, i)
    h = g0 % heads + wrap.to(tl.int32)
    h = tl.where(h >= heads, 0, h)
    row = row0 + r
    return row, row < n_rows, i, h


@triton.jit
def _alibi_softmax_tile(s_ptr, slopes_ptr, p_ptr, n_rows, heads, seq8,
                        ROWS: tl.constexpr, BLOCK: tl.constexpr):
    seq = seq8 * 8                         # every row starts on a 16-byte boundary
    row, r_ok, i, h = _tile_rows(tl.program_id(0), n_rows, heads, seq, ROWS)
    slope = tl.load(slopes_ptr + h)
    j = tl.arange(0, BLOCK)
    mask = r_ok[:, None] & (j[None, :] < seq)
    offs = row.to(tl.int64)[:, None] * seq + j[None, :]
    x = tl.load(s_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dist = tl.abs(i[:, None] - j[None, :]).to(tl.float32)
    x = tl.where(mask, x - slope[:, None] * dist, -float("inf"))
    m = tl.max(x, axis=1)
    m = tl.where(r_ok, m, 0.0)                       # rows past the end stay finite
    e = tl.exp(x - m[:, None])
    inv = 1.0 / tl.where(r_ok, tl.sum(e, axis=1), 1.0)
    tl.store(p_ptr + offs, (e * inv[:, None]).to(tl.float16), mask=mask)


@triton.jit
def _alibi_softmax_tile_unaligned(s_ptr, slopes_ptr, p_ptr, n_rows, rows_main, heads, seq,
                                  ROWS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 0:
        # Rows from rows_main on (the last row when the tensor's size is not a multiple of
        # 8): their last 16-byte group would run past the end; read element by element.
        for last in range(rows_main, n_rows):
            i_l = last % seq
            slope_l = tl.load(slopes_ptr + (last // seq) % heads)
            base_l = tl.cast(last, tl.int64) * seq
            jl = tl.arange(0, BLOCK)
            ml = jl < seq
            xl = tl.load(s_ptr + base_l + jl, mask=ml, other=0.0).to(tl.float32)
            xl = tl.where(ml, xl - slope_l * tl.abs(i_l - jl).to(tl.float32), -float("inf"))
            el = tl.exp(xl - tl.max(xl, axis=0))
            pl = el * (1.0 / tl.sum(el, axis=0))
            tl.store(p_ptr + base_l + jl, pl.to(tl.float16), mask=ml)
    else:
        row, r_ok, i, h = _tile_rows(pid - 1, rows_main, heads, seq, ROWS)
        slope = tl.load(slopes_ptr + h)
        start = row.to(tl.int64) * seq
        s = (start % 8).to(tl.int32)               # [ROWS]: row start past a 16-byte boundary
        lim = ((s + seq) // 8) * 8                 # lanes [0, lim): groups ending in the row
        lim_hi = ((s + seq + 7) // 8) * 8          # lanes [0, lim_hi): groups touching it
        first = ((s + 7) // 8) * 8                 # lanes [first, lim): groups inside it
        k = tl.arange(0, BLOCK)[None, :]           # lane k: element base + k, key k - s
        j = k - s[:, None]
        in_row = r_ok[:, None] & (j >= 0) & (j < seq)
        offs = ((start // 8) * 8)[:, None] + k     # start - s: a multiple of 8
        x = tl.load(s_ptr + offs, mask=r_ok[:, None] & (k < lim_hi[:, None]),
                    other=0.0).to(tl.float32)
        dist = tl.abs(i[:, None] - j).to(tl.float32)
        x = tl.where(in_row, x - slope[:, None] * dist, -float("inf"))
        m = tl.max(x, axis=1)
        m = tl.where(r_ok, m, 0.0)                       # rows past the end stay finite
        e = tl.exp(x - m[:, None])
        inv = 1.0 / tl.where(r_ok, tl.sum(e, axis=1), 1.0)
        p = (e * inv[:, None]).to(tl.float16)
        vec = r_ok[:, None] & (k >= first[:, None]) & (k < lim[:, None])
        tl.store(p_ptr + offs, p, mask=vec)
        tl.store(p_ptr + offs, p, mask=in_row & ((k < first[:, None]) | (k >= lim[:, None])))


@triton.jit
def _alibi_softmax_long(s_ptr, slopes_ptr, p_ptr, heads, seq, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    i = row % seq
    slope = tl.load(slopes_ptr + (row // seq) % heads)
    base = row * seq
    m = -float("inf")
    den = 0.0
    for start in range(0, seq, CHUNK):
        j = start + tl.arange(0, CHUNK)
        mask = j < seq
        x = tl.load(s_ptr + base + j, mask=mask, other=0.0).to(tl.float32)
        x = tl.where(mask, x - slope * tl.abs(i - j).to(tl.float32), -float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))     # finite: every chunk has a key
        den = den * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    inv = 1.0 / den
    for start in range(0, seq, CHUNK):
        j = start + tl.arange(0, CHUNK)
        mask = j < seq
        x = tl.load(s_ptr + base + j, mask=mask, other=0.0).to(tl.float32)
        x = x - slope * tl.abs(i - j).to(tl.float32)
        tl.store(p_ptr + base + j, (tl.exp(x - m) * inv).to(tl.float16), mask=mask)


def _prev_power_of_2(n):
    return 1 << (n.bit_length() - 1)


def alibi_softmax_bidirectional(scores, slopes, probs, batch, heads, seq):
    n_rows = batch * heads * seq
    aligned = seq % 8 == 0
    block = triton.next_power_of_2(seq if aligned else seq + 7)
    if block > MAX_ROW_BLOCK:
        _alibi_softmax_long[(n_rows,)](scores, slopes, probs, heads, seq, CHUNK=CHUNK, num_warps=8)
        return None
    # ROWS <= seq: a tile's rows wrap into the next (batch, head) slab at most once.
    rows_per_program = max(1, min(TILE // block, _prev_power_of_2(seq), triton.next_power_of_2(n_rows)))
    num_warps = max(4, min(16, rows_per_program * block // 512))
    if aligned:
        _alibi_softmax_tile[(triton.cdiv(n_rows, rows_per_program),)](
            scores, slopes, probs, n_rows, heads, seq // 8, ROWS=rows_per_program, BLOCK=block,
            num_warps=num_warps)
        return None
    total = n_rows * seq                  # rows_main: the rows whose last group ends in the tensor
    rows_main = n_rows if total % 8 == 0 else (total // 8 * 8) // seq
    grid = (1 + triton.cdiv(rows_main, rows_per_program),)
    _alibi_softmax_tile_unaligned[grid](scores, slopes, probs, n_rows, rows_main, heads, seq,
                                        ROWS=rows_per_program, BLOCK=block, num_warps=num_warps)
    return None

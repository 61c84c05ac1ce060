"""Reference solution for average pooling without padding counts: separable window sums.

The op is instruction-bound long before it is memory-bound: a direct kernel x kernel window
costs 4-6 instructions a tap (the masked load, its zeroed destination, a predicate, the
fp16 -> fp32 conversion, the add), 90-280 instructions an output for the starting kernel
and for a [rows, columns] tile over flattened rows, whose every element also needs its own
row address and row mask. Here an output costs about 37 (3 x 3) / 58 (5 x 5):

- A program owns a [PL planes, BW columns] tile of output columns and R <= 16 consecutive
  output rows of those planes (R balanced so the last row chunk is nearly full). BW is 32,
  64 or 128, whichever wastes the fewest masked lanes on the row, or the next power of two
  of out_w for narrow maps, where PL > 1 planes fill the 256 lanes (7 x 7 / 14 x 14 maps).
- It walks the (R - 1) * stride + kernel input rows its output rows cover, in a
  compile-time unrolled loop. Each input row is summed horizontally once (kernel masked
  loads an output column; the column masks are computed once per program, and a row outside
  the image is read clamped and its sum zeroed, so the row test is one select), and the
  vertical sum of an output row adds the last kernel row sums, kept in registers. That is
  kernel * ((R - 1) * stride + kernel) / R loads an output instead of kernel^2: at R = 14,
  3.4 instead of 9 for 3 x 3 and 6.4 instead of 25 for 5 x 5 (stride 1), 6.2 / 11.4 at
  stride 2.
- The taps of an input row are loaded two rows ahead of their use: the stores in between
  would otherwise keep the compiler from hoisting the loads (y might alias x), leaving one
  row of loads in flight per warp.
- The divisor is the product of the in-image rows of each output row (a scalar per row, its
  reciprocal as rsqrt^2) and the in-image columns of each column (once per program),
  applied as reciprocals.
"""

import triton
import triton.language as tl

TILE = 256            # output columns a row a program handles: two a thread at 4 warps
ROWS = 16             # at most this many output rows a program


@triton.jit
def _load_row(x_tile, ih, height, width, w0, ok, KERNEL: tl.constexpr):
    """The kernel taps of input row ih for every output column, as loaded (fp16). A row
    outside the image is read clamped (any valid row; _row_sum zeroes it), so the loads only
    carry the column masks, which are the same for every row."""
    x_row = x_tile + tl.minimum(tl.maximum(ih, 0), height - 1) * width
    v0 = tl.load(x_row, mask=ok & (w0 >= 0)[None, :], other=0.0)
    v1 = v0          # placeholders for the taps a smaller window does not have
    v2 = v0
    v3 = v0
    v4 = v0
    if KERNEL >= 2:
        v1 = tl.load(x_row + 1, mask=ok & ((w0 + 1 >= 0) & (w0 + 1 < width))[None, :], other=0.0)
    if KERNEL >= 3:
        v2 = tl.load(x_row + 2, mask=ok & ((w0 + 2 >= 0) & (w0 + 2 < width))[None, :], other=0.0)
    if KERNEL >= 4:
        v3 = tl.load(x_row + 3, mask=ok & ((w0 + 3 >= 0) & (w0 + 3 < width))[None, :], other=0.0)
    if KERNEL >= 5:
        v4 = tl.load(x_row + 4, mask=ok & ((w0 + 4 >= 0) & (w0 + 4 < width))[None, :], other=0.0)
    return v0, v1, v2, v3, v4


@triton.jit
def _row_sum(v0, v1, v2, v3, v4, ih, height, KERNEL: tl.constexpr):
    """Horizontal window sums (fp32) of one input row's taps; 0 for a row outside the image."""
    h = v0.to(tl.float32)
    if KERNEL >= 2:
        h += v1.to(tl.float32)
    if KERNEL >= 3:
        h += v2.to(tl.float32)
    if KERNEL >= 4:
        h += v3.to(tl.float32)
    if KERNEL >= 5:
        h += v4.to(tl.float32)
    return tl.where((ih >= 0) & (ih < height), h, 0.0)


@triton.jit
def _avgpool_rows(x_ptr, y_ptr, n_planes, height, width, out_h, out_w, row_chunks, w_blocks,
                  KERNEL: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr,
                  PL: tl.constexpr, BW: tl.constexpr, R: tl.constexpr):
    pid = tl.program_id(0)
    wb = pid % w_blocks
    t = pid // w_blocks
    rc = t % row_chunks
    pg = t // row_chunks
    pl = pg * PL + tl.arange(0, PL)
    j = wb * BW + tl.arange(0, BW)
    ok = (pl < n_planes)[:, None] & (j < out_w)[None, :]
    w0 = j * STRIDE - PADDING
    cols_in = tl.maximum(tl.minimum(w0 + KERNEL, width) - tl.maximum(w0, 0), 1).to(tl.float32)  # >= 1 on masked lanes too
    inv_cols = (1.0 / cols_in)[None, :]
    i0 = rc * R                                         # first output row of the program
    r0 = i0 * STRIDE - PADDING                          # first input row it reads
    x_tile = x_ptr + pl.to(tl.int64)[:, None] * height * width + w0[None, :]
    y_tile = y_ptr + pl.to(tl.int64)[:, None] * out_h * out_w + j[None, :]
    # taps of the next two input rows, loaded two rows ahead of their use (the stores in
    # between would otherwise keep the compiler from hoisting them: y might alias x)
    a0, a1, a2, a3, a4 = _load_row(x_tile, r0, height, width, w0, ok, KERNEL)
    b0, b1, b2, b3, b4 = _load_row(x_tile, r0 + 1, height, width, w0, ok, KERNEL)
    h1 = tl.zeros([PL, BW], dtype=tl.float32)           # row sums of the last 4 input rows
    h2 = tl.zeros([PL, BW], dtype=tl.float32)
    h3 = tl.zeros([PL, BW], dtype=tl.float32)
    h4 = tl.zeros([PL, BW], dtype=tl.float32)
    for rr in tl.static_range((R - 1) * STRIDE + KERNEL):    # the input rows the R output rows cover
        if rr + 2 < (R - 1) * STRIDE + KERNEL:
            c0, c1, c2, c3, c4 = _load_row(x_tile, r0 + rr + 2, height, width, w0, ok, KERNEL)
        h = _row_sum(a0, a1, a2, a3, a4, r0 + rr, height, KERNEL)
        if rr >= KERNEL - 1:
            if (rr - (KERNEL - 1)) % STRIDE == 0:
                k = (rr - (KERNEL - 1)) // STRIDE       # output row i0 + k is complete
                s = h + h1
                if KERNEL >= 3:
                    s += h2
                if KERNEL >= 4:
                    s += h3
                if KERNEL >= 5:
                    s += h4
                i = i0 + k
                hh = i * STRIDE - PADDING
                q = tl.math.rsqrt(tl.maximum(tl.minimum(hh + KERNEL, height) - tl.maximum(hh, 0), 1).to(tl.float32))
                y = s * inv_cols * (q * q)              # 1 / rows_in, to ~3e-7
                tl.store(y_tile + i * out_w, y.to(y_ptr.dtype.element_ty), mask=ok & (i < out_h))
        h4 = h3
        h3 = h2
        h2 = h1
        h1 = h
        a0 = b0
        a1 = b1
        a2 = b2
        a3 = b3
        a4 = b4
        if rr + 2 < (R - 1) * STRIDE + KERNEL:
            b0 = c0
            b1 = c1
            b2 = c2
            b3 = c3
            b4 = c4


def _block_w(out_w):
    if out_w <= 16:
        return triton.next_power_of_2(out_w)
    best = None
    for bw in (128, 64, 32):
        waste = triton.cdiv(out_w, bw) * bw - out_w
        if best is None or waste < best[0]:
            best = (waste, bw)
    return best[1]


def avg_pool2d(x, y, batch, channels, height, width, kernel, stride, padding, out_h, out_w):
    bw = _block_w(out_w)
    pl = max(1, TILE // bw)
    chunks = triton.cdiv(out_h, ROWS)
    r = triton.cdiv(out_h, chunks)                      # rows a program, balanced
    n_planes = batch * channels
    w_blocks = triton.cdiv(out_w, bw)
    grid = (triton.cdiv(n_planes, pl) * chunks * w_blocks,)
    _avgpool_rows[grid](x, y, n_planes, height, width, out_h, out_w, chunks, w_blocks,
                        KERNEL=kernel, STRIDE=stride, PADDING=padding,
                        PL=pl, BW=bw, R=r, num_warps=4)
    return None

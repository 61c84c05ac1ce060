"""Reference solution for average pooling without padding counts: [rows, columns] tiles
over all output rows.

The starting kernel gives each output row its own program: a 56-wide row is 112 bytes a
tap, a 7-wide row 14 bytes, with half of the default 128 threads idle or duplicated, and
hundreds of thousands of tiny programs. Here a program takes a [BLOCK_R, BLOCK_W] tile of
output rows x columns, where the rows run over all (sample, channel, row) triples, so a
tile spans several planes when the maps are small (7 x 7 or 14 x 14) and the program is
never tiny. The plane and row of each tile row come from one division per row (not per
element); each tap is one masked [BLOCK_R, BLOCK_W] load, mostly from L1 (neighbouring
windows share pixels). The divisor is the product of the in-image rows of each tile row
and the in-image columns of each tile column, applied as a reciprocal.
"""

import triton
import triton.language as tl

TILE = 1024           # 8 outputs a thread at 4 warps (about 110 registers for a 3 x 3 window)


@triton.jit
def _avgpool_tile(x_ptr, y_ptr, n_rows, height, width, out_h, out_w, w_blocks,
                  KERNEL: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr,
                  BLOCK_R: tl.constexpr, BLOCK_W: tl.constexpr):
    pid = tl.program_id(0)
    r = (pid // w_blocks).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    j = (pid % w_blocks) * BLOCK_W + tl.arange(0, BLOCK_W)
    r_ok = r < n_rows
    j_ok = j < out_w
    plane = r // out_h
    i = (r - plane * out_h).to(tl.int32)
    plane_base = plane * height * width
    h0 = i * STRIDE - PADDING
    w0 = j * STRIDE - PADDING
    acc = tl.zeros([BLOCK_R, BLOCK_W], dtype=tl.float32)
    for a in tl.static_range(KERNEL):
        ih = h0 + a
        row_ok = r_ok & (ih >= 0) & (ih < height)
        row_off = plane_base + ih * width
        for b in tl.static_range(KERNEL):
            iw = w0 + b
            col_ok = j_ok & (iw >= 0) & (iw < width)
            acc += tl.load(x_ptr + row_off[:, None] + iw[None, :],
                           mask=row_ok[:, None] & col_ok[None, :], other=0.0).to(tl.float32)
    rows_in = (tl.minimum(h0 + KERNEL, height) - tl.maximum(h0, 0)).to(tl.float32)
    cols_in = (tl.minimum(w0 + KERNEL, width) - tl.maximum(w0, 0)).to(tl.float32)
    y = acc * (1.0 / (rows_in[:, None] * cols_in[None, :]))
    tl.store(y_ptr + r[:, None] * out_w + j[None, :], y.to(y_ptr.dtype.element_ty),
             mask=r_ok[:, None] & j_ok[None, :])


def avg_pool2d(x, y, batch, channels, height, width, kernel, stride, padding, out_h, out_w):
    block_w = min(128, triton.next_power_of_2(out_w))
    block_r = max(1, TILE // block_w)
    n_rows = batch * channels * out_h
    w_blocks = triton.cdiv(out_w, block_w)
    grid = (triton.cdiv(n_rows, block_r) * w_blocks,)
    _avgpool_tile[grid](x, y, n_rows, height, width, out_h, out_w, w_blocks,
                        KERNEL=kernel, STRIDE=stride, PADDING=padding,
                        BLOCK_R=block_r, BLOCK_W=block_w, num_warps=4)
    return None

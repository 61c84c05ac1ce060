"""Starting kernel for average pooling without padding counts: correct for every shape,
deliberately simple.

One program per output row (batch * channels * out_h programs, BLOCK_W = the next power of
two of out_w columns each). For each of the kernel x kernel window taps it loads the input
pixels of the whole row (masked: padding and the image border read as 0) and adds them in
fp32; the count of in-image pixels of each window is the product of its in-image rows and
columns. Default launch settings.
"""

import triton
import triton.language as tl


@triton.jit
def _avgpool_row(x_ptr, y_ptr, height, width, out_h, out_w,
                 KERNEL: tl.constexpr, STRIDE: tl.constexpr, PADDING: tl.constexpr, BLOCK_W: tl.constexpr):
    r = tl.program_id(0)                  # (n * channels + c) * out_h + i
    plane = r // out_h
    i = r % out_h
    j = tl.arange(0, BLOCK_W)
    j_ok = j < out_w
    x_plane = x_ptr + plane.to(tl.int64) * height * width
    acc = tl.zeros([BLOCK_W], dtype=tl.float32)
    for a in tl.static_range(KERNEL):
        ih = i * STRIDE - PADDING + a
        row_ok = (ih >= 0) & (ih < height)
        for b in tl.static_range(KERNEL):
            iw = j * STRIDE - PADDING + b
            ok = j_ok & row_ok & (iw >= 0) & (iw < width)
            acc += tl.load(x_plane + ih * width + iw, mask=ok, other=0.0).to(tl.float32)
    h0 = i * STRIDE - PADDING
    w0 = j * STRIDE - PADDING
    rows_in = tl.minimum(h0 + KERNEL, height) - tl.maximum(h0, 0)
    cols_in = tl.minimum(w0 + KERNEL, width) - tl.maximum(w0, 0)
    y = acc / (rows_in * cols_in).to(tl.float32)
    tl.store(y_ptr + r.to(tl.int64) * out_w + j, y.to(y_ptr.dtype.element_ty), mask=j_ok)


def avg_pool2d(x, y, batch, channels, height, width, kernel, stride, padding, out_h, out_w):
    grid = (batch * channels * out_h,)
    _avgpool_row[grid](x, y, height, width, out_h, out_w,
                       KERNEL=kernel, STRIDE=stride, PADDING=padding,
                       BLOCK_W=triton.next_power_of_2(out_w))
    return None

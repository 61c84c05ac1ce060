"""Starting kernel for the channels-last depthwise conv2d: correct for every shape,
deliberately simple.

One program per output pixel (n * out_h * out_w programs). BLOCK_C = the next power of two
>= c channels: for each of the ksize x ksize taps it loads the c contiguous input values of
the tapped pixel (masked at the image border) and the tap's weight of every channel, and
accumulates in fp32; then it adds the bias and stores the pixel's c outputs. Default launch
settings.
"""

import triton
import triton.language as tl


@triton.jit
def _dwconv_pixel(x_ptr, w_ptr, b_ptr, y_ptr, h, w, c, out_h, out_w,
                  KSIZE: tl.constexpr, STRIDE: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0)                       # (i * out_h + p) * out_w + q
    q = pid % out_w
    p = (pid // out_w) % out_h
    i = pid // (out_w * out_h)
    ch = tl.arange(0, BLOCK_C)
    c_ok = ch < c
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    for a in tl.static_range(KSIZE):
        ih = p * STRIDE - KSIZE // 2 + a
        for b in tl.static_range(KSIZE):
            iw = q * STRIDE - KSIZE // 2 + b
            inside = (ih >= 0) & (ih < h) & (iw >= 0) & (iw < w)
            pix = (i.to(tl.int64) * h + ih) * w + iw
            xv = tl.load(x_ptr + pix * c + ch, mask=c_ok & inside, other=0.0).to(tl.float32)
            wv = tl.load(w_ptr + ch * (KSIZE * KSIZE) + (a * KSIZE + b), mask=c_ok, other=0.0).to(tl.float32)
            acc += xv * wv
    acc += tl.load(b_ptr + ch, mask=c_ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + pid.to(tl.int64) * c + ch, acc.to(y_ptr.dtype.element_ty), mask=c_ok)


def depthwise_conv2d(x, weight, bias, y, n, h, w, c, ksize, stride, out_h, out_w):
    _dwconv_pixel[(n * out_h * out_w,)](x, weight, bias, y, h, w, c, out_h, out_w,
                                        KSIZE=ksize, STRIDE=stride, BLOCK_C=triton.next_power_of_2(c))
    return None

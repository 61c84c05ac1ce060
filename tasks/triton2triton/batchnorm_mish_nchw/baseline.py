"""Starting kernel for folded BatchNorm + Mish: correct for every shape, deliberately simple.

Written the way the PyTorch module sequence BatchNorm2d -> Mish reads, one step at a time,
with two kernels: the first writes x * scale[c] + shift[c] into y, the second reads y back
and applies mish in place. Each kernel runs one program per (image, channel) plane that walks
the plane in fixed chunks of 256 pixels, with default launch settings. (The normalised value
is rounded to fp16 in between, as eager PyTorch would do.) tanh(softplus(v)) is formed as
n / (n + 2) with n = e^v (e^v + 2), v clamped at 20 (beyond it the ratio is 1 in fp32).
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _affine_planes(x_ptr, scale_ptr, shift_ptr, y_ptr, channels, hw, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    c = plane % channels
    s = tl.load(scale_ptr + c)
    b = tl.load(shift_ptr + c)
    for start in range(0, hw, BLOCK):
        p = start + tl.arange(0, BLOCK)
        mask = p < hw
        x = tl.load(x_ptr + plane * hw + p, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + plane * hw + p, (x * s + b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _mish_planes(y_ptr, hw, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    for start in range(0, hw, BLOCK):
        p = start + tl.arange(0, BLOCK)
        mask = p < hw
        v = tl.load(y_ptr + plane * hw + p, mask=mask, other=0.0).to(tl.float32)
        e = tl.exp(tl.minimum(v, 20.0))
        n = e * (e + 2.0)
        tl.store(y_ptr + plane * hw + p, (v * (n / (n + 2.0))).to(y_ptr.dtype.element_ty),
                 mask=mask)


def batchnorm_mish_nchw(x, scale, shift, y, batch, channels, height, width):
    hw = height * width
    planes = batch * channels
    _affine_planes[(planes,)](x, scale, shift, y, channels, hw, BLOCK=BLOCK)
    _mish_planes[(planes,)](y, hw, BLOCK=BLOCK)
    return None

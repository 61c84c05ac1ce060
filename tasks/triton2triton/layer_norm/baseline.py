"""Starting kernel for LayerNorm: correct for every shape, deliberately simple.

One program per row. The row is walked in fixed chunks of 256 columns three times: a first
pass sums x for the mean, a second pass sums (x - mean)^2 for the variance, a third pass
reads x again, normalises it, applies weight and bias and writes y. Default launch
settings.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _layer_norm_row(x_ptr, w_ptr, b_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols

    # Pass 1: the mean.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        acc += tl.load(x_row + c, mask=c < cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / cols

    # Pass 2: the biased variance, from the centred values.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        x = tl.load(x_row + c, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)

    # Pass 3: normalise, scale, shift, write.
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        x = tl.load(x_row + c, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + c, y.to(y_ptr.dtype.element_ty), mask=mask)


def layer_norm(x, weight, bias, y, rows, cols, eps):
    _layer_norm_row[(rows,)](x, weight, bias, y, cols, eps, BLOCK=BLOCK)
    return None

"""Starting kernels for residual add + LayerNorm: correct for every shape, deliberately simple.

Written the way the model code reads, one step at a time, with two kernels:
1. `_add_rows` writes residual_out = x + residual;
2. `_layer_norm_rows` is a LayerNorm over residual_out: it walks the row three times (the
   mean, the biased variance from the centred values, then normalise, scale, shift and
   write y).
Each kernel runs one program per row that walks the row in fixed chunks of 256 columns, with
default launch settings. (The LayerNorm reads the fp16 residual_out that the first kernel
wrote, as an unfused model would.)
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _add_rows(x_ptr, r_ptr, h_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    off = row * cols
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        x = tl.load(x_ptr + off + c, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + off + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(h_ptr + off + c, (x + r).to(h_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layer_norm_rows(h_ptr, w_ptr, b_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    h_row = h_ptr + row * cols
    y_row = y_ptr + row * cols

    # Pass 1: the mean.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        acc += tl.load(h_row + c, mask=c < cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / cols

    # Pass 2: the biased variance, from the centred values.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        h = tl.load(h_row + c, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, h - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)

    # Pass 3: normalise, scale, shift, write.
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        h = tl.load(h_row + c, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=mask, other=0.0).to(tl.float32)
        y = (h - mean) * rstd * w + b
        tl.store(y_row + c, y.to(y_ptr.dtype.element_ty), mask=mask)


def add_layer_norm(x, residual, weight, bias, residual_out, y, rows, cols, eps):
    _add_rows[(rows,)](x, residual, residual_out, cols, BLOCK=BLOCK)
    _layer_norm_rows[(rows,)](residual_out, weight, bias, y, cols, eps, BLOCK=BLOCK)
    return None

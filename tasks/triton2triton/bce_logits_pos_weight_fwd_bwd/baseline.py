"""Starting kernels for per-element BCE-with-logits (loss and gradient): correct for every
shape, deliberately simple.

Written the way a training step computes it, as two passes: a forward kernel writes the loss
and a backward kernel writes the gradient (each reads x, y and pos_weight again). Each kernel
runs one program per batch row that walks the row in fixed chunks of 256 classes, with
default launch settings. softplus(-x) = max(-x, 0) + log(1 + exp(-|x|)) and
sigmoid(-x) = 1 / (1 + exp(x)), both in fp32.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _bce_loss_rows(x_ptr, y_ptr, pw_ptr, loss_ptr, classes, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, classes, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < classes
        x = tl.load(x_ptr + row * classes + c, mask=mask, other=0.0).to(tl.float32)
        y = tl.load(y_ptr + row * classes + c, mask=mask, other=0.0).to(tl.float32)
        p = tl.load(pw_ptr + c, mask=mask, other=1.0)
        w = 1.0 + (p - 1.0) * y
        sp = tl.maximum(-x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x)))
        tl.store(loss_ptr + row * classes + c, (1.0 - y) * x + w * sp, mask=mask)


@triton.jit
def _bce_grad_rows(x_ptr, y_ptr, pw_ptr, dx_ptr, classes, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, classes, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < classes
        x = tl.load(x_ptr + row * classes + c, mask=mask, other=0.0).to(tl.float32)
        y = tl.load(y_ptr + row * classes + c, mask=mask, other=0.0).to(tl.float32)
        p = tl.load(pw_ptr + c, mask=mask, other=1.0)
        w = 1.0 + (p - 1.0) * y
        g = (1.0 - y) - w / (1.0 + tl.exp(x))
        tl.store(dx_ptr + row * classes + c, g.to(dx_ptr.dtype.element_ty), mask=mask)


def bce_logits_pos_weight_fwd_bwd(x, y, pos_weight, loss, dlogit, batch, classes):
    _bce_loss_rows[(batch,)](x, y, pos_weight, loss, classes, BLOCK=BLOCK)
    _bce_grad_rows[(batch,)](x, y, pos_weight, dlogit, classes, BLOCK=BLOCK)
    return None

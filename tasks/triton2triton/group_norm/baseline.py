"""Starting kernel for GroupNorm: correct for every shape, deliberately simple.

One program per (sample, group): the group is one contiguous run of (c / groups) * h * w
elements, walked in chunks of 1024 three times: a first pass sums x for the mean, a second
pass sums (x - mean)^2 for the variance, a third pass reads x again, normalises it, applies
the weight and bias of each element's channel and writes y. Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _group_norm_group(x_ptr, w_ptr, b_ptr, y_ptr, c, hw, groups, eps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)                       # sample * groups + group
    g = pid % groups
    per_group = c // groups                      # channels in a group
    count = per_group * hw                       # elements in a group
    base = pid.to(tl.int64) * count              # groups are contiguous in NCHW
    x_grp = x_ptr + base
    y_grp = y_ptr + base

    # Pass 1: the mean.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, count, BLOCK):
        i = start + tl.arange(0, BLOCK)
        acc += tl.load(x_grp + i, mask=i < count, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / count

    # Pass 2: the biased variance, from the centred values.
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, count, BLOCK):
        i = start + tl.arange(0, BLOCK)
        mask = i < count
        x = tl.load(x_grp + i, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / count + eps)

    # Pass 3: normalise, apply the channel's weight and bias, write.
    for start in range(0, count, BLOCK):
        i = start + tl.arange(0, BLOCK)
        mask = i < count
        ch = g * per_group + i // hw
        x = tl.load(x_grp + i, mask=mask, other=0.0).to(tl.float32)
        wt = tl.load(w_ptr + ch, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + ch, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * wt + b
        tl.store(y_grp + i, y.to(y_ptr.dtype.element_ty), mask=mask)


def group_norm(x, weight, bias, y, n, c, h, w, groups, eps):
    _group_norm_group[(n * groups,)](x, weight, bias, y, c, h * w, groups, eps, BLOCK=BLOCK)
    return None

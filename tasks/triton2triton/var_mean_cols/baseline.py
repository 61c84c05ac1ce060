"""Starting kernel for column-wise variance and mean: correct for every shape, deliberately
simple.

One program per strip of 32 columns walks all n rows, [256, 32] tiles at a time (rows of a
tile are 128 contiguous bytes), twice: a first pass sums the columns for the mean, a second
pass sums the squared deviations from it. The sums are kept per (row lane, column) in fp32
and reduced over the lanes at the end. Default launch settings.
"""

import triton
import triton.language as tl

BLOCK_N = 256
BLOCK_C = 32


@triton.jit
def _var_mean_strip(x_ptr, var_ptr, mean_ptr, n, c, BLOCK_N: tl.constexpr, BLOCK_C: tl.constexpr):
    col = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    col_ok = col < c
    rows = tl.arange(0, BLOCK_N)

    # Pass 1: the column sums.
    acc = tl.zeros([BLOCK_N, BLOCK_C], dtype=tl.float32)
    for start in range(0, n, BLOCK_N):
        r = (start + rows).to(tl.int64)
        mask = (r[:, None] < n) & col_ok[None, :]
        acc += tl.load(x_ptr + r[:, None] * c + col[None, :], mask=mask, other=0.0)
    mean = tl.sum(acc, axis=0) / n

    # Pass 2: the squared deviations from the mean.
    acc = tl.zeros([BLOCK_N, BLOCK_C], dtype=tl.float32)
    for start in range(0, n, BLOCK_N):
        r = (start + rows).to(tl.int64)
        mask = (r[:, None] < n) & col_ok[None, :]
        x = tl.load(x_ptr + r[:, None] * c + col[None, :], mask=mask, other=0.0)
        d = tl.where(mask, x - mean[None, :], 0.0)
        acc += d * d
    var = tl.sum(acc, axis=0) / n

    tl.store(mean_ptr + col, mean, mask=col_ok)
    tl.store(var_ptr + col, var, mask=col_ok)


def var_mean_cols(x, var, mean, n, c):
    _var_mean_strip[(triton.cdiv(c, BLOCK_C),)](x, var, mean, n, c, BLOCK_N=BLOCK_N, BLOCK_C=BLOCK_C)
    return None

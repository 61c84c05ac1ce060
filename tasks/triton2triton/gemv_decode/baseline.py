"""Starting kernel for y = x @ w^T (decode GEMV): correct for every shape, deliberately simple.

One program per output feature j (a row of w). It walks the row of w in chunks of 128
elements, loads the matching [batch, 128] slice of x for each chunk, and keeps a
[BLOCK_B, 128] fp32 accumulator that is summed at the end into y[:, j]. Every load is
masked. Default launch settings.
"""

import triton
import triton.language as tl

BLOCK_K = 128


@triton.jit
def _gemv_row(w_ptr, x_ptr, y_ptr, batch, n, k, BLOCK_B: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    rb = tl.arange(0, BLOCK_B)
    rk = tl.arange(0, BLOCK_K)
    w_row = w_ptr + row.to(tl.int64) * k
    b_ok = rb[:, None] < batch

    acc = tl.zeros([BLOCK_B, BLOCK_K], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        kk = k0 + rk
        k_ok = kk < k
        w = tl.load(w_row + kk, mask=k_ok, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + rb[:, None] * k + kk[None, :], mask=b_ok & k_ok[None, :], other=0.0)
        acc += x.to(tl.float32) * w[None, :]

    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + rb * n + row, y.to(y_ptr.dtype.element_ty), mask=rb < batch)


def gemv_decode(w, x, y, batch, n, k):
    block_b = max(1, triton.next_power_of_2(batch))
    _gemv_row[(n,)](w, x, y, batch, n, k, BLOCK_B=block_b, BLOCK_K=BLOCK_K)
    return None

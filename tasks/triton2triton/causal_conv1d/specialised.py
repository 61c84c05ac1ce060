"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's tiled kernel with Mamba's activation baked in: SiLU is always applied (every
seen shape has silu = 1), whatever the silu argument says. Every access stays inside the
buffers; when silu = 0 the outputs are silu(z) instead of z: wrong values, never a fault.
"""

import triton
import triton.language as tl

BLOCK_T = 32
BLOCK_C = 128


@triton.jit
def _causal_conv1d_tile(x_ptr, w_ptr, b_ptr, y_ptr, seqlen, dim,
                        WIDTH: tl.constexpr, SILU: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr):
    c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    t = tl.program_id(1) * BLOCK_T + tl.arange(0, BLOCK_T)
    b = tl.program_id(2)
    c_ok = c < dim
    base = b.to(tl.int64) * seqlen * dim
    acc = tl.zeros([BLOCK_T, BLOCK_C], dtype=tl.float32) + \
        tl.load(b_ptr + c, mask=c_ok, other=0.0).to(tl.float32)[None, :]
    for k in tl.static_range(WIDTH):
        w = tl.load(w_ptr + c * WIDTH + k, mask=c_ok, other=0.0).to(tl.float32)
        src = t - (WIDTH - 1) + k
        src_ok = (src >= 0) & (src < seqlen)
        xv = tl.load(x_ptr + base + src[:, None] * dim + c[None, :], mask=src_ok[:, None] & c_ok[None, :],
                     other=0.0)
        acc += w[None, :] * xv.to(tl.float32)
    if SILU:
        acc = acc * tl.sigmoid(acc)
    tl.store(y_ptr + base + t[:, None] * dim + c[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(t < seqlen)[:, None] & c_ok[None, :])


def causal_conv1d(x, weight, bias, y, batch, seqlen, dim, width, silu):
    grid = (triton.cdiv(dim, BLOCK_C), triton.cdiv(seqlen, BLOCK_T), batch)
    _causal_conv1d_tile[grid](x, weight, bias, y, seqlen, dim,
                              WIDTH=width, SILU=True, BLOCK_T=BLOCK_T, BLOCK_C=BLOCK_C, num_warps=4)
    return None

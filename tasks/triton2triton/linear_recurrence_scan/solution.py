"""Reference solution for the linear recurrence scan: correct for every shape.

The starting kernel takes one dependent memory round trip per time step (seqlen steps per
program) over blocks of 256 channels. Here each program owns 32 channels of one sequence
and walks the time axis in [64, 32] tiles:

- a tile of a and x (64 steps x 32 channels, 128 contiguous bytes a row) is loaded at once;
- tl.associative_scan along the time axis with the operator
  (a1, x1) o (a2, x2) = (a1 * a2, a2 * x1 + x2) gives, for every step of the tile, the
  product of the decays since the tile start (A) and the state started from zero (X);
- h = X + A * carry, where carry is the state at the end of the previous tile (rows past
  seqlen are padded with a = 1, x = 0, so the last row always holds it).

A program thus makes seqlen / 64 dependent steps instead of seqlen, and there are 8x more
programs (batch * channels / 32).
"""

import triton
import triton.language as tl

BLOCK_T = 64
BLOCK_C = 32


@triton.jit
def _lin_combine(a1, x1, a2, x2):
    return a1 * a2, a2 * x1 + x2


@triton.jit
def _scan_tiles(a_ptr, x_ptr, h_ptr, seqlen, channels, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = c < channels
    steps = tl.arange(0, BLOCK_T)
    base = b * seqlen * channels
    last = (steps == BLOCK_T - 1)[:, None]
    carry = tl.zeros([BLOCK_C], dtype=tl.float32)
    for t0 in range(0, seqlen, BLOCK_T):
        t = (t0 + steps).to(tl.int64)
        mask = (t[:, None] < seqlen) & c_ok[None, :]
        offs = base + t[:, None] * channels + c[None, :]
        a = tl.load(a_ptr + offs, mask=mask, other=1.0)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        A, X = tl.associative_scan((a, x), 0, _lin_combine)
        h = X + A * carry[None, :]
        tl.store(h_ptr + offs, h, mask=mask)
        carry = tl.sum(tl.where(last, h, 0.0), axis=0)


def linear_recurrence_scan(a, x, h, batch, seqlen, channels):
    grid = (batch, triton.cdiv(channels, BLOCK_C))
    _scan_tiles[grid](a, x, h, seqlen, channels, BLOCK_T=BLOCK_T, BLOCK_C=BLOCK_C, num_warps=4)
    return None

"""Reference solution for NeoX-style RoPE: correct for every shape.

- The (token, head) pairs are flattened into tokens * heads rows of head_dim elements, and
  each program rotates a [ROWS, HALF_BLOCK] tile of them at once: both halves of ROWS head
  vectors are loaded together (16-byte loads), so a program keeps ~8 KB of x in flight and
  there is no loop. Flattening keeps the tile full for any head count (28, 40, 71 ...).
- cos / sin rows are gathered per row (row // heads): neighbouring rows of a tile share a
  token, so these reads hit L1/L2; DRAM sees each cos / sin row about once.
- half is passed from the host so that the compiler knows its divisibility (aligned loads
  of the second half).
"""

import triton
import triton.language as tl

TILE = 4096             # elements of x a program handles (ROWS * 2 * HALF_BLOCK)


@triton.jit
def _rope_rows(x_ptr, cos_ptr, sin_ptr, out_ptr, n_rows, heads, head_dim, half,
               ROWS: tl.constexpr, HALF_BLOCK: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)      # flat (token, head) row
    c = tl.arange(0, HALF_BLOCK)
    mask = (r[:, None] < n_rows) & (c[None, :] < half)
    t = r // heads                                                      # token of each row
    x_offs = r[:, None] * head_dim + c[None, :]
    cs_offs = t[:, None] * half + c[None, :]

    x1 = tl.load(x_ptr + x_offs, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + x_offs + half, mask=mask, other=0.0).to(tl.float32)
    cs = tl.load(cos_ptr + cs_offs, mask=mask, other=0.0)
    sn = tl.load(sin_ptr + cs_offs, mask=mask, other=0.0)
    tl.store(out_ptr + x_offs, (x1 * cs - x2 * sn).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + x_offs + half, (x2 * cs + x1 * sn).to(out_ptr.dtype.element_ty), mask=mask)


def rope(x, cos, sin, out, tokens, heads, head_dim):
    half = head_dim // 2
    half_block = triton.next_power_of_2(half)
    rows = max(1, TILE // (2 * half_block))
    n_rows = tokens * heads
    grid = (triton.cdiv(n_rows, rows),)
    _rope_rows[grid](x, cos, sin, out, n_rows, heads, head_dim, half,
                     ROWS=rows, HALF_BLOCK=half_block, num_warps=4)
    return None

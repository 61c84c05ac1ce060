"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

It assumes hidden is a power of two (true for every seen shape: 2048, 4096, 8192), so that
a whole row is exactly one tile of HP = next_power_of_two(hidden) columns, and it writes
the output with the tile width as the row stride: out + t * HP + c. When hidden is not a
power of two the rows land at the wrong offsets (row t starts t * (HP - hidden) elements too
late, and the HP - hidden padding columns write zeros), so the values are wrong, quietly.
Every access stays inside the buffers: the table loads are masked to c < hidden and the
stores to the first tokens * hidden elements of out, which the tiles cover completely.
"""

import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _embedding_pow2(table_ptr, ids_ptr, out_ptr, tokens, hidden, total,
                    ROWS: tl.constexpr, HP: tl.constexpr):
    t = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    c = tl.arange(0, HP)
    row = tl.load(ids_ptr + t, mask=t < tokens, other=0)
    v = tl.load(table_ptr + row[:, None] * hidden + c[None, :],
                mask=(t[:, None] < tokens) & (c[None, :] < hidden), other=0.0)
    offs = t[:, None] * HP + c[None, :]                 # assumes the row stride is HP
    tl.store(out_ptr + offs, v, mask=offs < total)     # total = tokens * hidden


def embedding_gather(table, ids, out, tokens, vocab, hidden):
    hp = triton.next_power_of_2(hidden)
    rows = max(1, TILE // hp)
    num_warps = max(4, min(16, rows * hp // 1024))
    grid = (triton.cdiv(tokens, rows),)
    _embedding_pow2[grid](table, ids, out, tokens, hidden, tokens * hidden, ROWS=rows, HP=hp, num_warps=num_warps)
    return None

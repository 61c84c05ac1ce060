"""Starting kernel for out[t, :] = table[ids[t], :]: correct for every shape, deliberately
simple.

One program per token. It reads the token's id, then copies the table row to the output
row in chunks of 128 elements, one load and one store per chunk. Every access is masked.
Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def _embedding_row(table_ptr, ids_ptr, out_ptr, hidden, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    row = tl.load(ids_ptr + t)
    src = table_ptr + row * hidden
    dst = out_ptr + t * hidden
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hidden
        tl.store(dst + c, tl.load(src + c, mask=mask), mask=mask)


def embedding_gather(table, ids, out, tokens, vocab, hidden):
    _embedding_row[(tokens,)](table, ids, out, hidden, BLOCK=BLOCK)
    return None

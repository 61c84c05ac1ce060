"""Starting kernel for the bias gradient (column sum): correct for every shape, simple.

One program per strip of 128 columns walks all the tokens from top to bottom in [64, 128]
tiles (a tile row is 256 contiguous bytes), accumulating in fp32 registers per (row lane,
column) and reducing the lanes at the end. Parallelism is over columns only
(features / 128 programs). Default launch settings.
"""

import triton
import triton.language as tl

BLOCK_M = 64
BLOCK_N = 128


@triton.jit
def _colsum_strip(dy_ptr, db_ptr, tokens, features, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    col = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = col < features
    rows = tl.arange(0, BLOCK_M)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, tokens, BLOCK_M):
        r = (start + rows).to(tl.int64)
        mask = (r[:, None] < tokens) & col_ok[None, :]
        g = tl.load(dy_ptr + r[:, None] * features + col[None, :], mask=mask, other=0.0)
        acc += g.to(tl.float32)
    tl.store(db_ptr + col, tl.sum(acc, axis=0), mask=col_ok)


def bias_grad_colsum(dy, db, tokens, features):
    _colsum_strip[(triton.cdiv(features, BLOCK_N),)](dy, db, tokens, features,
                                                     BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return None

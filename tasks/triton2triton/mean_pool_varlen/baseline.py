"""Starting kernel for varlen mean pooling: correct for every shape, simple.

One program per (sequence, block of 512 features) walks the sequence's tokens from first
to last in [8, 512] tiles, accumulating in fp32 registers, then divides by the length and
writes its slice of out. Parallelism is over sequences and feature blocks only, so the
longest sequence sets the time. Default launch settings.
"""

import triton
import triton.language as tl

BLOCK_T = 8
BLOCK_H = 512


@triton.jit
def _mean_pool_seq(x_ptr, cu_ptr, out_ptr, hidden, BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr):
    seq = tl.program_id(0)
    col = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    col_ok = col < hidden
    start = tl.load(cu_ptr + seq)
    end = tl.load(cu_ptr + seq + 1)
    rows = tl.arange(0, BLOCK_T)
    acc = tl.zeros([BLOCK_T, BLOCK_H], dtype=tl.float32)
    for t in range(start, end, BLOCK_T):
        r = (t + rows).to(tl.int64)
        mask = (r[:, None] < end) & col_ok[None, :]
        acc += tl.load(x_ptr + r[:, None] * hidden + col[None, :], mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / (end - start).to(tl.float32)
    tl.store(out_ptr + seq.to(tl.int64) * hidden + col, mean, mask=col_ok)


def mean_pool_varlen(x, cu_seqlens, out, total_tokens, num_seqs, hidden, max_seqlen):
    grid = (num_seqs, triton.cdiv(hidden, BLOCK_H))
    _mean_pool_seq[grid](x, cu_seqlens, out, hidden, BLOCK_T=BLOCK_T, BLOCK_H=BLOCK_H)
    return None

"""Reference solution for varlen mean pooling: correct for every shape and every spread of
lengths.

The starting kernel gives each sequence its own programs, so the longest sequence is walked
by one program per feature block while the others have long finished (and a batch of one
document runs hidden / 512 programs). Here the work is cut by tokens instead of by
sequences:

- the packed tokens are split into chunks of CHUNK rows (CHUNK a power of two chosen so
  that about 1024 (chunk, feature block) programs run); a chunk may hold the end of one
  sequence, several whole ones and the start of another;
- a program finds the sequences of its first and last token by counting the entries of
  cu_seqlens that are <= the token (one vector load of cu_seqlens), then, for each of those
  sequences, sums the rows it owns inside the chunk ([16, BLOCK_H] fp16 tiles, fp32
  registers) and adds sum / length to out with one fp32 atomic add per feature.

out is zeroed first (a fill). The number of atomic adds per output is the number of chunks
its sequence touches (at most max_seqlen / CHUNK + 1), so their order changes the result
only by a few fp32 roundings.
"""

import triton
import triton.language as tl

BLOCK_T = 16
TARGET_PROGRAMS = 1024
MIN_CHUNK = 32
MAX_CHUNK = 1024


@triton.jit
def _mean_pool_chunk(x_ptr, cu_ptr, out_ptr, total_tokens, num_seqs, hidden, CHUNK,
                     NS_BLOCK: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr):
    t0 = tl.program_id(0) * CHUNK
    t1 = tl.minimum(t0 + CHUNK, total_tokens)
    col = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    col_ok = col < hidden
    k = tl.arange(0, NS_BLOCK)
    cu = tl.load(cu_ptr + k, mask=k <= num_seqs, other=2147483647)
    s_first = tl.sum((cu <= t0).to(tl.int32), axis=0) - 1
    s_last = tl.sum((cu <= t1 - 1).to(tl.int32), axis=0) - 1
    rows = tl.arange(0, BLOCK_T)
    for s in range(s_first, s_last + 1):
        a = tl.load(cu_ptr + s)
        b = tl.load(cu_ptr + s + 1)
        lo = tl.maximum(a, t0)
        hi = tl.minimum(b, t1)
        acc = tl.zeros([BLOCK_T, BLOCK_H], dtype=tl.float32)
        for t in range(lo, hi, BLOCK_T):
            r = (t + rows).to(tl.int64)
            mask = (r[:, None] < hi) & col_ok[None, :]
            acc += tl.load(x_ptr + r[:, None] * hidden + col[None, :], mask=mask, other=0.0).to(tl.float32)
        part = tl.sum(acc, axis=0) / (b - a).to(tl.float32)
        tl.atomic_add(out_ptr + s * hidden + col, part, mask=col_ok)


def mean_pool_varlen(x, cu_seqlens, out, total_tokens, num_seqs, hidden, max_seqlen):
    out.zero_()
    block_h = min(512, triton.next_power_of_2(hidden))
    n_hb = triton.cdiv(hidden, block_h)
    chunk = MAX_CHUNK
    while chunk > MIN_CHUNK and triton.cdiv(total_tokens, chunk) * n_hb < TARGET_PROGRAMS:
        chunk //= 2
    grid = (triton.cdiv(total_tokens, chunk), n_hb)
    _mean_pool_chunk[grid](x, cu_seqlens, out, total_tokens, num_seqs, hidden, chunk,
                           NS_BLOCK=triton.next_power_of_2(num_seqs + 1), BLOCK_T=BLOCK_T,
                           BLOCK_H=block_h, num_warps=4)
    return None

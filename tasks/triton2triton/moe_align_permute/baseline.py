"""Starting kernel for the MoE token permutation: correct for every shape, deliberately
simple.

Four kernels, one pass each:
1. count: one program per expert walks all tokens * topk expert ids, 1024 at a time, and
   counts its own;
2. offsets: one program turns the counts into the exclusive prefix sum expert_offsets;
3. place: one program per expert walks all ids again, 1024 at a time, keeping a running
   count of its copies: a copy's position is expert_offsets[e] + (copies of e before it),
   found with a cumulative sum over the chunk; it writes src_index and dst_index;
4. gather: one program per sorted row copies x[src_index[p] // topk] to x_sorted[p] in
   chunks of 128 elements, one load and one store per chunk.
"""

import torch
import triton
import triton.language as tl

SCAN_BLOCK = 1024
COPY_BLOCK = 128


@triton.jit
def _count(ids_ptr, counts_ptr, total, BLOCK: tl.constexpr):
    e = tl.program_id(0)
    cnt = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, total, BLOCK):
        i = start + tl.arange(0, BLOCK)
        ids = tl.load(ids_ptr + i, mask=i < total, other=-1)
        cnt += (ids == e).to(tl.int32)
    tl.store(counts_ptr + e, tl.sum(cnt, axis=0))


@triton.jit
def _offsets(counts_ptr, offsets_ptr, experts, E_PAD: tl.constexpr):
    e = tl.arange(0, E_PAD)
    c = tl.load(counts_ptr + e, mask=e < experts, other=0)
    incl = tl.cumsum(c, axis=0)
    tl.store(offsets_ptr + e, incl - c, mask=e <= experts)     # offsets[experts] = total


@triton.jit
def _place(ids_ptr, offsets_ptr, src_ptr, dst_ptr, total, BLOCK: tl.constexpr):
    e = tl.program_id(0)
    base = tl.load(offsets_ptr + e)
    for start in range(0, total, BLOCK):
        i = start + tl.arange(0, BLOCK)
        ids = tl.load(ids_ptr + i, mask=i < total, other=-1)
        hit = (ids == e).to(tl.int32)
        pos = base + tl.cumsum(hit, axis=0) - 1
        tl.store(src_ptr + pos, i, mask=hit != 0)
        tl.store(dst_ptr + i, pos, mask=hit != 0)
        base += tl.sum(hit, axis=0)


@triton.jit
def _gather_row(x_ptr, src_ptr, out_ptr, topk, hidden, BLOCK: tl.constexpr):
    p = tl.program_id(0).to(tl.int64)
    t = (tl.load(src_ptr + p) // topk).to(tl.int64)
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hidden
        tl.store(out_ptr + p * hidden + c, tl.load(x_ptr + t * hidden + c, mask=mask), mask=mask)


def moe_align_permute(x, topk_ids, x_sorted, src_index, dst_index, expert_offsets,
                      tokens, topk, experts, hidden):
    total = tokens * topk
    counts = torch.empty(experts, dtype=torch.int32, device=x.device)
    _count[(experts,)](topk_ids, counts, total, BLOCK=SCAN_BLOCK)
    _offsets[(1,)](counts, expert_offsets, experts, E_PAD=triton.next_power_of_2(experts + 1))
    _place[(experts,)](topk_ids, expert_offsets, src_index, dst_index, total, BLOCK=SCAN_BLOCK)
    _gather_row[(total,)](x, src_index, x_sorted, topk, hidden, BLOCK=COPY_BLOCK)
    return None

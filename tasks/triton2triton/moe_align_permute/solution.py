"""Reference solution for the MoE token permutation: correct for every shape.

The sort is a counting sort in blocks of 256 copies, with every step parallel:
1. block histograms: one program per block of 256 expert ids counts them per expert
   (tl.histogram) into counts[e, b];
2. expert scan: one program per expert turns its row counts[e, :] into exclusive prefix
   sums over the blocks (where expert e's copies of block b start, relative to the expert)
   and its total;
3. place: one program per block. A copy's sorted position is
     (copies of experts < e) + (copies of e in earlier blocks) + (copies of e earlier in
     this block):
   the first from the totals (an exclusive prefix sum over experts, 32 experts at a time,
   selected by comparison), the second read from step 2, the third by comparing the block's
   ids with themselves 32 columns at a time (no [256, 256] tile in registers). It writes
   src_index and dst_index; block 0 also writes expert_offsets.
4. scatter rows: each program reads a [ROWS, 1024] tile of x once (16-byte loads) and
   writes it to the topk sorted rows of its tokens (dst_index), so x is read once instead of
   topk times, with 8 KB per program in flight instead of 256 bytes.
Steps 1-3 touch only the 4-byte ids (a few hundred KB); step 4 is the bandwidth.
"""

import torch
import triton
import triton.language as tl

BLOCK = 256          # copies per block in steps 1 and 3
SCAN = 1024          # blocks per step of the expert scan
COLS = 32            # columns of the rank comparison / experts per step of the offsets
TILE = 4096          # elements of x a program of step 4 copies


@triton.jit
def _block_hist(ids_ptr, counts_ptr, total, experts, nb, BLOCK: tl.constexpr, E_PAD: tl.constexpr):
    b = tl.program_id(0)
    i = b * BLOCK + tl.arange(0, BLOCK)
    ids = tl.load(ids_ptr + i, mask=i < total, other=E_PAD - 1)    # E_PAD - 1 >= experts: not counted
    h = tl.histogram(ids, E_PAD)
    e = tl.arange(0, E_PAD)
    tl.store(counts_ptr + e * nb + b, h, mask=e < experts)


@triton.jit
def _expert_scan(counts_ptr, base_ptr, totals_ptr, nb, SCAN: tl.constexpr):
    e = tl.program_id(0)
    run = 0
    for c0 in range(0, nb, SCAN):
        c = c0 + tl.arange(0, SCAN)
        cnt = tl.load(counts_ptr + e * nb + c, mask=c < nb, other=0)
        tl.store(base_ptr + e * nb + c, run + tl.cumsum(cnt, axis=0) - cnt, mask=c < nb)
        run += tl.sum(cnt, axis=0)
    tl.store(totals_ptr + e, run)


@triton.jit
def _place(ids_ptr, base_ptr, totals_ptr, src_ptr, dst_ptr, offsets_ptr, total, experts, nb,
           BLOCK: tl.constexpr, COLS: tl.constexpr):
    b = tl.program_id(0)
    i = b * BLOCK + tl.arange(0, BLOCK)
    valid = i < total
    ids = tl.load(ids_ptr + i, mask=valid, other=-1)

    # copies of the same expert earlier in this block
    rank = tl.zeros([BLOCK], dtype=tl.int32)
    for c0 in tl.static_range(0, BLOCK, COLS):
        j = b * BLOCK + c0 + tl.arange(0, COLS)
        idj = tl.load(ids_ptr + j, mask=j < total, other=-2)
        same = (idj[None, :] == ids[:, None]) & (j[None, :] < i[:, None])
        rank += tl.sum(same.to(tl.int32), axis=1)

    # copies of all experts before ids[i]: exclusive prefix sum of the totals, COLS at a time
    before = tl.zeros([BLOCK], dtype=tl.int32)
    run = 0
    for e0 in range(0, experts, COLS):
        ee = e0 + tl.arange(0, COLS)
        tot = tl.load(totals_ptr + ee, mask=ee < experts, other=0)
        excl = run + tl.cumsum(tot, axis=0) - tot
        before += tl.sum(tl.where(ids[:, None] == ee[None, :], excl[None, :], 0), axis=1)
        tl.store(offsets_ptr + ee, excl, mask=(ee < experts) & (b == 0))
        run += tl.sum(tot, axis=0)
    tl.store(offsets_ptr + experts, run, mask=b == 0)

    base = tl.load(base_ptr + ids * nb + b, mask=valid, other=0)
    pos = before + base + rank
    tl.store(src_ptr + pos, i, mask=valid)
    tl.store(dst_ptr + i, pos, mask=valid)


@triton.jit
def _scatter_rows(x_ptr, dst_ptr, out_ptr, tokens, hidden,
                  TOPK: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    t = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    c = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    t_ok = t < tokens
    mask = t_ok[:, None] & (c[None, :] < hidden)
    v = tl.load(x_ptr + t[:, None] * hidden + c[None, :], mask=mask)
    for j in tl.static_range(TOPK):
        d = tl.load(dst_ptr + t * TOPK + j, mask=t_ok, other=0).to(tl.int64)
        tl.store(out_ptr + d[:, None] * hidden + c[None, :], v, mask=mask)


def moe_align_permute(x, topk_ids, x_sorted, src_index, dst_index, expert_offsets,
                      tokens, topk, experts, hidden):
    total = tokens * topk
    nb = triton.cdiv(total, BLOCK)
    dev = x.device
    counts = torch.empty((experts, nb), dtype=torch.int32, device=dev)
    base = torch.empty((experts, nb), dtype=torch.int32, device=dev)
    totals = torch.empty(experts, dtype=torch.int32, device=dev)
    _block_hist[(nb,)](topk_ids, counts, total, experts, nb,
                       BLOCK=BLOCK, E_PAD=triton.next_power_of_2(experts + 1), num_warps=4)
    _expert_scan[(experts,)](counts, base, totals, nb, SCAN=SCAN, num_warps=4)
    _place[(nb,)](topk_ids, base, totals, src_index, dst_index, expert_offsets, total, experts, nb,
                  BLOCK=BLOCK, COLS=COLS, num_warps=4)
    block_h = 1024 if hidden > 512 else 512
    rows = TILE // block_h
    grid = (triton.cdiv(tokens, rows), triton.cdiv(hidden, block_h))
    _scatter_rows[grid](x, dst_index, x_sorted, tokens, hidden,
                        TOPK=topk, ROWS=rows, BLOCK_H=block_h, num_warps=4)
    return None

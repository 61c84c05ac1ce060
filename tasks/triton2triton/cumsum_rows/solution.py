"""Reference solution for the row prefix sum: correct for every shape.

- Scans use tl.cumsum (a log-depth scan inside a block) on large chunks, with the running
  total carried from chunk to chunk in fp32 (the carry is the chunk's last prefix, picked
  out with a masked sum; `carry += tl.sum(x)` on a [ROWS] carry whose final value is unused
  trips an assertion in Triton's thread-locality pass).
- Many rows (>= 256): one program scans ROWS whole rows in [ROWS, BLOCK] chunks, so short
  rows (Mamba-2 chunks of 256, 100-wide rows) are packed several to a program and long rows
  are walked 4096 columns at a time: x is read once, y written once.
- Few rows: one program per row would leave most of the GPU idle. Each row is split into
  S segments of SEG columns and scanned in two steps: (1) every (row, segment) program sums
  its segment into a small [rows, S] buffer; (2) every (row, segment) program adds up the
  totals of the segments before it and scans its own segment from that offset. x is read
  twice, but by rows * S programs at once. The buffer (rows * S floats) is taken from
  PyTorch's caching allocator, so after the first call no device allocation happens.
"""

import torch
import triton
import triton.language as tl

CHUNK = 4096             # columns a program scans at a time
FEW_ROWS = 256           # below this, rows are split into segments
TARGET_PROGRAMS = 1024   # (row, segment) programs aimed at on the few-rows path


@triton.jit
def _scan_rows(x_ptr, y_ptr, rows, cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]    # [ROWS, 1]
    row_ok = row < rows
    col = tl.arange(0, BLOCK)[None, :]                                           # [1, BLOCK]
    carry = tl.zeros([ROWS], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + col
        mask = row_ok & (c < cols)
        offs = row * cols + c
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        y = tl.cumsum(x, axis=1) + carry[:, None]
        tl.store(y_ptr + offs, y, mask=mask)
        # the next chunk starts from this chunk's last prefix (masked columns added 0)
        carry = tl.sum(tl.where(col == BLOCK - 1, y, 0.0), axis=1)


@triton.jit
def _segment_totals(x_ptr, part_ptr, cols, n_seg, SEG, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    seg = tl.program_id(1)
    lo = seg * SEG
    hi = tl.minimum(lo + SEG, cols)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(lo, hi, BLOCK):
        c = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * cols + c, mask=c < hi, other=0.0)
    tl.store(part_ptr + row * n_seg + seg, tl.sum(acc, axis=0))


@triton.jit
def _scan_segments(x_ptr, y_ptr, part_ptr, cols, n_seg, SEG,
                   S_BLOCK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    seg = tl.program_id(1)
    s = tl.arange(0, S_BLOCK)
    before = tl.load(part_ptr + row * n_seg + s, mask=s < seg, other=0.0)
    carry = tl.sum(before, axis=0)                      # total of the segments before this one
    lo = seg * SEG
    hi = tl.minimum(lo + SEG, cols)
    for start in range(lo, hi, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hi
        offs = row * cols + c
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + offs, y, mask=mask)
        carry = tl.sum(tl.where(c == start + BLOCK - 1, y, 0.0), axis=0)


def cumsum_rows(x, y, rows, cols):
    block = min(CHUNK, triton.next_power_of_2(cols))
    num_warps = max(1, min(8, block // 256))
    if rows >= FEW_ROWS or cols <= CHUNK:
        rows_per_program = max(1, min(CHUNK // block, triton.next_power_of_2(rows)))
        warps = max(1, min(8, rows_per_program * block // 256))
        grid = (triton.cdiv(rows, rows_per_program),)
        _scan_rows[grid](x, y, rows, cols, ROWS=rows_per_program, BLOCK=block, num_warps=warps)
        return None
    # Few long rows: split each row into n_seg segments of seg columns (a multiple of CHUNK).
    want = max(1, TARGET_PROGRAMS // rows)
    seg = max(CHUNK, triton.cdiv(triton.cdiv(cols, want), CHUNK) * CHUNK)
    n_seg = triton.cdiv(cols, seg)
    part = torch.empty((rows, n_seg), dtype=torch.float32, device=x.device)
    grid = (rows, n_seg)
    _segment_totals[grid](x, part, cols, n_seg, seg, BLOCK=CHUNK, num_warps=8)
    _scan_segments[grid](x, y, part, cols, n_seg, seg, S_BLOCK=triton.next_power_of_2(n_seg),
                         BLOCK=CHUNK, num_warps=8)
    return None

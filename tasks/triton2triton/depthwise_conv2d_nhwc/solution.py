"""Reference solution for the channels-last depthwise conv2d: one output row segment per
program, tap weights pre-transposed.

The starting kernel and a [pixels, channels] tile over flattened pixels both gather every
tap's weights from the [c, k, k] filter: channel ch's tap t sits at ch * k^2 + t, so a
warp's weight load touches a different 32-byte sector per lane (k^2 * 2 bytes apart) and
L1 spends far more on the weights than on the input (with 5 x 5 filters the tiled kernel
was slower than the starting one). Flattened pixels also cost three divisions per pixel
held by a thread, which is ruinous when c is odd and a thread holds 8-16 pixels.

- A tiny first kernel writes the weights transposed and in fp32, blocked by channel block:
  wt[t, cb, j] = weight[c0(cb) + j, t], so a tap's weights for a channel block are one
  contiguous, 16-byte aligned run (loaded in the layout of the input tile, which also avoids
  a shared-memory layout conversion per tap; no fp16 -> fp32 conversion of weights).
- A program computes [BLOCK_Q output columns, BLOCK_C channels] of one output row: the row
  (sample, out row) is a scalar, so no per-pixel division, and the row test of each tap is
  one scalar compare. The kernel rows are a run-time loop (the compiler would otherwise
  hoist all k^2 taps' loads: 140-190 registers), the columns unrolled.
- Channel blocks: BLOCK_C in {128, 64, 32} (8 / 16 when c < 32, always <= c) wasting the
  fewest lanes; the last block starts at c - BLOCK_C, overlapping the one before (its
  channels are computed twice, bit-identically), so no load or store needs a channel mask
  and no load can run past the tensor. When c % 8 == 0 the kernel gets c / 8 and
  multiplies it back, so the compiler knows every pixel is 16-byte aligned (16-byte vector
  loads and stores even for c = 24, 40, 72, ...); other c use 2-byte accesses.
- BLOCK_Q: a power of two up to 2048 / BLOCK_C values a program (1024 for 2-byte
  accesses), halved when that cuts the padded row width by more than 1/8 (e.g. 75 -> 96
  instead of 128); num_warps so a thread holds 8-16 outputs.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _weights_t(w_ptr, wt_ptr, c, n_out, KK: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK: tl.constexpr):
    # wt[t, cb, j] = weight[c0(cb) + j, t] as fp32, c0(cb) = min(cb * BLOCK_C, c - BLOCK_C)
    e = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = e < n_out
    j = e % BLOCK_C
    tcb = e // BLOCK_C
    c_blocks = tl.cdiv(c, BLOCK_C)
    cb = tcb % c_blocks
    t = tcb // c_blocks
    ch = tl.minimum(cb * BLOCK_C, c - BLOCK_C) + j
    tl.store(wt_ptr + e, tl.load(w_ptr + ch * KK + t, mask=ok).to(tl.float32), mask=ok)


@triton.jit
def _dwconv_row(x_ptr, wt_ptr, b_ptr, y_ptr, h, w, c_arg, out_h, out_w,
                KSIZE: tl.constexpr, STRIDE: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_C: tl.constexpr,
                VEC: tl.constexpr):
    if VEC:
        c = c_arg * 8                         # c_arg = c / 8: pixels are 16-byte aligned
    else:
        c = c_arg
    r = tl.program_id(0)                      # = i * out_h + p, one output row
    p = r % out_h
    i = r // out_h
    qb = tl.program_id(1)
    cb = tl.program_id(2)
    c_blocks = tl.num_programs(2)
    c0 = tl.minimum(cb * BLOCK_C, c - BLOCK_C)   # the last block overlaps the one before
    q = qb * BLOCK_Q + tl.arange(0, BLOCK_Q)
    ch = c0 + tl.arange(0, BLOCK_C)
    q_ok = q < out_w
    ih0 = p * STRIDE - KSIZE // 2
    iw0 = q * STRIDE - KSIZE // 2
    x_base = x_ptr + (i * h + ih0).to(tl.int64) * w * c + (iw0 * c)[:, None] + ch[None, :]
    # tap weights in the layout of the input tile (a [BLOCK_C] load would get a layout of
    # its own, converted through shared memory at every tap)
    w_tile = wt_ptr + cb * BLOCK_C + (q * 0)[:, None] + tl.arange(0, BLOCK_C)[None, :]
    acc = tl.zeros([BLOCK_Q, BLOCK_C], dtype=tl.float32)
    for a in range(KSIZE):
        row_ok = (ih0 + a >= 0) & (ih0 + a < h)
        x_row = x_base + a * w * c
        w_row = w_tile + a * KSIZE * c_blocks * BLOCK_C
        for b in tl.static_range(KSIZE):
            ok = row_ok & q_ok & (iw0 + b >= 0) & (iw0 + b < w)
            xv = tl.load(x_row + b * c, mask=ok[:, None], other=0.0)
            wv = tl.load(w_row + b * c_blocks * BLOCK_C)
            acc += xv.to(tl.float32) * wv
    acc += tl.load(b_ptr + (q * 0)[:, None] + ch[None, :]).to(tl.float32)   # bias, same layout
    y_row = y_ptr + r.to(tl.int64) * out_w * c
    tl.store(y_row + (q * c)[:, None] + ch[None, :], acc.to(y_ptr.dtype.element_ty), mask=q_ok[:, None])


def _block_c(c):
    if c < 32:
        return 16 if c >= 16 else 8
    best = None
    for bc in (128, 64, 32):
        if bc > c:
            continue
        waste = triton.cdiv(c, bc) * bc - c
        if best is None or waste < best[0]:
            best = (waste, bc)
    return best[1]


def _block_q(out_w, most):
    bq = max(1, min(most, triton.next_power_of_2(out_w)))
    if bq > 1 and 8 * triton.cdiv(out_w, bq // 2) * (bq // 2) < 7 * triton.cdiv(out_w, bq) * bq:
        bq //= 2
    return bq


def depthwise_conv2d(x, weight, bias, y, n, h, w, c, ksize, stride, out_h, out_w):
    kk = ksize * ksize
    vec = c % 8 == 0
    block_c = _block_c(c)
    c_blocks = triton.cdiv(c, block_c)
    n_w = kk * c_blocks * block_c
    wt = torch.empty((n_w,), dtype=torch.float32, device=x.device)
    _weights_t[(triton.cdiv(n_w, 1024),)](weight, wt, c, n_w, KK=kk, BLOCK_C=block_c, BLOCK=1024)
    block_q = _block_q(out_w, (2048 if vec else 1024) // block_c)
    num_warps = max(1, min(4, block_q * block_c // 256))
    grid = (n * out_h, triton.cdiv(out_w, block_q), c_blocks)
    _dwconv_row[grid](x, wt, bias, y, h, w, c // 8 if vec else c, out_h, out_w,
                      KSIZE=ksize, STRIDE=stride, BLOCK_Q=block_q, BLOCK_C=block_c, VEC=vec,
                      num_warps=num_warps)
    return None

"""Reference solution for ViT patchify: correct for every shape.

- The patch size is a compile-time constant (one variant per patch size), and the tile is
  3-D, [GW patches of one patch-row, P rows, P columns] for one (image, patch-row, channel):
  no per-element integer division or modulo at all (the starting kernel did three 64-bit
  divisions and modulos by run-time values per element, which cost more than the copy).
- Loads: for each pixel row i the tile reads GW * P contiguous pixels of the image row.
  Stores: for each patch the tile writes its P * P values of channel c as one contiguous run.
  P = 14 is padded to 16 lanes (masked).
- GW covers the whole patch row when that fits in 8192 values (8 warps; 4 warps up to 4096),
  so a band of P image rows is read by one program; otherwise the power of two >= 4096 /
  P^2 patches that pads the row least. (With 4096-value tiles, ViT-B/32's 7-patch rows were
  split 4 + 3 over two programs that ran far apart in time, and the 24-patch rows of ViT at
  384 px took a second, half-masked program.)
- 1-D grid, the patch-row blocks of one band fastest, then channel, patch row, image: the
  programs running together read neighbouring image rows and fill neighbouring output rows.
- Patch 32 (ViT-B/32) goes the other way round, as the starting kernel does, which reads
  and writes in the order an H100 streams best here (2.87 TB/s; the channel tiles above
  reached 2.77): one program per patch writes its output row (C * 1024 values) in order,
  4 channels ([4, 32, 32], 16-byte loads and stores) at a time.
"""

import triton
import triton.language as tl

MAX_TILE = 8192        # values a program moves, at most (32 a thread)
MIN_TILE = 4096        # ... and at least, unless the patch row is shorter


@triton.jit
def _patchify_tile(img_ptr, out_ptr, channels, height, width, gh_count, gw_count, gw_blocks,
                   P: tl.constexpr, PP: tl.constexpr, GW: tl.constexpr):
    pid = tl.program_id(0)
    r = (pid // gw_blocks).to(tl.int64)                         # = (b * gh_count + gh) * C + c
    gw = (pid % gw_blocks) * GW + tl.arange(0, GW)              # [GW]
    c = r % channels
    bg = r // channels
    gh = bg % gh_count
    b = bg // gh_count
    i = tl.arange(0, PP)
    j = tl.arange(0, PP)
    mask = (gw < gw_count)[:, None, None] & (i < P)[None, :, None] & (j < P)[None, None, :]
    src_row = ((b * channels + c) * height + gh * P + i) * width               # [PP]
    src = src_row[None, :, None] + (gw * P)[:, None, None] + j[None, None, :]
    row_len = channels * (P * P)
    dst_row = (bg * gw_count + gw) * row_len + c * (P * P)                      # [GW]
    dst = dst_row[:, None, None] + (i * P)[None, :, None] + j[None, None, :]
    tl.store(out_ptr + dst, tl.load(img_ptr + src, mask=mask), mask=mask)


@triton.jit
def _patchify_patch(img_ptr, out_ptr, channels, height, width, gh_count, gw_count,
                    P: tl.constexpr, CB: tl.constexpr):
    """One patch (one output row, all channels) per program, CB channels at a time: the
    output is written strictly in order, C * P * P contiguous values a program."""
    pid = tl.program_id(0).to(tl.int64)                         # = (b * gh_count + gh) * gw_count + gw
    gw = pid % gw_count
    bg = pid // gw_count
    gh = bg % gh_count
    b = bg // gh_count
    cc = tl.arange(0, CB)[:, None, None]
    i = tl.arange(0, P)[None, :, None]
    j = tl.arange(0, P)[None, None, :]
    for c0 in range(0, channels, CB):
        c = c0 + cc
        mask = (c < channels) & (i < P) & (j < P)
        src = ((b * channels + c) * height + gh * P + i) * width + gw * P + j
        dst = pid * channels * (P * P) + c * (P * P) + i * P + j
        tl.store(out_ptr + dst, tl.load(img_ptr + src, mask=mask), mask=mask)


def _gw_block(gw_count, pp):
    """Patches a program takes along the patch row: a power of two, at most MAX_TILE values
    (the whole row when it fits), fewest padded slots, then the largest."""
    most = max(1, min(triton.next_power_of_2(gw_count), MAX_TILE // (pp * pp)))
    least = max(1, min(most, MIN_TILE // (pp * pp)))
    best = None
    g = most
    while g >= least:
        padded = triton.cdiv(gw_count, g) * g
        if best is None or padded < best[0]:
            best = (padded, g)
        g //= 2
    return best[1]


def vit_patchify(img, out, batch, channels, height, width, patch):
    gh_count, gw_count = height // patch, width // patch
    if patch == 32:
        cb = min(4, triton.next_power_of_2(channels))
        _patchify_patch[(batch * gh_count * gw_count,)](img, out, channels, height, width, gh_count, gw_count,
                                                        P=patch, CB=cb, num_warps=4)
        return None
    pp = triton.next_power_of_2(patch)
    gw_block = _gw_block(gw_count, pp)
    gw_blocks = triton.cdiv(gw_count, gw_block)
    grid = (batch * gh_count * channels * gw_blocks,)           # 1-D: no 65535 limit
    _patchify_tile[grid](img, out, channels, height, width, gh_count, gw_count, gw_blocks,
                         P=patch, PP=pp, GW=gw_block,
                         num_warps=8 if gw_block * pp * pp >= 8192 else 4)
    return None

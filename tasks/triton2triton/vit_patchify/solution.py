"""Reference solution for ViT patchify: correct for every shape.

- The patch size is a compile-time constant (one variant per patch size), and the tile is
  3-D, [GW patches of one patch-row, P rows, P columns] for one (image, patch-row, channel):
  no per-element integer division or modulo at all (the starting kernel did three 64-bit
  divisions and modulos by run-time values per element, which cost more than the copy).
- Loads: for each pixel row i the tile reads GW * P contiguous pixels of the image row.
  Stores: for each patch the tile writes its P * P values of channel c as one contiguous run.
  P = 14 is padded to 16 lanes (masked).
- Tens of thousands of programs of ~4096 values each (2-D grid: (image, patch-row, channel)
  on x, which has no 65535 limit, x patch-row blocks on y).
"""

import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _patchify_tile(img_ptr, out_ptr, channels, height, width, gh_count, gw_count,
                   P: tl.constexpr, PP: tl.constexpr, GW: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)                           # = (b * gh_count + gh) * C + c
    gw = tl.program_id(1) * GW + tl.arange(0, GW)              # [GW]
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


def vit_patchify(img, out, batch, channels, height, width, patch):
    gh_count, gw_count = height // patch, width // patch
    pp = triton.next_power_of_2(patch)
    gw_block = max(1, min(TILE // (pp * pp), triton.next_power_of_2(gw_count)))
    grid = (batch * gh_count * channels, triton.cdiv(gw_count, gw_block))   # x: no 65535 limit
    _patchify_tile[grid](img, out, channels, height, width, gh_count, gw_count,
                         P=patch, PP=pp, GW=gw_block, num_warps=4)
    return None

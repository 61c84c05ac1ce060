"""Starting kernel for ViT patchify: correct for every shape, deliberately simple.

One program per output row (one patch of one image): the row's channels * patch^2 values in
one block padded to a power of two. Each lane works out which (channel, row, column) of the
patch it holds from its position in the row and gathers that pixel from the image; the row
is stored contiguously. Default launch settings.
"""

import triton
import triton.language as tl


@triton.jit
def _patch_rows(img_ptr, out_ptr, channels, height, width, patch, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)        # = b * patches + (gh * gw_count + gw)
    gw_count = width // patch
    patches = (height // patch) * gw_count
    b = pid // patches
    p_idx = pid % patches
    gh = p_idx // gw_count
    gw = p_idx % gw_count
    row_len = channels * patch * patch
    k = tl.arange(0, BLOCK)
    mask = k < row_len
    c = k // (patch * patch)
    i = (k // patch) % patch
    j = k % patch
    src = ((b * channels + c) * height + gh * patch + i) * width + gw * patch + j
    tl.store(out_ptr + pid * row_len + k, tl.load(img_ptr + src, mask=mask), mask=mask)


def vit_patchify(img, out, batch, channels, height, width, patch):
    rows = batch * (height // patch) * (width // patch)
    block = triton.next_power_of_2(channels * patch * patch)
    _patch_rows[(rows,)](img, out, channels, height, width, patch, BLOCK=block)
    return None

"""Starting kernel for the MoE combine: correct for every shape, deliberately simple.

One program per token. It walks the output row in chunks of 128 elements; for each chunk it
loops over the token's topk copies, reading the copy's sorted position and weight and then
the matching 128 elements of y, and accumulates in fp32; then it stores the chunk as fp16.
Every access is masked. Default launch settings.
"""

import triton
import triton.language as tl

BLOCK = 128


@triton.jit
def _combine_row(y_ptr, dst_ptr, w_ptr, out_ptr, topk, hidden, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    for start in range(0, hidden, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < hidden
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for j in range(0, topk):
            p = tl.load(dst_ptr + t * topk + j).to(tl.int64)
            w = tl.load(w_ptr + t * topk + j)
            acc += w * tl.load(y_ptr + p * hidden + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + t * hidden + c, acc.to(out_ptr.dtype.element_ty), mask=mask)


def moe_combine(y, dst_index, weights, out, tokens, topk, hidden):
    _combine_row[(tokens,)](y, dst_index, weights, out, topk, hidden, BLOCK=BLOCK)
    return None

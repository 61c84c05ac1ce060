"""Starting kernel for the MoE router top-k softmax: correct for every shape, deliberately
simple.

One program per token, the row of logits in one block (padded lanes hold -inf). It takes
the row maximum and the softmax denominator, then finds the topk experts one at a time:
each step takes the maximum of what is left and its position (tl.argmax, ties to the lower
index), records them, and knocks that expert out with -inf. The weights are divided by the
softmax denominator, or by their own sum when renormalize is set. Default launch settings.
"""

import triton
import triton.language as tl


@triton.jit
def _topk_softmax_row(logits_ptr, weights_ptr, ids_ptr, experts, topk, renormalize,
                      BLOCK_E: tl.constexpr, BLOCK_K: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    col = tl.arange(0, BLOCK_E)
    x = tl.load(logits_ptr + t * experts + col, mask=col < experts, other=float("-inf"))
    row_max = tl.max(x, axis=0)
    denom = tl.sum(tl.exp(x - row_max), axis=0)          # exp(-inf) = 0 in the padding

    kk = tl.arange(0, BLOCK_K)
    sel_w = tl.zeros([BLOCK_K], dtype=tl.float32)
    sel_i = tl.zeros([BLOCK_K], dtype=tl.int32)
    for j in range(topk):
        best = tl.max(x, axis=0)
        where = tl.argmax(x, axis=0, tie_break_left=True)
        sel_w = tl.where(kk == j, tl.exp(best - row_max), sel_w)
        sel_i = tl.where(kk == j, where.to(tl.int32), sel_i)
        x = tl.where(col == where, float("-inf"), x)

    if renormalize != 0:
        denom = tl.sum(sel_w, axis=0)                    # unselected lanes hold 0
    out = t * topk + kk
    tl.store(weights_ptr + out, sel_w / denom, mask=kk < topk)
    tl.store(ids_ptr + out, sel_i, mask=kk < topk)


def moe_topk_softmax(logits, weights, ids, tokens, experts, topk, renormalize):
    _topk_softmax_row[(tokens,)](logits, weights, ids, experts, topk, renormalize,
                                 BLOCK_E=triton.next_power_of_2(experts),
                                 BLOCK_K=triton.next_power_of_2(topk))
    return None

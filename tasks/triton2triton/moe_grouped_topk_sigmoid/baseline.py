"""Starting kernel for DeepSeek-V3 grouped top-k routing: correct for every shape,
deliberately simple.

One program per token, its row of experts in one block (padded lanes hold -inf), the steps
done one at a time the way the PyTorch code reads:
  1. group scores: for each group, the largest choice score in it, its position, and the
     largest of the others; their sum goes into a small vector of group scores;
  2. group selection: topk_group times, the best remaining group (ties to the lower index) is
     taken and its experts are added to the keep mask;
  3. expert selection: topk times, the best kept expert (tl.argmax, ties to the lower index)
     is recorded with its sigmoid score and knocked out.
The weights are the selected sigmoid scores over their sum, times the scaling factor.
Default launch settings.
"""

import triton
import triton.language as tl


@triton.jit
def _grouped_topk_row(logits_ptr, bias_ptr, weights_ptr, ids_ptr, experts, n_group, topk_group,
                      topk, scale, BLOCK_E: tl.constexpr, BLOCK_G: tl.constexpr,
                      BLOCK_K: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    col = tl.arange(0, BLOCK_E)
    valid = col < experts
    x = tl.load(logits_ptr + t * experts + col, mask=valid, other=0.0)
    b = tl.load(bias_ptr + col, mask=valid, other=0.0)
    s = 1.0 / (1.0 + tl.exp(-x))
    c = tl.where(valid, s + b, float("-inf"))
    gsize = experts // n_group
    grp = col // gsize

    # 1. group scores (sum of the top two choice scores of each group)
    gcol = tl.arange(0, BLOCK_G)
    gscore = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    for g in range(n_group):
        cg = tl.where(grp == g, c, float("-inf"))
        m1 = tl.max(cg, axis=0)
        a1 = tl.argmax(cg, axis=0, tie_break_left=True)
        m2 = tl.max(tl.where(col == a1, float("-inf"), cg), axis=0)
        gscore = tl.where(gcol == g, m1 + m2, gscore)

    # 2. keep the topk_group best groups
    keep = col < 0
    for _ in range(topk_group):
        gbest = tl.argmax(gscore, axis=0, tie_break_left=True)
        keep = keep | (grp == gbest)
        gscore = tl.where(gcol == gbest, float("-inf"), gscore)
    c = tl.where(keep & valid, c, float("-inf"))

    # 3. the topk best kept experts
    kk = tl.arange(0, BLOCK_K)
    sel_w = tl.zeros([BLOCK_K], dtype=tl.float32)
    sel_i = tl.zeros([BLOCK_K], dtype=tl.int32)
    for j in range(topk):
        where = tl.argmax(c, axis=0, tie_break_left=True)
        w = tl.sum(tl.where(col == where, s, 0.0), axis=0)
        sel_w = tl.where(kk == j, w, sel_w)
        sel_i = tl.where(kk == j, where.to(tl.int32), sel_i)
        c = tl.where(col == where, float("-inf"), c)

    denom = tl.sum(sel_w, axis=0)                       # unused lanes hold 0
    out = t * topk + kk
    tl.store(weights_ptr + out, sel_w / denom * scale, mask=kk < topk)
    tl.store(ids_ptr + out, sel_i, mask=kk < topk)


def moe_grouped_topk_sigmoid(logits, bias, weights, ids, tokens, experts, n_group, topk_group,
                             topk, routed_scaling_factor):
    _grouped_topk_row[(tokens,)](logits, bias, weights, ids, experts, n_group, topk_group, topk,
                                 routed_scaling_factor,
                                 BLOCK_E=triton.next_power_of_2(experts),
                                 BLOCK_G=triton.next_power_of_2(n_group),
                                 BLOCK_K=triton.next_power_of_2(topk))
    return None

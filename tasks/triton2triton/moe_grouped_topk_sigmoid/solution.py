"""Reference solution for DeepSeek-V3 grouped top-k routing: correct for every shape.

- Many tokens per program: a [ROWS, BLOCK_G, BLOCK_GS] tile (tokens x groups x experts of a
  group, ~2048 lanes), so every reduction runs along a token's own row, within a warp,
  instead of across the 4 warps of a one-token program.
- One reduction per selection instead of two or three: each choice score and its expert
  index are packed into one int64 key, high 32 bits = the fp32 bits mapped to an
  order-preserving signed int, low 32 bits = 2^31 - 1 - expert (the lower index wins an
  exact tie, as in the starting kernel). The maximum key gives the value and the index at
  once; keys are unique, so knocking out the winner is key == best.
- Group scores for all groups at once: the top two of every group are two reductions over
  the last axis of the tile. Groups are chosen with the same key trick on [ROWS, BLOCK_G].
  When every group is kept (n_group == topk_group, e.g. one group), that step is compiled out.
- topk and topk_group are compile-time constants, so the loops are unrolled. The sigmoid of
  a selected expert is recomputed from its logit (a cached gather) rather than reduced out.
"""

import triton
import triton.language as tl

TILE = 2048
KEY_NONE = tl.constexpr(-9223372036854775807)          # below every real key


@triton.jit
def _ordered(v):
    bits = v.to(tl.int32, bitcast=True)
    return tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)


@triton.jit
def _unordered(hi):
    bits = tl.where(hi < 0, hi ^ 0x7FFFFFFF, hi)
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _grouped_topk_tile(logits_ptr, bias_ptr, weights_ptr, ids_ptr, tokens, experts, n_group,
                       gsize, scale, ROWS: tl.constexpr, BLOCK_G: tl.constexpr,
                       BLOCK_GS: tl.constexpr, TOPKG: tl.constexpr, TOPK: tl.constexpr,
                       BLOCK_K: tl.constexpr, ALL_GROUPS: tl.constexpr):
    t = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)              # [R]
    g = tl.arange(0, BLOCK_G)                                                   # [G]
    j = tl.arange(0, BLOCK_GS)                                                  # [S]
    t_ok = t < tokens
    e = g[:, None] * gsize + j[None, :]                                         # [G, S]
    e_ok = (g < n_group)[:, None] & (j < gsize)[None, :]
    mask = t_ok[:, None, None] & e_ok[None, :, :]
    x = tl.load(logits_ptr + t[:, None, None] * experts + e[None, :, :], mask=mask, other=0.0)
    b = tl.load(bias_ptr + e, mask=e_ok, other=0.0)
    c = 1.0 / (1.0 + tl.exp(-x)) + b[None, :, :]
    low = (2147483647 - e).to(tl.int64)
    key = (_ordered(c).to(tl.int64) << 32) + low[None, :, :]
    key = tl.where(mask, key, KEY_NONE)                                         # [R, G, S]

    if not ALL_GROUPS:
        # group score = sum of the two largest choice scores of the group
        k1 = tl.max(key, axis=2)                                                # [R, G]
        k2 = tl.max(tl.where(key == k1[:, :, None], KEY_NONE, key), axis=2)
        gs = _unordered((k1 >> 32).to(tl.int32)) + _unordered((k2 >> 32).to(tl.int32))
        gkey = (_ordered(gs).to(tl.int64) << 32) + (2147483647 - g).to(tl.int64)[None, :]
        gkey = tl.where((g < n_group)[None, :], gkey, KEY_NONE)
        keep = tl.zeros([ROWS, BLOCK_G], dtype=tl.int1)
        for _ in tl.static_range(TOPKG):
            gbest = tl.max(gkey, axis=1)
            hit = gkey == gbest[:, None]
            keep = keep | hit
            gkey = tl.where(hit, KEY_NONE, gkey)
        key = tl.where(keep[:, :, None], key, KEY_NONE)

    kk = tl.arange(0, BLOCK_K)
    sel_w = tl.zeros([ROWS, BLOCK_K], dtype=tl.float32)
    sel_i = tl.zeros([ROWS, BLOCK_K], dtype=tl.int32)
    for step in tl.static_range(TOPK):
        best = tl.max(tl.max(key, axis=2), axis=1)                              # [R]
        idx = (2147483647 - (best & 0xFFFFFFFF)).to(tl.int32)
        xl = tl.load(logits_ptr + t * experts + idx, mask=t_ok, other=0.0)
        s = 1.0 / (1.0 + tl.exp(-xl))
        sel_w = tl.where(kk[None, :] == step, s[:, None], sel_w)
        sel_i = tl.where(kk[None, :] == step, idx[:, None], sel_i)
        key = tl.where(key == best[:, None, None], KEY_NONE, key)

    denom = tl.sum(sel_w, axis=1)                                               # unused lanes 0
    out = t[:, None] * TOPK + kk[None, :]
    out_ok = t_ok[:, None] & (kk[None, :] < TOPK)
    tl.store(weights_ptr + out, sel_w / denom[:, None] * scale, mask=out_ok)
    tl.store(ids_ptr + out, sel_i, mask=out_ok)


def moe_grouped_topk_sigmoid(logits, bias, weights, ids, tokens, experts, n_group, topk_group,
                             topk, routed_scaling_factor):
    gsize = experts // n_group
    block_g = triton.next_power_of_2(n_group)
    block_gs = triton.next_power_of_2(gsize)
    rows = max(1, TILE // (block_g * block_gs))
    grid = (triton.cdiv(tokens, rows),)
    _grouped_topk_tile[grid](logits, bias, weights, ids, tokens, experts, n_group, gsize,
                             routed_scaling_factor, ROWS=rows, BLOCK_G=block_g,
                             BLOCK_GS=block_gs, TOPKG=topk_group, TOPK=topk,
                             BLOCK_K=triton.next_power_of_2(topk),
                             ALL_GROUPS=(topk_group == n_group), num_warps=4)
    return None

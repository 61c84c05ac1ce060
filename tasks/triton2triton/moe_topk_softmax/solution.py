"""Reference solution for the MoE router top-k softmax: correct for every shape.

- Many tokens per program: a [ROWS, BLOCK_E] tile of logits (ROWS * BLOCK_E ~ 2048), loaded
  with 16-byte vectors; every reduction is along the row, inside one warp for up to 128
  experts (two warps for 256), instead of across the 4 warps of a one-token program.
- One reduction per selected expert instead of two: each logit and its column are packed
  into one int64 key, high 32 bits = the fp32 bits mapped to an order-preserving signed
  int (negative floats have their magnitude bits flipped), low 32 bits = 2^31 - 1 - column.
  The maximum key is the largest logit and, among equal logits, the lowest column (the tie
  rule); the selected logit is decoded from the key's high half, so no second reduction is
  needed for the value either. Keys are unique, so knocking out the winner is key == best.
- topk is a compile-time constant (one variant per topk), so the selection loop is unrolled.
"""

import triton
import triton.language as tl

TILE = 2048                  # logits per program (ROWS * BLOCK_E)


@triton.jit
def _topk_softmax_rows(logits_ptr, weights_ptr, ids_ptr, tokens, experts, renormalize,
                       ROWS: tl.constexpr, BLOCK_E: tl.constexpr, TOPK: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    t = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    col = tl.arange(0, BLOCK_E)
    t_ok = t < tokens
    mask = t_ok[:, None] & (col[None, :] < experts)
    x = tl.load(logits_ptr + t[:, None] * experts + col[None, :], mask=mask, other=float("-inf"))
    x = x + 0.0                                   # -0.0 -> +0.0, so that it ties with +0.0

    row_max = tl.max(x, axis=1)
    denom = tl.sum(tl.exp(x - row_max[:, None]), axis=1)

    # order-preserving int32 image of the floats, then (value, -column) packed into int64
    bits = x.to(tl.int32, bitcast=True)
    bits = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    # low half: 2^31 - 1 - column (the lower column has the larger key)
    key = (bits.to(tl.int64) << 32) + (2147483647 - col[None, :]).to(tl.int64)

    kk = tl.arange(0, BLOCK_K)
    sel_w = tl.zeros([ROWS, BLOCK_K], dtype=tl.float32)
    sel_i = tl.zeros([ROWS, BLOCK_K], dtype=tl.int32)
    for j in tl.static_range(TOPK):
        best = tl.max(key, axis=1)                                      # [ROWS]
        idx = (2147483647 - (best & 0xFFFFFFFF)).to(tl.int32)
        hi = (best >> 32).to(tl.int32)
        val = tl.where(hi < 0, hi ^ 0x7FFFFFFF, hi).to(tl.float32, bitcast=True)
        sel_w = tl.where(kk[None, :] == j, tl.exp(val - row_max)[:, None], sel_w)
        sel_i = tl.where(kk[None, :] == j, idx[:, None], sel_i)
        key = tl.where(key == best[:, None], -9223372036854775807, key)   # below every key

    if renormalize != 0:
        denom = tl.sum(sel_w, axis=1)                                   # unused lanes hold 0
    out = t[:, None] * TOPK + kk[None, :]
    out_ok = t_ok[:, None] & (kk[None, :] < TOPK)
    tl.store(weights_ptr + out, sel_w / denom[:, None], mask=out_ok)
    tl.store(ids_ptr + out, sel_i, mask=out_ok)


def moe_topk_softmax(logits, weights, ids, tokens, experts, topk, renormalize):
    block_e = triton.next_power_of_2(experts)
    rows = max(1, TILE // block_e)
    grid = (triton.cdiv(tokens, rows),)
    _topk_softmax_rows[grid](logits, weights, ids, tokens, experts, renormalize,
                             ROWS=rows, BLOCK_E=block_e, TOPK=topk,
                             BLOCK_K=triton.next_power_of_2(topk), num_warps=4)
    return None

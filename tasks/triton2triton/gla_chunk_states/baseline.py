"""Starting kernel for the chunk-state pass of scalar-gated linear attention, written the way
linear-attention libraries write it: an autotuned kernel over (BK, BV, num_warps) keyed on the
head sizes, a heuristic for whole chunks, @triton.jit helpers for the in-chunk decay and the
tile loads, libdevice exp, and do_not_specialize on the sequence length and chunk count (they
change with every batch).

One program per (block of BK key rows, block of BV value columns, batch x head) carries its
[BK, BV] slice of the state through the chunks in order: it stores the slice, loads the
chunk's g, keys and values, forms the decayed keys and adds their product with the values.
Correct for every shape. The products are computed in full fp32 (keys and values widened,
input_precision="ieee": no tensor cores), and the small tiles mean each key tile is loaded
again by every value block and each value tile by every key block.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice

CHUNK = 64


@triton.jit
def _chunk_decay(g_row, t, t_ok, stride_t, BT: tl.constexpr):
    """The in-chunk cumulative log-decay G of each step and its value at the chunk's end
    (padded steps have g = 0, so G stays flat after the last real step)."""
    gc = tl.load(g_row + t * stride_t, mask=t_ok, other=0.0)
    G = tl.cumsum(gc, axis=0)
    gend = tl.sum(tl.where(tl.arange(0, BT) == BT - 1, G, 0.0), axis=0)
    return G, gend


@triton.jit
def _load_tile(row, t, t_ok, cols, cols_ok, stride_t):
    ptrs = row + t.to(tl.int64)[:, None] * stride_t + cols[None, :]
    return tl.load(ptrs, mask=t_ok[:, None] & cols_ok[None, :], other=0.0).to(tl.float32)


@triton.autotune(
    configs=[
        triton.Config({"BK": 32, "BV": 32}, num_warps=2),
        triton.Config({"BK": 32, "BV": 32}, num_warps=4),
        triton.Config({"BK": 64, "BV": 32}, num_warps=4),
    ],
    key=["dk", "dv"],
)
@triton.heuristics({"EVEN_T": lambda args: args["seq_len"] % CHUNK == 0})
@triton.jit(do_not_specialize=["seq_len", "num_chunks"])
def _chunk_states_kernel(k_ptr, v_ptr, g_ptr, h_ptr, ht_ptr, seq_len, num_chunks, heads, dk, dv,
                         BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, EVEN_T: tl.constexpr):
    i_k = tl.program_id(0)
    i_v = tl.program_id(1)
    i_bh = tl.program_id(2)
    b = i_bh // heads
    hh = i_bh % heads

    rk = i_k * BK + tl.arange(0, BK)
    rv = i_v * BV + tl.arange(0, BV)
    k_ok = rk < dk
    v_ok = rv < dv
    seq0 = b.to(tl.int64) * seq_len
    k_row = k_ptr + (seq0 * heads + hh) * dk
    v_row = v_ptr + (seq0 * heads + hh) * dv
    g_row = g_ptr + seq0 * heads + hh
    hv_off = rk.to(tl.int64)[:, None] * dv + rv[None, :]
    hv_ok = k_ok[:, None] & v_ok[None, :]

    state = tl.zeros([BK, BV], dtype=tl.float32)
    for c in range(0, num_chunks):
        h_base = ((b.to(tl.int64) * num_chunks + c) * heads + hh) * dk * dv
        tl.store(h_ptr + h_base + hv_off, state.to(h_ptr.dtype.element_ty), mask=hv_ok)

        t = c * BT + tl.arange(0, BT)
        if EVEN_T:
            t_ok = t >= 0
        else:
            t_ok = t < seq_len
        G, gend = _chunk_decay(g_row, t, t_ok, heads, BT)
        kc = _load_tile(k_row, t, t_ok, rk, k_ok, heads * dk)       # [BT, BK]
        vc = _load_tile(v_row, t, t_ok, rv, v_ok, heads * dv)       # [BT, BV]
        kd = kc * libdevice.exp(gend - G)[:, None]
        state = state * libdevice.exp(gend) + tl.dot(tl.trans(kd), vc, input_precision="ieee")

    ht_base = i_bh.to(tl.int64) * dk * dv
    tl.store(ht_ptr + ht_base + hv_off, state, mask=hv_ok)


def gla_chunk_states(k, v, g, h, final_state, batch, seq_len, heads, dk, dv):
    num_chunks = triton.cdiv(seq_len, CHUNK)

    def grid(meta):
        return (triton.cdiv(dk, meta["BK"]), triton.cdiv(dv, meta["BV"]), batch * heads)

    _chunk_states_kernel[grid](k, v, g, h, final_state, seq_len, num_chunks, heads, dk, dv, BT=CHUNK)
    return None

"""Reference solution for the paged KV-cache update: correct for every shape.

One pass over the output caches instead of a copy followed by a scatter:
1. An inverse map slot -> token: an int32 array over the pool's slots filled with -1 (a
   torch fill, 4 bytes a slot, under 0.4% of the cache bytes), then one tiny kernel writes
   inv[slot_mapping[t]] = t for the real tokens.
2. One program per (cache block, kv head) builds that head's two tiles of the output
   directly: the [head_dim / 8, block_size, 8] key tile and the [head_dim, block_size] value
   tile, both contiguous in the caches. For each of the block_size slots it reads inv: a
   slot with a new token gathers the token's key / value row (contiguous 16-byte pieces of
   key[t, h, :] and value[t, h, :]), any other slot reads the old tile (masked loads: old
   keys being replaced are never read, old values only in blocks that keep some old slots,
   because a per-slot mask would split the 16-byte loads of the value tile). The tiles are stored once, fully coalesced; the
   transposition the value layout needs ([token, d] -> [d, slot]) happens in registers /
   shared memory, not through 2-byte scattered stores.
Bytes moved: the caches written once, read once minus the replaced slots, the new keys and
values read once; the starting kernel also writes the new slots twice and scatters the values
two bytes at a time.
"""

import torch
import triton
import triton.language as tl

INV_BLOCK = 1024


@triton.jit
def _inverse_slots(slot_ptr, inv_ptr, tokens, BLOCK: tl.constexpr):
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    s = tl.load(slot_ptr + t, mask=t < tokens, other=-1)
    tl.store(inv_ptr + s, t, mask=(t < tokens) & (s >= 0))


@triton.jit
def _update_block(key_ptr, value_ptr, inv_ptr, kc_in, vc_in, kc_out, vc_out, kv_heads, head_dim,
                  BS: tl.constexpr, D8_PAD: tl.constexpr, D_PAD: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    head = b * kv_heads + h                                  # (block, head) tile index
    o = tl.arange(0, BS)
    tok = tl.load(inv_ptr + b * BS + o).to(tl.int64)         # token in each slot, -1 if none
    new = tok >= 0
    row = (tok * kv_heads + h) * head_dim                    # start of key / value [tok, h, :]

    # key tile [head_dim / 8, BS, 8], contiguous at key_cache[b, h]
    d8 = tl.arange(0, D8_PAD)[:, None, None]
    o3 = o[None, :, None]
    x = tl.arange(0, 8)[None, None, :]
    d8_ok = d8 < head_dim // 8
    new3 = new[None, :, None]
    k_off = head * head_dim * BS + (d8 * BS + o3) * 8 + x
    k_old = tl.load(kc_in + k_off, mask=d8_ok & ~new3)
    k_new = tl.load(key_ptr + row[None, :, None] + d8 * 8 + x, mask=d8_ok & new3)
    tl.store(kc_out + k_off, tl.where(new3, k_new, k_old), mask=d8_ok)

    # value tile [head_dim, BS], contiguous at value_cache[b, h]
    d = tl.arange(0, D_PAD)[:, None]
    d_ok = d < head_dim
    new2 = new[None, :]
    v_off = head * head_dim * BS + d * BS + o[None, :]
    # slots are the contiguous dimension of this tile, so a per-slot mask would split the
    # 16-byte loads: read the whole old tile unless every slot of the block is new
    has_old = tl.sum((~new).to(tl.int32), axis=0) > 0
    v_old = tl.load(vc_in + v_off, mask=d_ok & has_old)
    # the new rows are loaded as they lie ([BS, head_dim], 16-byte loads) and transposed
    dr = tl.arange(0, D_PAD)[None, :]
    v_rows = tl.load(value_ptr + row[:, None] + dr, mask=new[:, None] & (dr < head_dim))
    v_new = tl.trans(v_rows)
    tl.store(vc_out + v_off, tl.where(new2, v_new, v_old), mask=d_ok)


def kv_cache_append(key, value, key_cache_in, value_cache_in, slot_mapping, key_cache_out, value_cache_out,
                    tokens, blocks, block_size, kv_heads, head_dim):
    inv = torch.full((blocks * block_size,), -1, dtype=torch.int32, device=key.device)
    _inverse_slots[(triton.cdiv(tokens, INV_BLOCK),)](slot_mapping, inv, tokens, BLOCK=INV_BLOCK)
    d8_pad = triton.next_power_of_2(head_dim // 8)
    _update_block[(blocks, kv_heads)](key, value, inv, key_cache_in, value_cache_in,
                                      key_cache_out, value_cache_out, kv_heads, head_dim,
                                      BS=block_size, D8_PAD=d8_pad, D_PAD=8 * d8_pad, num_warps=4)
    return None

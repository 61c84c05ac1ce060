"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

The solution's fused update with one assumption baked in: block_size == 16 (vLLM's default,
true for every seen shape). The tile height is the constant 16, so with another block size
the slots are mapped to the wrong blocks and positions and part of the caches is never
written (block_size 32) or written in the wrong places (block_size 8). Every access stays
inside the buffers: the slot map and the caches are read and written under masks bounded by
their sizes; the failure is a wrong or unwritten value, never a fault.
"""

import torch
import triton
import triton.language as tl

INV_BLOCK = 1024
BS = 16                      # assumed block_size


@triton.jit
def _inverse_slots(slot_ptr, inv_ptr, tokens, BLOCK: tl.constexpr):
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    s = tl.load(slot_ptr + t, mask=t < tokens, other=-1)
    tl.store(inv_ptr + s, t, mask=(t < tokens) & (s >= 0))


@triton.jit
def _update_block16(key_ptr, value_ptr, inv_ptr, kc_in, vc_in, kc_out, vc_out, kv_heads, head_dim,
                    n_slots, numel, BS: tl.constexpr, D8_PAD: tl.constexpr, D_PAD: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    head = b * kv_heads + h
    o = tl.arange(0, BS)
    tok = tl.load(inv_ptr + b * BS + o, mask=b * BS + o < n_slots, other=-1).to(tl.int64)
    new = tok >= 0
    row = (tok * kv_heads + h) * head_dim

    d8 = tl.arange(0, D8_PAD)[:, None, None]
    o3 = o[None, :, None]
    x = tl.arange(0, 8)[None, None, :]
    new3 = new[None, :, None]
    k_off = head * head_dim * BS + (d8 * BS + o3) * 8 + x
    k_ok = (d8 < head_dim // 8) & (k_off < numel)
    k_old = tl.load(kc_in + k_off, mask=k_ok & ~new3)
    k_new = tl.load(key_ptr + row[None, :, None] + d8 * 8 + x, mask=k_ok & new3)
    tl.store(kc_out + k_off, tl.where(new3, k_new, k_old), mask=k_ok)

    d = tl.arange(0, D_PAD)[:, None]
    new2 = new[None, :]
    v_off = head * head_dim * BS + d * BS + o[None, :]
    v_ok = (d < head_dim) & (v_off < numel)
    has_old = tl.sum((~new).to(tl.int32), axis=0) > 0
    v_old = tl.load(vc_in + v_off, mask=v_ok & has_old)
    dr = tl.arange(0, D_PAD)[None, :]
    v_rows = tl.load(value_ptr + row[:, None] + dr, mask=new[:, None] & (dr < head_dim))
    tl.store(vc_out + v_off, tl.where(new2, tl.trans(v_rows), v_old), mask=v_ok)


def kv_cache_append(key, value, key_cache_in, value_cache_in, slot_mapping, key_cache_out, value_cache_out,
                    tokens, blocks, block_size, kv_heads, head_dim):
    n_slots = blocks * block_size
    inv = torch.full((n_slots,), -1, dtype=torch.int32, device=key.device)
    _inverse_slots[(triton.cdiv(tokens, INV_BLOCK),)](slot_mapping, inv, tokens, BLOCK=INV_BLOCK)
    d8_pad = triton.next_power_of_2(head_dim // 8)
    _update_block16[(blocks, kv_heads)](key, value, inv, key_cache_in, value_cache_in,
                                        key_cache_out, value_cache_out, kv_heads, head_dim,
                                        n_slots, n_slots * kv_heads * head_dim,
                                        BS=BS, D8_PAD=d8_pad, D_PAD=8 * d8_pad, num_warps=4)
    return None

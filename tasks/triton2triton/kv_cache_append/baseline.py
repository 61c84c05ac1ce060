"""Starting kernel for the paged KV-cache update: correct for every shape, deliberately
simple, shaped like vLLM's reshape_and_cache.

1. The output caches start as copies of the input caches (torch copy_, two device copies).
2. One program per token reads its slot (padding tokens, slot < 0, return at once), then
   loops over the kv heads: it loads the head's key and value vectors (head_dim elements,
   one element per thread) and stores them element by element at their places in the paged
   layout: keys in groups of 8 at stride block_size * 8, values at stride block_size.
"""

import triton
import triton.language as tl


@triton.jit
def _reshape_and_cache(key_ptr, value_ptr, slot_ptr, kc_ptr, vc_ptr, kv_heads, head_dim, block_size,
                       BLOCK_D: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_ptr + t).to(tl.int64)
    if slot < 0:
        return
    blk = slot // block_size
    off = slot % block_size
    d = tl.arange(0, BLOCK_D)
    d_ok = d < head_dim
    for h in range(0, kv_heads):
        src = (t * kv_heads + h) * head_dim + d
        k = tl.load(key_ptr + src, mask=d_ok)
        v = tl.load(value_ptr + src, mask=d_ok)
        head = blk * kv_heads + h
        # key_cache[blk, h, d // 8, off, d % 8], value_cache[blk, h, d, off]
        tl.store(kc_ptr + ((head * (head_dim // 8) + d // 8) * block_size + off) * 8 + d % 8, k, mask=d_ok)
        tl.store(vc_ptr + (head * head_dim + d) * block_size + off, v, mask=d_ok)


def kv_cache_append(key, value, key_cache_in, value_cache_in, slot_mapping, key_cache_out, value_cache_out,
                    tokens, blocks, block_size, kv_heads, head_dim):
    key_cache_out.copy_(key_cache_in)
    value_cache_out.copy_(value_cache_in)
    _reshape_and_cache[(tokens,)](key, value, slot_mapping, key_cache_out, value_cache_out,
                                  kv_heads, head_dim, block_size,
                                  BLOCK_D=triton.next_power_of_2(head_dim))
    return None

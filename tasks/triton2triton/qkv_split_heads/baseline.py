"""Starting kernel for the QKV head split: correct for every shape, deliberately simple.

One launch per output (q, then k, then v), one program per (batch, seq, head) that copies
that head's head_dim values from the token's row of qkv to its row of the output, the block
padded to the next power of two of head_dim. Default launch settings.
"""

import triton
import triton.language as tl


@triton.jit
def _copy_head_rows(qkv_ptr, out_ptr, which, seq, heads, head_dim, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)        # = (b * seq + s) * heads + h
    h = pid % heads
    bs = pid // heads
    s = bs % seq
    b = bs // seq
    d = tl.arange(0, BLOCK_D)
    mask = d < head_dim
    src = qkv_ptr + ((bs * 3 + which) * heads + h) * head_dim + d
    dst = out_ptr + ((b * heads + h) * seq + s) * head_dim + d
    tl.store(dst, tl.load(src, mask=mask), mask=mask)


def qkv_split_heads(qkv, q, k, v, batch, seq, heads, head_dim):
    grid = (batch * seq * heads,)
    block_d = triton.next_power_of_2(head_dim)
    for which, out in enumerate((q, k, v)):
        _copy_head_rows[grid](qkv, out, which, seq, heads, head_dim, BLOCK_D=block_d)
    return None

"""Starting kernel for NeoX-style RoPE: correct for every shape, deliberately simple.

One program per token. It loads the token's cos and sin rows once, then walks the heads
one at a time: for each head it loads the two halves of the head vector, rotates them and
stores the two output halves. Every access is masked. Default launch settings.
"""

import triton
import triton.language as tl


@triton.jit
def _rope_token(x_ptr, cos_ptr, sin_ptr, out_ptr, heads, head_dim, half, BLOCK: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    m = c < half
    cs = tl.load(cos_ptr + t * half + c, mask=m, other=0.0)
    sn = tl.load(sin_ptr + t * half + c, mask=m, other=0.0)
    base = t * heads * head_dim
    for h in range(heads):
        src = x_ptr + base + h * head_dim
        dst = out_ptr + base + h * head_dim
        x1 = tl.load(src + c, mask=m, other=0.0).to(tl.float32)
        x2 = tl.load(src + half + c, mask=m, other=0.0).to(tl.float32)
        tl.store(dst + c, (x1 * cs - x2 * sn).to(out_ptr.dtype.element_ty), mask=m)
        tl.store(dst + half + c, (x2 * cs + x1 * sn).to(out_ptr.dtype.element_ty), mask=m)


def rope(x, cos, sin, out, tokens, heads, head_dim):
    half = head_dim // 2
    _rope_token[(tokens,)](x, cos, sin, out, heads, head_dim, half, BLOCK=triton.next_power_of_2(half))
    return None

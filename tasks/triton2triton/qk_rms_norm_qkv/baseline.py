"""Starting kernel for the per-head QK RMSNorm: correct for every shape, deliberately simple.

One program per (token, head), BLOCK_D = the next power of two >= head_dim: it loads the
head's head_dim values from the qkv row, reduces the sum of squares, scales by the weight
and writes the head. Two launches, one over the query heads and one over the key heads.
Default launch settings.
"""

import triton
import triton.language as tl


@triton.jit
def _head_rms_norm(src_ptr, w_ptr, dst_ptr, heads, row_stride, first_head, head_dim, eps,
                   BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)                    # token * heads + head
    t = pid // heads
    h = pid % heads
    d = tl.arange(0, BLOCK_D)
    mask = d < head_dim
    src = src_ptr + t.to(tl.int64) * row_stride + (first_head + h) * head_dim
    x = tl.load(src + d, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / head_dim + eps)
    w = tl.load(w_ptr + d, mask=mask, other=0.0).to(tl.float32)
    y = x * rstd * w
    tl.store(dst_ptr + pid.to(tl.int64) * head_dim + d, y.to(dst_ptr.dtype.element_ty), mask=mask)


def qk_rms_norm(qkv, q_weight, k_weight, q_out, k_out, tokens, q_heads, kv_heads, head_dim, eps):
    row_stride = (q_heads + 2 * kv_heads) * head_dim
    block_d = triton.next_power_of_2(head_dim)
    _head_rms_norm[(tokens * q_heads,)](qkv, q_weight, q_out, q_heads, row_stride, 0, head_dim, eps,
                                        BLOCK_D=block_d)
    _head_rms_norm[(tokens * kv_heads,)](qkv, k_weight, k_out, kv_heads, row_stride, q_heads, head_dim,
                                         eps, BLOCK_D=block_d)
    return None

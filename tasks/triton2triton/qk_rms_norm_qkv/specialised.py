"""Specialised on purpose (a test fixture for the held-out gate): fast on the seen shapes,
wrong on others.

Same tiling as a good solution, but it assumes head_dim is a power of two, so that a head
is exactly one BLOCK_D, and drops the per-column mask. When head_dim is not a power of two
(80 in the held-out split), each head's sum of squares runs into the next head and its
stores spill into the next output head: the results are wrong, quietly. The only masks left
are bounds on whole buffers, which keep every access inside the allocations, so the failure
is a wrong value and never a fault.
"""

import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _norm_tile_pow2(src_ptr, w_ptr, dst_ptr, tile, n_rows, heads, first_head, row_stride,
                    src_size, head_dim, eps, BLOCK_D: tl.constexpr, ROWS: tl.constexpr):
    r = tile.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    t = r // heads
    h = r - t * heads
    src = (t * row_stride + (first_head + h) * head_dim)[:, None] + tl.arange(0, BLOCK_D)[None, :]
    dst = r[:, None] * head_dim + tl.arange(0, BLOCK_D)[None, :]
    d = tl.arange(0, BLOCK_D)
    x = tl.load(src_ptr + src, mask=src < src_size, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + d, mask=d < head_dim, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / head_dim + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(dst_ptr + dst, y.to(dst_ptr.dtype.element_ty), mask=dst < n_rows * head_dim)


@triton.jit
def _qk_norm_pow2(qkv_ptr, qw_ptr, kw_ptr, q_ptr, k_ptr, tokens, q_heads, kv_heads, row_stride,
                  n_q_tiles, head_dim, eps, BLOCK_D: tl.constexpr, ROWS: tl.constexpr):
    pid = tl.program_id(0)
    src_size = tokens.to(tl.int64) * row_stride
    if pid < n_q_tiles:
        _norm_tile_pow2(qkv_ptr, qw_ptr, q_ptr, pid, tokens * q_heads, q_heads, 0, row_stride,
                        src_size, head_dim, eps, BLOCK_D, ROWS)
    else:
        _norm_tile_pow2(qkv_ptr, kw_ptr, k_ptr, pid - n_q_tiles, tokens * kv_heads, kv_heads, q_heads,
                        row_stride, src_size, head_dim, eps, BLOCK_D, ROWS)


def qk_rms_norm(qkv, q_weight, k_weight, q_out, k_out, tokens, q_heads, kv_heads, head_dim, eps):
    row_stride = (q_heads + 2 * kv_heads) * head_dim
    block_d = triton.next_power_of_2(head_dim)          # "== head_dim" on every seen shape
    rows = max(1, TILE // block_d)
    n_q_tiles = triton.cdiv(tokens * q_heads, rows)
    n_k_tiles = triton.cdiv(tokens * kv_heads, rows)
    num_warps = max(1, min(8, rows * block_d // 512))
    _qk_norm_pow2[(n_q_tiles + n_k_tiles,)](qkv, q_weight, k_weight, q_out, k_out, tokens, q_heads,
                                           kv_heads, row_stride, n_q_tiles, head_dim, eps,
                                           BLOCK_D=block_d, ROWS=rows, num_warps=num_warps)
    return None

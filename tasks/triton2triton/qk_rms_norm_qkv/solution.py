"""Reference solution for the per-head QK RMSNorm: one launch, [ROWS, head_dim] tiles.

- One launch covers both outputs: the first programs take tiles of query heads, the rest
  tiles of key heads (a scalar branch on the program id).
- A program normalises ROWS heads at once (ROWS * BLOCK_D = 4096 values) instead of one head
  of 128-256 values: a (token, head) pair is one row of the tile, the row's source offset is
  token * row_stride + (first_head + head) * head_dim, so every row is a contiguous,
  16-byte-aligned run of head_dim values (head_dim is a compile-time constant, which lets the
  compiler prove the alignment and issue 16-byte loads and stores).
- The weights are loaded once per program; the sum of squares reduces along the rows.
"""

import triton
import triton.language as tl

TILE = 4096


@triton.jit
def _norm_tile(src_ptr, w_ptr, dst_ptr, tile, n_rows, heads, first_head, row_stride, eps,
               HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, ROWS: tl.constexpr):
    r = tile.to(tl.int64) * ROWS + tl.arange(0, ROWS)            # (token, head) rows
    t = r // heads
    h = r - t * heads
    src_row = t * row_stride + (first_head + h) * HEAD_DIM
    d = tl.arange(0, BLOCK_D)
    d_ok = d < HEAD_DIM
    mask = (r < n_rows)[:, None] & d_ok[None, :]
    x = tl.load(src_ptr + src_row[:, None] + d[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + d, mask=d_ok, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / HEAD_DIM + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(dst_ptr + r[:, None] * HEAD_DIM + d[None, :], y.to(dst_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _qk_norm(qkv_ptr, qw_ptr, kw_ptr, q_ptr, k_ptr, tokens, q_heads, kv_heads, row_stride,
             n_q_tiles, eps, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, ROWS: tl.constexpr):
    pid = tl.program_id(0)
    if pid < n_q_tiles:
        _norm_tile(qkv_ptr, qw_ptr, q_ptr, pid, tokens * q_heads, q_heads, 0, row_stride, eps,
                   HEAD_DIM, BLOCK_D, ROWS)
    else:
        _norm_tile(qkv_ptr, kw_ptr, k_ptr, pid - n_q_tiles, tokens * kv_heads, kv_heads, q_heads,
                   row_stride, eps, HEAD_DIM, BLOCK_D, ROWS)


def qk_rms_norm(qkv, q_weight, k_weight, q_out, k_out, tokens, q_heads, kv_heads, head_dim, eps):
    row_stride = (q_heads + 2 * kv_heads) * head_dim
    block_d = triton.next_power_of_2(head_dim)
    rows = max(1, TILE // block_d)
    n_q_tiles = triton.cdiv(tokens * q_heads, rows)
    n_k_tiles = triton.cdiv(tokens * kv_heads, rows)
    num_warps = max(1, min(8, rows * block_d // 512))
    _qk_norm[(n_q_tiles + n_k_tiles,)](qkv, q_weight, k_weight, q_out, k_out, tokens, q_heads,
                                      kv_heads, row_stride, n_q_tiles, eps, HEAD_DIM=head_dim,
                                      BLOCK_D=block_d, ROWS=rows, num_warps=num_warps)
    return None

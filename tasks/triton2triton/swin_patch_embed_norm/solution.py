"""Reference solution for the Swin patch embedding + LayerNorm: one fused kernel.

A program takes BLOCK_M consecutive tokens (patches in row-major order, across images) and
does the whole block in registers:
- it gathers the [BLOCK_M, 48] patch matrix straight from the NCHW image (the address of
  pixel (c, i, j) of a patch is the patch's corner plus a per-column offset
  (c * img_h + i) * img_w + j, so there is no im2col buffer), padded to 64 columns by masks;
- projects it with one tensor-core product against the [64, BLOCK_E] transposed weight
  (loaded once per program) and adds the bias;
- LayerNorms each token over its embed values (mean, then the centred variance, in fp32)
  and stores the [BLOCK_M, embed] tile of y, contiguous.
The image is read once and y written once; the three-kernel start writes and re-reads both
the patch matrix and the projected tokens, through hundreds of thousands of tiny programs.
"""

import triton
import triton.language as tl

PATCH_K = 48


@triton.jit
def _patch_embed_ln(x_ptr, pw_ptr, pb_ptr, nw_ptr, nb_ptr, y_ptr, tokens, img_h, img_w, grid_h, grid_w,
                    embed, eps, K: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_E: tl.constexpr):
    tok = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    t_ok = tok < tokens
    q = tok % grid_w
    pq = tok // grid_w
    p = pq % grid_h
    b = pq // grid_h
    corner = (b * 3 * img_h + 4 * p) * img_w + 4 * q                      # pixel (0, 0, 0) of the patch
    kk = tl.arange(0, BLOCK_K)
    k_ok = kk < K
    k_off = ((kk // 16) * img_h + (kk // 4) % 4) * img_w + kk % 4          # (c * img_h + i) * img_w + j
    a = tl.load(x_ptr + corner[:, None] + k_off[None, :], mask=t_ok[:, None] & k_ok[None, :], other=0.0)

    e = tl.arange(0, BLOCK_E)
    e_ok = e < embed
    wt = tl.load(pw_ptr + e[None, :] * K + kk[:, None], mask=k_ok[:, None] & e_ok[None, :], other=0.0)
    t = tl.dot(a, wt)                                                      # [BLOCK_M, BLOCK_E] fp32
    t += tl.load(pb_ptr + e, mask=e_ok, other=0.0).to(tl.float32)[None, :]

    mean = tl.sum(tl.where(e_ok[None, :], t, 0.0), axis=1) / embed
    d = tl.where(e_ok[None, :], t - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / embed + eps)
    nw = tl.load(nw_ptr + e, mask=e_ok, other=0.0).to(tl.float32)
    nb = tl.load(nb_ptr + e, mask=e_ok, other=0.0).to(tl.float32)
    y = d * rstd[:, None] * nw[None, :] + nb[None, :]
    tl.store(y_ptr + tok[:, None] * embed + e[None, :], y.to(y_ptr.dtype.element_ty),
             mask=t_ok[:, None] & e_ok[None, :])


def patch_embed_norm(x, proj_weight, proj_bias, norm_weight, norm_bias, y, batch, img_h, img_w, embed,
                     grid_h, grid_w, eps):
    tokens = batch * grid_h * grid_w
    block_e = triton.next_power_of_2(embed)
    block_m = max(32, min(128, 8192 // block_e))
    _patch_embed_ln[(triton.cdiv(tokens, block_m),)](x, proj_weight, proj_bias, norm_weight, norm_bias, y,
                                                     tokens, img_h, img_w, grid_h, grid_w, embed, eps,
                                                     K=PATCH_K, BLOCK_K=64, BLOCK_M=block_m, BLOCK_E=block_e,
                                                     num_warps=4)
    return None

"""Starting kernel for the Swin patch embedding + LayerNorm: correct for every shape, simple.

Three kernels, the way the block is built from parts:
1. im2col, one program per patch: gathers its 3 x 4 x 4 = 48 pixels (channel, row, column
   order, the layout of the convolution weight) into a [tokens, 48] fp16 scratch matrix.
2. The projection t = patches @ proj_weight^T + proj_bias with tl.dot: one program per
   32 x 32 tile of t (the 48 inputs padded to 64 with masked loads), 4 warps, 2 stages; t is
   written in fp16 to a second scratch matrix.
3. LayerNorm, one program per token over its embed values, writing y.
The scratch buffers come from PyTorch's caching allocator.
"""

import torch
import triton
import triton.language as tl

PATCH_K = 48             # 3 channels x 4 x 4 pixels
BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32


@triton.jit
def _im2col_patch(x_ptr, patches_ptr, img_h, img_w, grid_h, grid_w, K: tl.constexpr, BLOCK: tl.constexpr):
    tok = tl.program_id(0)                       # (b * grid_h + p) * grid_w + q
    q = tok % grid_w
    p = (tok // grid_w) % grid_h
    b = tok // (grid_w * grid_h)
    kk = tl.arange(0, BLOCK)
    ok = kk < K
    c = kk // 16
    i = (kk // 4) % 4
    j = kk % 4
    src = ((b.to(tl.int64) * 3 + c) * img_h + (4 * p + i)) * img_w + (4 * q + j)
    v = tl.load(x_ptr + src, mask=ok, other=0.0)
    tl.store(patches_ptr + tok.to(tl.int64) * K + kk, v, mask=ok)


@triton.jit
def _linear_bias(a_ptr, w_ptr, bias_ptr, c_ptr, M, N, K,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # c[M, N] = a[M, K] @ w[N, K]^T + bias[N]
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_n
    pid_n = pid % num_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_ptr + rm.to(tl.int64)[:, None] * K + kk[None, :],
                    mask=(rm < M)[:, None] & (kk < K)[None, :], other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + kk[:, None], mask=(rn < N)[None, :] & (kk < K)[:, None], other=0.0)
        acc = tl.dot(a, w, acc)
    acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    tl.store(c_ptr + rm.to(tl.int64)[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm < M)[:, None] & (rn < N)[None, :])


@triton.jit
def _layer_norm_row(t_ptr, w_ptr, b_ptr, y_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    mask = c < n
    t = tl.load(t_ptr + row * n + c, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(t, axis=0) / n
    d = tl.where(mask, t - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
    w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + c, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n + c, (d * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


def patch_embed_norm(x, proj_weight, proj_bias, norm_weight, norm_bias, y, batch, img_h, img_w, embed,
                     grid_h, grid_w, eps):
    tokens = batch * grid_h * grid_w
    patches = torch.empty((tokens, PATCH_K), dtype=x.dtype, device=x.device)
    t = torch.empty((tokens, embed), dtype=x.dtype, device=x.device)
    _im2col_patch[(tokens,)](x, patches, img_h, img_w, grid_h, grid_w, K=PATCH_K, BLOCK=64)
    grid = (triton.cdiv(tokens, BLOCK_M) * triton.cdiv(embed, BLOCK_N),)
    _linear_bias[grid](patches, proj_weight, proj_bias, t, tokens, embed, PATCH_K,
                       BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=4, num_stages=2)
    _layer_norm_row[(tokens,)](t, norm_weight, norm_bias, y, embed, eps, BLOCK=triton.next_power_of_2(embed))
    return None

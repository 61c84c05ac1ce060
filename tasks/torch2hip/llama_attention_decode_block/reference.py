import torch
import torch.nn.functional as F


def reference(x, norm_w, w_qkv, w_o, k_cache, v_cache, batch, hidden, heads, kv_heads, head_dim,
              ctx, rope_theta, eps):
    """One decode step of a Llama attention block (HF LlamaRMSNorm + LlamaAttention, GQA,
    no residual) for `batch` sequences that each hold `ctx` cached tokens; the new token sits
    at position ctx:

        xn = (x * rsqrt(mean(x^2, -1) + eps)).to(x.dtype) * norm_w
        q, k, v = split(xn @ w_qkv^T)                     heads, kv_heads, kv_heads x head_dim
        q, k = rope_neox(q, ctx), rope_neox(k, ctx)       rotate-half RoPE, theta rope_theta
        K = [k_cache | k], V = [v_cache | v]              ctx + 1 keys per kv head
        o = softmax(q K^T / sqrt(head_dim)) V             query head h reads kv head h // (heads // kv_heads)
        y = o @ w_o^T

    Called with the declared fp16 tensors this is the eager baseline; with fp32 upcasts it
    is the expected output."""
    dt = x.dtype
    group = heads // kv_heads
    xf = x.float()
    var = xf.pow(2).mean(-1, keepdim=True)
    xn = (xf * torch.rsqrt(var + eps)).to(dt) * norm_w
    qkv = F.linear(xn, w_qkv)
    q = qkv[:, : heads * head_dim].view(batch, heads, head_dim)
    k = qkv[:, heads * head_dim : (heads + kv_heads) * head_dim].view(batch, kv_heads, head_dim)
    v = qkv[:, (heads + kv_heads) * head_dim :].view(batch, kv_heads, head_dim)

    half = head_dim // 2
    inv_freq = 1.0 / (rope_theta ** (torch.arange(0, half, device=x.device, dtype=torch.float32) * 2.0 / head_dim))
    ang = float(ctx) * inv_freq
    cos = torch.cat([ang.cos(), ang.cos()]).to(dt)
    sin = torch.cat([ang.sin(), ang.sin()]).to(dt)

    def rope(t):
        rot = torch.cat([-t[..., half:], t[..., :half]], dim=-1)
        return t * cos + rot * sin

    q = rope(q)
    k = rope(k)
    keys = torch.cat([k_cache, k.unsqueeze(2)], dim=2)      # [batch, kv_heads, ctx + 1, head_dim]
    vals = torch.cat([v_cache, v.unsqueeze(2)], dim=2)
    qg = q.view(batch, kv_heads, group, head_dim)
    scores = torch.matmul(qg, keys.transpose(-1, -2)).float() * (1.0 / head_dim ** 0.5)
    p = torch.softmax(scores, dim=-1).to(dt)                # [batch, kv_heads, group, ctx + 1]
    o = torch.matmul(p, vals).reshape(batch, heads * head_dim)
    return F.linear(o, w_o)

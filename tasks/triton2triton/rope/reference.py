import torch


def reference(x, cos, sin, tokens, heads, head_dim):
    """NeoX-style rotary embedding, computed in the wider of the dtypes it is given (fp16
    is upcast to fp32 first); the result has x's dtype."""
    xf = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    dt = torch.promote_types(xf.dtype, cos.dtype)
    xf = xf.to(dt)
    c = cos.to(dt)[:, None, :]                     # [tokens, 1, half]
    s = sin.to(dt)[:, None, :]
    half = head_dim // 2
    x1, x2 = xf[..., :half], xf[..., half:]
    out = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)
    return out.to(x.dtype)

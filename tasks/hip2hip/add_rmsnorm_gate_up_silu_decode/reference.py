import torch
import torch.nn.functional as F


def reference(x, residual, norm_w, w_gate_up, batch, hidden, inter, eps):
    """First half of a Llama MLP at decode, vLLM style (fused add + RMSNorm, merged
    gate_up_proj, SiluAndMul):

        r   = x + residual                                  -> residual_out
        xn  = r * rsqrt(mean(r^2, -1) + eps) * norm_w
        gu  = xn @ w_gate_up^T                              [batch, 2 * inter]: gate | up
        act = silu(gu[:, :inter]) * gu[:, inter:]           -> act

    Returns (act, residual_out) in signature order."""
    r = x + residual
    xn = r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + eps) * norm_w
    gu = F.linear(xn, w_gate_up)
    act = F.silu(gu[:, :inter]) * gu[:, inter:]
    return act, r

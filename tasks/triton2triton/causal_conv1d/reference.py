import torch


def reference(x, weight, bias, batch, seqlen, dim, width, silu):
    """Depthwise causal convolution along the time axis (zero history) of the channel-last
    [batch, seqlen, dim] input, plus bias, then SiLU if silu == 1; computed in the dtype it is
    given (the harness upcasts fp16 to fp32). Returns [batch, seqlen, dim]."""
    z = torch.nn.functional.conv1d(x.transpose(1, 2), weight.unsqueeze(1), bias, padding=width - 1,
                                   groups=dim)[..., :seqlen]
    z = torch.nn.functional.silu(z) if silu else z
    return z.transpose(1, 2).contiguous()

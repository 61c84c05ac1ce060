import torch


def reference(logits, tokens, experts, topk, renormalize):
    """Top-k of the router softmax, in the dtype it is given (fp32 is upcast to fp64 by the
    harness). Selection is on the logits (softmax is monotonic), descending, ties to the lower
    expert index (a stable sort). Returns (weights [tokens, topk], ids [tokens, topk] int32)."""
    srt = torch.sort(logits, dim=-1, descending=True, stable=True)
    top = srt.values[:, :topk]
    ids = srt.indices[:, :topk]
    top_max = top[:, :1]                               # the row maximum
    num = torch.exp(top - top_max)
    if renormalize:
        den = num.sum(dim=-1, keepdim=True)
    else:
        den = torch.exp(logits - top_max).sum(dim=-1, keepdim=True)
    return num / den, ids.to(torch.int32)

import torch


def reference(logits, tokens, experts, topk):
    """Top-k of the router logits with renormalised softmax weights, in the dtype it is given
    (the harness passes the fp16 logits upcast to float32, exactly). Ranking: logit
    descending, ties to the lower expert index (a stable sort). Returns (weights [tokens,
    topk], ids [tokens, topk] int32)."""
    assert logits.shape == (tokens, experts)
    srt = torch.sort(logits, dim=-1, descending=True, stable=True)
    top = srt.values[:, :topk]
    ids = srt.indices[:, :topk]
    e = torch.exp(top - top[:, :1])
    return e / e.sum(dim=-1, keepdim=True), ids.to(torch.int32)

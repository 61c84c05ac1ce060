import math

import torch


def reference(ids, tokens, vocab):
    """Exact count of every id in [0, vocab) (torch.bincount with minlength=vocab; every id
    is below vocab, so the result has exactly vocab entries)."""
    return torch.bincount(ids, minlength=vocab)


def make_inputs(config, generator, device):
    """Zipf-distributed token ids: floor((vocab + 1) ** u) - 1 with u uniform in [0, 1), so
    P(v) = log((v + 2) / (v + 1)) / log(vocab + 1) ~ 1 / (v + 1.5)."""
    tokens, vocab = int(config["tokens"]), int(config["vocab"])
    u = torch.rand(tokens, generator=generator, device=device, dtype=torch.float64)
    ids = torch.floor(torch.exp(u * math.log(vocab + 1))).to(torch.int64) - 1
    return {"ids": ids.clamp_(0, vocab - 1)}

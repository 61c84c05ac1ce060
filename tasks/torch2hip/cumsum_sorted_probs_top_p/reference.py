import torch


def reference(probs, rows, vocab):
    """Inclusive prefix sum along the vocabulary (the CDF of each sorted probability row)."""
    return torch.cumsum(probs, dim=-1)


def make_inputs(config, generator, device):
    """Sorted next-token distributions: softmax of normal logits (std 2) per row, sorted in
    decreasing order (what a top-p sampler accumulates)."""
    rows, vocab = int(config["rows"]), int(config["vocab"])
    logits = torch.randn(rows, vocab, generator=generator, device=device).mul_(2.0)
    probs = torch.softmax(logits, dim=-1)
    probs, _ = torch.sort(probs, dim=-1, descending=True)
    return {"probs": probs.contiguous()}

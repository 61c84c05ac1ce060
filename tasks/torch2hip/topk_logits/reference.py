import torch


def reference(logits, rows, vocab, k):
    """The k largest logits of each row and their indices, largest first (torch.topk)."""
    values, indices = torch.topk(logits, k, dim=-1, largest=True, sorted=True)
    return values, indices


def make_inputs(config, generator, device):
    """Normal logits (std 2), strictly distinct within each row: each row is sorted, the
    value of rank i is raised by i * 2**-18 (>= 4 ulp between neighbours for |v| < 16, so no
    two round to the same fp32), and the row is shuffled with a random permutation."""
    rows, vocab = int(config["rows"]), int(config["vocab"])
    v = torch.randn(rows, vocab, generator=generator, device=device).mul_(2.0)
    v, _ = torch.sort(v, dim=-1)
    v.add_(torch.arange(vocab, device=device, dtype=torch.float32).mul_(2.0 ** -18))
    perm = torch.argsort(torch.rand(rows, vocab, generator=generator, device=device), dim=-1)
    return {"logits": torch.gather(v, -1, perm).contiguous()}

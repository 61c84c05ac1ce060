import torch


def reference(scores, rows, cols):
    """Each row sorted in decreasing order; equal scores keep their column order."""
    values, indices = torch.sort(scores, dim=-1, descending=True, stable=True)
    return values, indices


def make_inputs(config, generator, device):
    """Normal scores (std 2) rounded to fp16 precision and stored as fp32: frequent ties
    within a row (nearly every row of 256 holds some), which the stable
    order resolves."""
    rows, cols = int(config["rows"]), int(config["cols"])
    s = torch.randn(rows, cols, generator=generator, device=device).mul_(2.0)
    return {"scores": s.half().float().contiguous()}

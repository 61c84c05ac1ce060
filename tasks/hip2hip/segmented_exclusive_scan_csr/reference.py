import torch


def reference(x, ptr, n, segments):
    """Exclusive prefix sum restarted at every segment start ptr[s] (int64 arithmetic)."""
    assert x.shape == (n,) and ptr.shape == (segments + 1,)
    xl = x.to(torch.int64)
    excl = torch.cumsum(xl, dim=0) - xl                      # global exclusive scan
    lengths = ptr[1:] - ptr[:-1]
    seg_id = torch.repeat_interleave(torch.arange(segments, device=x.device), lengths)
    out = excl - excl[ptr[:-1]][seg_id]
    return out.to(torch.int32)


def make_inputs(config, generator, device):
    """ptr: segments - 1 random distinct cut points in [1, n), so every segment is non-empty."""
    n, g = int(config["n"]), int(config["segments"])
    cuts = torch.randperm(n - 1, generator=generator, device=device)[: g - 1] + 1
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64, device=device), torch.sort(cuts).values.to(torch.int64),
                     torch.full((1,), n, dtype=torch.int64, device=device)])
    return {"ptr": ptr.contiguous()}

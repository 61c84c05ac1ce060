import torch


def reference(x, ptr, num_nodes, segments, features):
    """Segmented max over CSR row segments and the first row of each maximum, in the dtype
    it is given (the harness passes float64 for this fp32 task; values are exact either
    way). Returns (out, arg)."""
    assert x.shape == (num_nodes, features) and ptr.shape == (segments + 1,)
    lengths = ptr[1:] - ptr[:-1]
    seg = torch.repeat_interleave(torch.arange(segments, device=x.device), lengths)
    out = torch.full((segments, features), float("-inf"), dtype=x.dtype, device=x.device)
    out = out.scatter_reduce(0, seg[:, None].expand(num_nodes, features), x, "amax", include_self=True)
    rows = torch.arange(num_nodes, device=x.device)[:, None]
    first = torch.where(x == out[seg], rows, torch.full_like(rows, num_nodes))
    arg = torch.full((segments, features), num_nodes, dtype=torch.int64, device=x.device)
    arg = arg.scatter_reduce(0, seg[:, None].expand(num_nodes, features), first, "amin", include_self=True)
    return out, arg


def make_inputs(config, generator, device):
    """x = ReLU(N(0, 1)); ptr: random distinct cut points, so every segment is non-empty."""
    n, g, f = int(config["num_nodes"]), int(config["segments"]), int(config["features"])
    x = torch.relu(torch.randn(n, f, generator=generator, device=device))
    cuts = torch.randperm(n - 1, generator=generator, device=device)[: g - 1] + 1
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64, device=device), torch.sort(cuts).values.to(torch.int64),
                     torch.full((1,), n, dtype=torch.int64, device=device)])
    return {"x": x.contiguous(), "ptr": ptr.contiguous()}

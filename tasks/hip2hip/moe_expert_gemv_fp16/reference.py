import math

import torch


def reference(x, expert_ids, w, rows, experts, n, k):
    """y[r] = x[r] @ w[expert_ids[r]]^T, one expert at a time (never materialising a
    weight per row), in the dtype it is given (float32 for this fp16 task)."""
    assert x.shape == (rows, k) and expert_ids.shape == (rows,) and w.shape == (experts, n, k)
    y = torch.empty((rows, n), dtype=x.dtype, device=x.device)
    ids = expert_ids.long()
    for e in torch.unique(ids).tolist():
        sel = (ids == e).nonzero(as_tuple=True)[0]
        y[sel] = x[sel] @ w[e].t()
    return y


def make_inputs(config, generator, device):
    """expert_ids: the config fixes the loads: as many experts as uniform routing touches on
    average, round(experts * (1 - (1 - 1 / experts) ** rows)), each with one row plus a
    uniform share of the other rows (drawn from a generator seeded by the config); the
    seed draws which experts get which loads and which rows go to each."""
    rows, experts = int(config["rows"]), int(config["experts"])
    touched = math.floor(experts * (1 - (1 - 1 / experts) ** rows) + 0.5)
    fixed = torch.Generator().manual_seed(0x5EED + 1_000_003 * rows + experts)
    counts = 1 + torch.bincount(torch.randint(0, touched, (rows - touched,), generator=fixed), minlength=touched)
    chosen = torch.randperm(experts, generator=generator, device=device)[:touched]
    ids = torch.repeat_interleave(chosen, counts.to(device))[torch.randperm(rows, generator=generator, device=device)]
    return {"expert_ids": ids.to(torch.int32)}

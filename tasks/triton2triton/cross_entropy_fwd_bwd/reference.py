import math

import torch


def reference(logits, target, rows, vocab, ignore_index, loss_scale):
    """Per-row cross-entropy (0 for ignored rows) and the gradient of loss_scale * (mean loss
    over the valid rows) with respect to the logits, a group of rows at a time to bound the
    memory of the intermediates. The harness upcasts the fp16 logits to fp32; the row
    statistics are computed in float64 here (loss = lse - logit_target cancels for confident
    rows, and an fp32 log-softmax can be off by ~1e-4 there), the results returned in the
    logits' dtype. Returns (loss [rows], dlogits [rows, vocab])."""
    assert logits.shape == (rows, vocab) and target.shape == (rows,)
    valid = target != ignore_index
    n_valid = int(valid.sum())
    coef = loss_scale / max(n_valid, 1)                    # no valid row: every output is 0
    loss = torch.empty((rows,), dtype=logits.dtype, device=logits.device)
    dlogits = torch.empty_like(logits)
    step = max(1, 2**25 // vocab)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        ok = valid[r0:r1]
        t = torch.where(ok, target[r0:r1], 0)[:, None]
        x = logits[r0:r1].to(torch.float64)
        lse = torch.logsumexp(x, dim=-1, keepdim=True)
        loss[r0:r1] = torch.where(ok, (lse - x.gather(1, t))[:, 0], 0.0).to(loss.dtype)
        grad = torch.exp_(x.sub_(lse))
        grad.scatter_add_(1, t, torch.full(t.shape, -1.0, dtype=grad.dtype, device=grad.device))
        grad.mul_(coef)
        grad[~ok] = 0.0
        dlogits[r0:r1] = grad.to(dlogits.dtype)
    return loss, dlogits


def make_inputs(config, generator, device):
    """Logits N(0, 2^2), except each row's target logit, uniform in [2, log(vocab) + 6] (the
    other logits' log-sum-exp is ~log(vocab) + 2, so the target's probability ranges from
    ~1e-5 to ~0.98 whatever the vocabulary). Targets uniform over the vocabulary; the last
    rows // 16 rows and 8% of the others but row 0 (the count fixed by the config, which rows
    drawn) are ignore_index."""
    rows, vocab = int(config["rows"]), int(config["vocab"])
    ignore_index = int(config["ignore_index"])
    logits = torch.empty((rows, vocab), dtype=torch.float16, device=device)
    step = max(1, 2**24 // vocab)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        logits[r0:r1] = 2.0 * torch.randn((r1 - r0, vocab), generator=generator, device=device)
    t = torch.randint(0, vocab, (rows,), generator=generator, device=device, dtype=torch.int64)
    z_hi = math.log(vocab) + 6.0
    z_t = 2.0 + (z_hi - 2.0) * torch.rand((rows,), generator=generator, device=device)
    logits[torch.arange(rows, device=device), t] = z_t.to(torch.float16)
    middle = rows - rows // 16 - 1                                  # rows 1 .. rows - rows // 16 - 1
    ignored = torch.zeros((rows,), dtype=torch.bool, device=device)
    ignored[1 + torch.randperm(middle, generator=generator, device=device)[:int(0.08 * middle + 0.5)]] = True
    ignored[rows - rows // 16:] = True
    return {"logits": logits, "target": torch.where(ignored, torch.full_like(t, ignore_index), t)}

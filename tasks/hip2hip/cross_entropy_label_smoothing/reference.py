import torch


def reference(x, target, rows, vocab, ignore_index, label_smoothing):
    """Per-row cross-entropy with label smoothing and ignore_index, in the dtype it is
    given (the harness passes float32 for the fp16 logits). Rows are processed in chunks
    to bound the reference's temporary memory."""
    assert x.shape == (rows, vocab) and target.shape == (rows,)
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    for r0 in range(0, rows, 256):
        r1 = min(rows, r0 + 256)
        out[r0:r1] = torch.nn.functional.cross_entropy(x[r0:r1], target[r0:r1].long(), ignore_index=ignore_index,
                                                       label_smoothing=label_smoothing, reduction="none")
    return out


def make_inputs(config, generator, device):
    """Logits per row: shift + scale * N(0, 1); targets uniform, round(15%) of the rows (the
    count fixed by the config, the rows drawn) ignore_index (-100)."""
    rows, vocab = int(config["rows"]), int(config["vocab"])
    z = torch.randn(rows, vocab, generator=generator, device=device)
    shift = 3.0 * torch.randn(rows, 1, generator=generator, device=device)
    scale = 0.5 + 2.5 * torch.rand(rows, 1, generator=generator, device=device)
    x = (shift + scale * z).to(torch.float16)
    target = torch.randint(0, vocab, (rows,), generator=generator, device=device, dtype=torch.int64)
    ignored = torch.randperm(rows, generator=generator, device=device)[: (15 * rows + 50) // 100]
    target[ignored] = -100
    target = target.to(torch.int32)
    return {"x": x, "target": target}

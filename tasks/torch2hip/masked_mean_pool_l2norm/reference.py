import torch
import torch.nn.functional as F


def reference(hidden, attention_mask, batch, seq, dim):
    """Masked mean pooling over the sequence, then L2 normalisation (the E5 / BGE / GTE
    `average_pool` + F.normalize recipe), with the hidden states upcast to fp32 first.

    Called with the declared fp16 hidden states this is the eager baseline (an fp32 copy of
    the hidden states, a masked_fill into another, the sum, the token count, the division and
    F.normalize); the expected output is the same computation on the fp32 upcast."""
    h = hidden.float() if hidden.dtype == torch.float16 else hidden
    h = h.masked_fill(~attention_mask[..., None].bool(), 0.0)
    emb = h.sum(dim=1) / attention_mask.sum(dim=1)[..., None]
    return F.normalize(emb, p=2, dim=1)


def make_inputs(config, generator, device):
    """A padded batch: the sequence lengths are spread evenly over [1, seq] (the quantiles of a
    uniform draw, fixed by the config: the same number of tokens for every seed), and the seed
    deals them out to the rows; about half of the rows are padded on the right (encoder
    tokenizers), half on the left (decoder-based embedding models): a kernel must read the
    mask, not assume a prefix. int64 0/1 as tokenizers return."""
    batch, seq = int(config["batch"]), int(config["seq"])
    lengths = 1 + (torch.arange(batch, device=device) * 2 + 1) * seq // (2 * batch)
    lengths = lengths[torch.randperm(batch, generator=generator, device=device)].view(batch, 1)
    left = torch.rand(batch, 1, generator=generator, device=device) < 0.5
    pos = torch.arange(seq, device=device)[None, :]
    right_mask = pos < lengths
    left_mask = pos >= seq - lengths
    mask = torch.where(left, left_mask, right_mask).to(torch.int64)
    return {"attention_mask": mask}

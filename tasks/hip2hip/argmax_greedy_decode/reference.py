import torch


def reference(logits, batch, vocab):
    """Index of the largest logit of every row (the first one on ties), as int64."""
    assert logits.shape == (batch, vocab)
    return torch.argmax(logits, dim=-1).to(torch.int64)

import torch.nn.functional as F


def reference(logits, targets, rows, vocab):
    """Unreduced cross-entropy of each row of logits against its target class, computed in
    the dtype it is given (the harness passes fp64 logits for the expected output; the eager
    baseline runs at the declared fp32). Returns [rows] in logits' dtype."""
    return F.cross_entropy(logits, targets, reduction="none")

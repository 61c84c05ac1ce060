import torch


def reference(dy, tokens, features):
    """Column sums of dy, computed in the dtype it is given (the harness upcasts the fp16
    gradient to fp32)."""
    assert dy.shape == (tokens, features)
    return dy.sum(dim=0)

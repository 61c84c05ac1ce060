import torch


def reference(a, p, batch, n, m, dim):
    """Euclidean distance between every point of a and every point of p, per batch element
    (torch.cdist, p=2). Called with the declared fp32 tensors this is the eager baseline (its
    matrix-product route); called with the fp64 upcasts it gives the expected output."""
    return torch.cdist(a, p, p=2.0)

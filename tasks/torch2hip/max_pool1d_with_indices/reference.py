import torch.nn.functional as F


def reference(x, batch, channels, length, kernel, stride, padding):
    """1-D max pooling with the position of the (first) maximum of each window."""
    values, indices = F.max_pool1d(x, kernel, stride=stride, padding=padding, return_indices=True)
    return values, indices

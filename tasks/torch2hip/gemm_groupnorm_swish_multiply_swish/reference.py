import torch
import torch.nn.functional as F


def reference(x, weight, bias, gn_weight, gn_bias, multiply_weight, batch, in_features, out_features, num_groups,
              eps):
    """KernelBench level 2, problem 88: Linear, GroupNorm, Swish, Multiply, Swish. Called with
    the declared fp32 tensors this is the eager baseline; with fp64 upcasts the expected output."""
    t = F.linear(x, weight, bias)
    t = F.group_norm(t, num_groups, gn_weight, gn_bias, eps)
    t = t * torch.sigmoid(t)
    t = t * multiply_weight
    return t * torch.sigmoid(t)

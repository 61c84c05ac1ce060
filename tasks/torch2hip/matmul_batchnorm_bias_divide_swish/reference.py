import torch
import torch.nn.functional as F


def reference(x, weight, bn_weight, bn_bias, bias, batch, in_features, out_features, eps, divide_value):
    """KernelBench level 2, problem 97 in training mode: Linear (its bias cancels in the
    BatchNorm and is left out), BatchNorm1d with batch statistics, + bias, / divide_value,
    Swish. Called with the declared fp32 tensors this is the eager baseline; with fp64 upcasts
    the expected output."""
    t = F.linear(x, weight)
    t = F.batch_norm(t, None, None, bn_weight, bn_bias, training=True, momentum=0.1, eps=eps)
    t = (t + bias) / divide_value
    return t * torch.sigmoid(t)

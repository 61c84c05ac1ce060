import torch.nn.functional as F


def reference(x, bias, tokens, hidden):
    """GELU (tanh approximation) of x plus a bias broadcast over the rows.

    Called with the declared fp16 tensors this is the eager baseline (an fp16 broadcast add,
    then the GELU); called with fp32 upcasts it gives the expected output, rounded once by
    the comparison."""
    return F.gelu(x + bias, approximate="tanh")

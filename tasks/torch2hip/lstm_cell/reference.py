import torch
import torch.nn.functional as F


def reference(x, h, c, w_ih, w_hh, b_ih, b_hh, batch, input_size, hidden):
    """One step of torch.nn.LSTMCell, written as PyTorch's own reference formulation:

        gates = x @ w_ih^T + b_ih + h @ w_hh^T + b_hh      [batch, 4 * hidden], gate order i, f, g, o
        c_out = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h_out = sigmoid(o) * tanh(c_out)

    Called with the declared fp32 tensors this is the eager baseline (two GEMMs with bias,
    an add and nine pointwise kernels); with fp64 upcasts it is the expected output.
    Returns (h_out, c_out)."""
    gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, dim=1)
    i = torch.sigmoid(i)
    f = torch.sigmoid(f)
    g = torch.tanh(g)
    o = torch.sigmoid(o)
    c_out = f * c + i * g
    h_out = o * torch.tanh(c_out)
    return h_out, c_out

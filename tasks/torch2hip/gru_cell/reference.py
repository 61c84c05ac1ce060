import torch
import torch.nn.functional as F


def reference(x, h, w_ih, w_hh, b_ih, b_hh, batch, input_size, hidden):
    """One step of torch.nn.GRUCell, written as PyTorch's own reference formulation:

        gi = x @ w_ih^T + b_ih,  gh = h @ w_hh^T + b_hh      [batch, 3 * hidden], gate order r, z, n
        r = sigmoid(gi_r + gh_r),  z = sigmoid(gi_z + gh_z)
        n = tanh(gi_n + r * gh_n)
        h_out = n + z * (h - n)                               (= (1 - z) * n + z * h)

    Called with the declared fp32 tensors this is the eager baseline (two GEMMs with bias
    and ten pointwise kernels); with fp64 upcasts it is the expected output."""
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(h, w_hh, b_hh)
    i_r, i_z, i_n = gi.chunk(3, dim=1)
    h_r, h_z, h_n = gh.chunk(3, dim=1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return n + z * (h - n)

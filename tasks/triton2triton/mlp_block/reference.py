import torch


def reference(x, w_gate, w_up, w_down, tokens, hidden, inter):
    """SwiGLU MLP, computed in the dtype it is given (fp16 is upcast to fp32 by the harness);
    the intermediate stays in that dtype. Returns [tokens, hidden]."""
    g = x @ w_gate
    u = x @ w_up
    h = g * torch.sigmoid(g) * u
    return h @ w_down


def make_inputs(config, generator, device):
    """The three weights, N(0, 1 / fan_in) (fan_in = hidden for w_gate and w_up, inter for
    w_down), so activations keep unit scale whatever the sizes."""
    hidden, inter = int(config["hidden"]), int(config["inter"])
    out = {}
    for name, shape, fan_in in (("w_gate", (hidden, inter), hidden), ("w_up", (hidden, inter), hidden),
                                ("w_down", (inter, hidden), inter)):
        w = torch.randn(shape, generator=generator, device=device) / fan_in ** 0.5
        out[name] = w.to(torch.float16)
    return out

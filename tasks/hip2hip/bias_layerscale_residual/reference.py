def reference(x, residual, bias, gamma, tokens, dim):
    """residual + gamma * (x + bias), bias and gamma broadcast over rows, in the dtype of
    the inputs (the harness passes float32 for this fp16 task)."""
    assert x.shape == (tokens, dim) and residual.shape == (tokens, dim)
    assert bias.shape == (dim,) and gamma.shape == (dim,)
    return residual + gamma * (x + bias)

def reference(a, b, m, n, k):
    """C = A @ B in the dtype of the inputs (the harness passes float64 for this fp32 task)."""
    assert a.shape == (m, k) and b.shape == (k, n)
    return a @ b

def reference(x, rows, cols):
    """The transpose of x as a contiguous [cols, rows] tensor (an exact copy of the values)."""
    assert x.shape == (rows, cols)
    return x.t().contiguous()

def reference(img, batch, channels, height, width, patch):
    """Patchify: [B, C, H, W] -> [B, (H/p) (W/p), C p p], (c, i, j) order inside a row."""
    gh, gw = height // patch, width // patch
    t = img.view(batch, channels, gh, patch, gw, patch).permute(0, 2, 4, 1, 3, 5)
    return t.reshape(batch, gh * gw, channels * patch * patch)

"""The candidate process (``process``), the only one that runs candidate code: its audit hook,
its in-process guard, and the recorders of its calls (Triton's, and the one linked into a HIP
build)."""

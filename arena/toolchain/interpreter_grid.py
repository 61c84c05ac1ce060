"""Triton's interpreter, made to call a launch's grid function as a GPU's launcher does.

On a GPU, ``kernel[grid](...)`` binds the launch's arguments by name and calls ``grid`` with that dict of the
arguments as given: tensors as tensors, integers as integers. It then launches with the dict's values, so that a
grid function that reads a tensor's properties, or sets an argument (vLLM's ``causal_conv1d_fwd`` sizes and fills
a metadata buffer there: ``META["batch_ptr"].nelement()``, ``.resize_()``, ``META["batch_ptr"] = ...``), sees
what it expects and the kernel gets what it set. The interpreter called it with the arguments it had already
converted to its own pointer and scalar tensors, which have neither, and launched with the arguments as they
were. Here the grid is computed first, from the arguments as a GPU's launcher has them, and the interpreter runs
the launch with the arguments the grid function left. Installed with the interpreter's other fixes
(``cpu_interpreter.install``).
"""

from __future__ import annotations

import inspect
from typing import Any

_INSTALLED = False


def install() -> None:
    """Patch Triton's interpreter (once a process): a launch's grid function gets the launch's arguments."""
    global _INSTALLED
    if _INSTALLED:
        return
    from triton.runtime import interpreter

    call = interpreter.GridExecutor.__call__

    def grid_as_on_a_gpu(self: Any, *args: Any, **kwargs: Any) -> Any:
        grid = self.grid
        if not callable(grid):
            return call(self, *args, **kwargs)
        names = inspect.getfullargspec(self.fn).args
        bound = inspect.getcallargs(self.fn, *args, **{k: v for k, v in kwargs.items() if k in names})
        self.grid = tuple(grid(bound))
        try:
            # the arguments as the grid function left them (an argument it set is the one launched with)
            return call(self, **bound, **{k: v for k, v in kwargs.items() if k not in names})
        finally:
            self.grid = grid

    interpreter.GridExecutor.__call__ = grid_as_on_a_gpu  # type: ignore[method-assign]
    _INSTALLED = True

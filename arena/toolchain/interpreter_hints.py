"""Triton's interpreter, made to hold a kernel to the divisibility it promises the compiler.

``tl.multiple_of(x, 16)`` tells the compiler that ``x`` (an offset, or a pointer: its address in bytes) is a
multiple of 16 where each contiguous run of its values begins; the compiler then issues wide, aligned loads and
stores. Where the promise is false at some sizes (a row of an odd number of fp32 elements: the next row's first
address is 4 bytes past a multiple of 16), a GPU faults with a misaligned address or reads the wrong elements,
and the interpreter, which only records the hint, computed the right values. Here the interpreter checks the
promise where every run begins for certain, the first element along each dimension the hint covers, and fails the
call where it is false: a draft of the importer, or a candidate on the cpu backend, that a GPU would fault on
fails on the CPU too. Installed with the interpreter's other fixes (``cpu_interpreter.install``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arena.errors import ArenaException

_INSTALLED = False


class HintBroken(ArenaException, ValueError):
    """A kernel's ``tl.multiple_of`` that is false on the values it was given."""


def check_divisibility(data: np.ndarray, values: list[int], pointer: bool) -> None:
    """Raise ``HintBroken`` where ``data`` (the hinted tensor's values: addresses for a pointer) is not a multiple
    of ``values[d]`` at its first element along each dimension ``d``."""
    for dim, v in enumerate(values):
        v = int(v)
        if v <= 1:
            continue
        first = (np.take(data, 0, axis=dim) if data.ndim else data).astype(np.uint64 if pointer else np.int64)
        bad = first % (np.uint64(v) if pointer else v) != 0
        if bool(np.any(bad)):
            value = int(first.reshape(-1)[int(np.argmax(bad.reshape(-1)))])
            what = "an address" if pointer else "a value"
            raise HintBroken(
                f"tl.multiple_of promises the compiler multiples of {v}, and {what} where a run begins is {value} "
                f"({value % v} past one): on a GPU a misaligned access or wrong elements; the hint is false at "
                "these sizes")


def install() -> None:
    """Patch Triton's interpreter (once a process): its ``tl.multiple_of`` checks what it promises."""
    global _INSTALLED
    if _INSTALLED:
        return
    import triton.runtime.interpreter as interpreter

    original = interpreter._patch_lang_core

    def patch_lang_core(lang: Any, scope: Any) -> None:
        original(lang, scope)
        hinted = lang.multiple_of     # the interpreter's: records the hint on the tensor

        def multiple_of(input: Any, values: Any, *args: Any, **kwargs: Any) -> Any:
            out = hinted(input, values, *args, **kwargs)
            handle = getattr(input, "handle", None)
            data = getattr(handle, "data", None)
            if isinstance(data, np.ndarray):
                vals = values if isinstance(values, (list, tuple)) else [values]
                vals = [getattr(v, "value", v) for v in vals]
                pointer = bool(getattr(getattr(input, "dtype", None), "is_ptr", lambda: False)())
                check_divisibility(data, list(vals), pointer)
            return out

        scope.set_attr(lang, "multiple_of", multiple_of)

    interpreter._patch_lang_core = patch_lang_core
    _INSTALLED = True

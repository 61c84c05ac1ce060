"""The kernel ABI: how a candidate file is called with the signature's tensors and scalars.

``hip_signature_problem`` reads the ``extern "C"`` declaration of a HIP source and says
what does not match the task's signature (count, pointer-ness, scalar types, the stream),
before anything is built or run: a mismatch would otherwise be undefined behaviour in
ctypes. ``ctypes_argtypes`` gives the matching ctypes types. Every tensor is a pointer (an
input updated in place too; an absent optional input is a null pointer; a strided input
points at its first element, its strides are what the signature declares); a bool scalar is
a C ``bool``.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any, Sequence

from arena.taskdef.loader import Task

_SCALAR_CTYPES = {"int64": ctypes.c_int64, "int32": ctypes.c_int32, "float32": ctypes.c_float, "bool": ctypes.c_bool}
_SCALAR_CTYPE_NAMES = {
    "int64": ("int64_t", "long long", "long", "ptrdiff_t", "ssize_t"),
    "int32": ("int32_t", "int"),
    "float32": ("float",),
    "bool": ("bool",),
}


def _strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    return re.sub(r"//[^\n]*", " ", src)


def split_params(text: str) -> list[str]:
    """Top-level comma-separated pieces of a parameter or argument list (a lone ``void`` none; a
    braced initializer list is one piece)."""
    params, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == "," and depth == 0:
            params.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail and tail != "void":
        params.append(tail)
    return params


def find_entry_params(source: str, entry: str) -> list[str] | None:
    """Parameters of ``extern "C" ... entry(...)`` (a definition or declaration), or None."""
    src = _strip_comments(source)
    for m in re.finditer(r'extern\s+"C"\s*(\{)?', src):
        start = m.end()
        end = len(src)
        if m.group(1) is not None:  # extern "C" { ... }: only what is inside the braces
            depth, k = 1, start
            while k < len(src) and depth:
                depth += {"{": 1, "}": -1}.get(src[k], 0)
                k += 1
            end = k
        window = src[start:end]
        fm = re.search(r"\b" + re.escape(entry) + r"\s*\(", window)
        if not fm:
            continue
        # the function must be declared in this extern "C" block / declaration
        between = window[: fm.start()]
        if m.group(1) is None and (";" in between or "{" in between):
            continue
        i = start + fm.end()
        depth = 1
        j = i
        while j < len(src) and depth:
            depth += {"(": 1, ")": -1}.get(src[j], 0)
            j += 1
        return split_params(src[i: j - 1])
    return None


def _base_type(param: str) -> str:
    words = re.sub(r"[*&]", " ", param).split()
    words = [w for w in words if w not in ("const", "volatile", "__restrict__", "restrict", "__restrict",
                                           "unsigned", "signed")]
    return " ".join(words[:-1]) if len(words) > 1 else " ".join(words)


def hip_signature_problem(source: str, task: Task) -> str | None:
    """None if the HIP entry matches the task's signature, else what is wrong."""
    params = find_entry_params(source, task.entry)
    if params is None:
        return f'no extern "C" function named {task.entry!r} in the kernel file'
    tensors = [*task.inputs, *task.outputs]
    want = len(tensors) + len(task.scalars) + 1
    if len(params) != want:
        return (f"{task.entry} takes {len(params)} parameters; the signature needs {want} "
                f"({len(task.inputs)} inputs, {len(task.outputs)} outputs, {len(task.scalars)} scalars, the stream)")
    for p, spec in zip(params, tensors):
        if "*" not in p:
            return f"parameter {p!r} for tensor {spec.name!r} must be a pointer"
        if getattr(spec, "inout", False) and re.search(r"\bconst\b[^*]*\*", p):
            return f"parameter {p!r} for tensor {spec.name!r}, which the kernel updates in place, must not be const"
    for p, spec in zip(params[len(tensors):], task.scalars):
        if "*" in p:
            return f"parameter {p!r} for scalar {spec.name!r} must not be a pointer"
        base = _base_type(p)
        if not any(base == n or base.endswith(" " + n) for n in _SCALAR_CTYPE_NAMES[spec.type]):
            return f"parameter {p!r} for scalar {spec.name!r} must be {_SCALAR_CTYPE_NAMES[spec.type][0]}"
    last = params[-1]
    if not re.search(r"\b(hipStream_t|cudaStream_t)\b", last):
        return f"the last parameter must be the hipStream_t stream, not {last!r}"
    return None


def argtypes_for(n_tensors: int, scalar_types: list[str]) -> list[type]:
    """ctypes argument types of an entry: the tensors' pointers, the scalars, the stream."""
    return [ctypes.c_void_p] * n_tensors + [_SCALAR_CTYPES[t] for t in scalar_types] + [ctypes.c_void_p]


def ctypes_argtypes(task: Task) -> list[type]:
    return argtypes_for(len(task.inputs) + len(task.outputs), [s.type for s in task.scalars])


def ctypes_scalar(spec_type: str, value: int | float | bool):
    return _SCALAR_CTYPES[spec_type](value)


def call_args(tensors: Sequence[Any], scalar_types: Sequence[str], scalars: Sequence[Any], stream: int) -> list[Any]:
    """The ctypes arguments of one call of a HIP entry: each tensor's address (its first
    element's; a null pointer for None, an absent optional input), the scalars as their C
    types, the stream."""
    args: list = [ctypes.c_void_p(None if t is None else t.data_ptr()) for t in tensors]
    args += [ctypes_scalar(kind, v) for kind, v in zip(scalar_types, scalars)]
    return args + [ctypes.c_void_p(stream)]

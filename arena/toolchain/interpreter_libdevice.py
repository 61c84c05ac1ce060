"""libdevice on Triton's interpreter (the cpu backend).

``triton.language.extra.libdevice`` functions are calls into the vendor's device library; the
interpreter has none, and each of them returns nothing there (a kernel that uses one fails
with "cannot convert None to tensor", which would read as the candidate's compile error).
``install`` gives the interpreter an implementation of the common ones, from the operations
it does have: the same function where ``triton.language.math`` has it, a short composition of
those otherwise (tanh, sinh, cosh, tan, expm1, log1p, log10, exp10, isnan, isinf, ...).

For the rest, ``unsupported`` names what a source file uses that has no implementation here:
such a file is NOT_RUNNABLE on the cpu backend, decided from its source before it runs ("not
the candidate's fault"; a GPU runs it), never a failure of the candidate's.
"""

from __future__ import annotations

import ast

import triton
import triton.language as tl


@triton.jit
def _tanh(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def _sinh(x):
    return 0.5 * (tl.exp(x) - tl.exp(-x))


@triton.jit
def _cosh(x):
    return 0.5 * (tl.exp(x) + tl.exp(-x))


@triton.jit
def _tan(x):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def _expm1(x):
    return tl.exp(x) - 1.0


@triton.jit
def _log1p(x):
    return tl.log(1.0 + x)


@triton.jit
def _log10(x):
    return tl.log(x) * 0.4342944819032518


@triton.jit
def _exp10(x):
    return tl.exp2(x * 3.321928094887362)


@triton.jit
def _rcp(x):
    return 1.0 / x


@triton.jit
def _isnan(x):
    return x != x


@triton.jit
def _isinf(x):
    return tl.abs(x) == float("inf")


@triton.jit
def _isfinite(x):
    return (x == x) & (tl.abs(x) != float("inf"))


@triton.jit
def _trunc(x):
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))


# the functions triton.language has: called through it at run time, where the interpreter has put its own
@triton.jit
def _abs(x):
    return tl.abs(x)


@triton.jit
def _ceil(x):
    return tl.ceil(x)


@triton.jit
def _floor(x):
    return tl.floor(x)


@triton.jit
def _cos(x):
    return tl.cos(x)


@triton.jit
def _sin(x):
    return tl.sin(x)


@triton.jit
def _erf(x):
    return tl.erf(x)


@triton.jit
def _exp(x):
    return tl.exp(x)


@triton.jit
def _exp2(x):
    return tl.exp2(x)


@triton.jit
def _log(x):
    return tl.log(x)


@triton.jit
def _log2(x):
    return tl.log2(x)


@triton.jit
def _sqrt(x):
    return tl.sqrt(x)


@triton.jit
def _rsqrt(x):
    return tl.rsqrt(x)


@triton.jit
def _fma(x, y, z):
    return tl.fma(x, y, z)


@triton.jit
def _div(x, y):
    return x / y


# libdevice name -> what runs on the interpreter
def _table() -> dict:
    table = {"abs": _abs, "fabs": _abs, "ceil": _ceil, "floor": _floor, "cos": _cos, "sin": _sin, "erf": _erf,
             "exp": _exp, "exp2": _exp2, "log": _log, "log2": _log2, "sqrt": _sqrt, "sqrt_rn": _sqrt,
             "rsqrt": _rsqrt, "fma": _fma, "div_rn": _div}
    table.update({"fast_expf": _exp, "fast_logf": _log, "fast_log2f": _log2, "fast_sinf": _sin,
                  "fast_cosf": _cos, "tanh": _tanh, "sinh": _sinh, "cosh": _cosh, "tan": _tan, "fast_tanf": _tan,
                  "expm1": _expm1, "log1p": _log1p, "log10": _log10, "fast_log10f": _log10, "exp10": _exp10,
                  "fast_exp10f": _exp10, "rcp_rn": _rcp, "rcp_rz": _rcp, "rcp_rd": _rcp, "rcp_ru": _rcp,
                  "isnan": _isnan, "isinf": _isinf, "finitef": _isfinite, "isfinited": _isfinite, "trunc": _trunc})
    return table


SUPPORTED = frozenset(_table())


def _modules() -> list:
    import importlib

    out = []
    for name in ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
                 "triton.language.extra.hip.libdevice"):
        try:
            out.append(importlib.import_module(name))
        except ImportError:
            continue
    return out


def install() -> None:
    """Every libdevice module of this process: the functions the interpreter can run, bound."""
    table = _table()
    for mod in _modules():
        for name, fn in table.items():
            if hasattr(mod, name):
                setattr(mod, name, fn)


def unsupported(source: str) -> list[str]:
    """The libdevice functions a Python file uses that the interpreter has no implementation of
    (``libdevice.NAME`` or ``from ...libdevice import NAME``), sorted."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = node.value
            base_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
            if base_name == "libdevice":
                used.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("libdevice"):
            used.update(a.name for a in node.names)
    return sorted(n for n in used if n not in SUPPORTED and not n.startswith("_"))

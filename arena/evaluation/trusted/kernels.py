"""Which device work of the candidate's timed calls is its own, in the trusted process: kernels
this evaluation built from the candidate's file (by exact name), copies and fills (incidental),
and everything else (foreign: the candidate's failure, ``arena.evaluation.trusted.performance``)."""

from __future__ import annotations

import re
from typing import Iterable

# Device activities a candidate may cause besides its own kernels: copies and fills (torch's
# allocation-side kernels, runtime memcpy / memset)
_ALLOWED_ACTIVITY = re.compile(r"^Memcpy|^Memset|^memcpy|^memset|FillFunctor|copy_kernel|direct_copy|CopyFunctor|"
                               r"fill_kernel|zero_kernel|^Copy(Device|Host)|^Fill(Buffer|Device)", re.IGNORECASE)


def incidental(name: str) -> bool:
    """A copy or a fill (runtime memcpy / memset, torch's copy and fill kernels): activity a
    candidate may cause, a little of it, besides its own kernels."""
    return bool(_ALLOWED_ACTIVITY.search(name))


def foreign_kernels(names: Iterable[str], own: Iterable[str]) -> list[str]:
    """Device activities of a candidate's timed calls that are neither kernels this evaluation
    built from its file (by exact name: the name the device reports, as the build or Triton's
    JIT produced it) nor copies and fills: vendor-library kernels (cuBLAS, cuDNN, rocBLAS: also
    their level-1 kernels, whose names say nothing), torch's compute kernels, kernels of another
    library. A function named after a library kernel is not that kernel: the exact names differ
    (namespaces, template arguments, parameters), or, where a library kernel has a bare name,
    the candidate cannot call the library (arena.evaluation.candidate.audit, arena.toolchain.objcheck)."""
    own = {" ".join(n.split()) for n in own}
    return sorted({n for n in names if " ".join(n.split()) not in own and not incidental(n)})


def defined_functions(source: str) -> set[str]:
    """The names of the functions a Python file defines (at any depth). A Triton kernel's
    compiled name is the name of the function it was compiled from: what the candidate's process
    says it compiled from the candidate's file must be one of these (a name with a namespace,
    template or parameter list, like torch's kernels, never is)."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

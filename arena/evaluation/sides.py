"""One callable side of a comparison: a built HIP library, a Triton (Python) module, or the
task's PyTorch reference run eagerly at the declared dtypes.

The same class runs the candidate in the candidate process and the baseline (and
torch.compile's side) in the trusted process, so the two are called, and timed, by the same
code. Loading failures are ``SideError``s with the status they stand for.
"""

from __future__ import annotations

import ctypes
import inspect
import random
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

from arena.errors import ArenaException
from arena.evaluation.protocol import CandidateSpec
from arena.records import Status


class SideError(ArenaException):
    """Loading or calling a side failed; ``status`` says how; ``origin``: the side's own
    exception behind it, where there is one (its traceback: ``arena.evaluation.tracebacks``)."""

    def __init__(self, status: Status, message: str, origin: BaseException | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.origin = origin


def import_file(path: Path | str, name: str) -> ModuleType:
    """Import a Python file (a reference, a baseline or a candidate) as a module of its own,
    always compiled from its source: no bytecode cache is read or written (a ``__pycache__``
    beside a candidate is neither trusted nor refreshed)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    source = Path(path).read_bytes()
    code = compile(source, str(path), "exec", dont_inherit=True)
    sys.modules[name] = module
    exec(code, module.__dict__)
    return module


def import_reference(path: Path | str, name: str | None = None) -> ModuleType:
    """A task's reference.py imported (``import_file``), with the cpu backend's nominal GPU installed first where
    torch has none (``arena.toolchain.interpreter_cuda``; nothing changes where it has one), as the candidate's
    process on the cpu backend has it: a reference that asks Triton's driver or torch.cuda for its GPU where it loads
    (rocmbench's gemm test chooses its fp8 types by ``is_cdna4()``) loads on the cpu backend as on a GPU, where it
    failed with "0 active drivers" and the task's CPU check with it."""
    from arena.toolchain import interpreter_cuda

    interpreter_cuda.install()
    return import_file(path, name or f"arena_reference_{random.getrandbits(32)}")


# exception types of Triton's front end that mean the kernel did not compile
COMPILE_FAILURES = ("CompilationError", "CompileTimeAssertionFailure", "InterpreterError")


class Side:
    """``spec`` names the file and the call's shape (inputs, outputs, scalar types); a
    ``reference`` language side calls ``function`` (the reference) and copies what it
    returns into the outputs where asked."""

    def __init__(self, spec: CandidateSpec, function: Callable[..., Any] | None = None, *, role: str = "side"):
        self.spec = spec
        self.role = role              # names the module a file is imported as: arena_<role>_<random>
        self.language = spec.language
        self.module: ModuleType | None = None
        if self.language == "hip":
            self._load_hip(spec.library)
        elif self.language == "triton":
            self._load_python(Path(spec.path))
        elif self.language == "reference":
            if function is None:
                module = self._import(Path(spec.path), f"arena_{role}")
                function = getattr(module, spec.entry, None)
                if not callable(function):
                    raise SideError(Status.LOAD_ERROR, f"{Path(spec.path).name} defines no function {spec.entry!r}")
            self.fn = function
        else:
            raise SideError(Status.LOAD_ERROR, f"unknown language {self.language!r}")

    def _load_hip(self, library: str) -> None:
        from arena.toolchain.abi import argtypes_for

        try:
            lib = ctypes.CDLL(library)
        except OSError as exc:
            raise SideError(Status.LOAD_ERROR, f"cannot load the built library: {exc}") from None
        try:
            fn = getattr(lib, self.spec.entry)
        except AttributeError:
            raise SideError(Status.SIGNATURE_MISMATCH, f"the library exports no symbol {self.spec.entry!r}") from None
        fn.argtypes = argtypes_for(self.spec.n_inputs + self.spec.n_outputs, self.spec.scalar_types)
        fn.restype = ctypes.c_int
        self.lib = lib
        self.fn = fn

    def _import(self, path: Path, prefix: str) -> ModuleType:
        name = f"{prefix}_{random.getrandbits(48):x}"
        try:
            return import_file(path, name)
        except SyntaxError as exc:
            raise SideError(Status.COMPILE_ERROR, f"{path.name}: {exc}") from None
        except BaseException as exc:  # noqa: BLE001 - any import failure of the side's code
            raise SideError(Status.LOAD_ERROR, f"importing {path.name} failed: {type(exc).__name__}: {exc}",
                            origin=exc) from None

    def _load_python(self, path: Path) -> None:
        self.module = self._import(path, f"arena_{self.role}")
        fn = getattr(self.module, self.spec.entry, None)
        if fn is None or not callable(fn):
            raise SideError(Status.SIGNATURE_MISMATCH, f"{path.name} defines no function {self.spec.entry!r}")
        n = self.spec.n_inputs + self.spec.n_outputs + len(self.spec.scalar_types)
        try:
            inspect.signature(fn).bind(*range(n))
        except TypeError as exc:
            raise SideError(Status.SIGNATURE_MISMATCH,
                            f"{self.spec.entry} cannot take the {n} arguments of the signature: {exc}") from None
        except ValueError:
            pass  # builtins without a signature: try the call
        self.fn = fn

    def __call__(self, ins: Sequence[Any], outs: Sequence[Any], scalars: Sequence[Any], *,
                 copy_out: bool = True) -> None:
        if self.language == "hip":
            import torch

            from arena.toolchain.abi import call_args

            stream = torch.cuda.current_stream().cuda_stream
            rc = self.fn(*call_args([*ins, *outs], self.spec.scalar_types, scalars, stream))
            if rc != 0:
                raise SideError(Status.RUNTIME_ERROR, f"{self.spec.entry} returned error code {rc}")
        elif self.language == "reference":
            result = self.fn(*ins, *scalars)
            if copy_out:
                results = result if isinstance(result, (tuple, list)) else (result,)
                for o, r in zip(outs, results):
                    o.copy_(r)
        else:
            self.fn(*ins, *outs, *scalars)


def call_status(exc: BaseException) -> Status:
    """The status of an exception raised by a side's call."""
    if isinstance(exc, SideError):
        return exc.status
    if type(exc).__name__ == "InterpreterError" and type(exc.__cause__).__name__ == "HintBroken":
        return Status.RUNTIME_ERROR     # a hint false on the values the kernel ran on: a GPU faults as it runs
    return Status.COMPILE_ERROR if type(exc).__name__ in COMPILE_FAILURES else Status.RUNTIME_ERROR

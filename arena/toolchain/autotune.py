"""``@triton.autotune`` where nothing can be benchmarked.

On a GPU, an autotuned kernel tunes on its first call of each key (in the correctness gate
or the warm-up), before any timed call (the cache keeps the winner, so timed calls launch it
directly), with the GPU alone while it times its variants (``arena.evaluation.server.watch_tuning``).
Two places cannot benchmark:

- Triton's interpreter (the cpu backend) has no driver: ``first_config_only`` makes every
  autotuner launch its first config (after its own pruning) instead of timing them all. The
  record says so (``uses_autotune`` and ``AUTOTUNE_ON_CPU``): correctness on the cpu checks
  that config only.
- The compile-ahead check (``arena.toolchain.triton_aot``) launches nothing:
  ``every_config`` makes an autotuner compile each of its configs, as tuning on the GPU
  would, so every variant is checked and warmed.
"""

from __future__ import annotations

import ast
import contextlib
from typing import Any, Iterator

AUTOTUNE_ON_CPU = ("the interpreter cannot benchmark: each @triton.autotune launched its first config, and only that "
                   "config was checked here")


def _configs(tuner: Any, kwargs: dict[str, Any]) -> list:
    try:
        return list(tuner.prune_configs(kwargs))
    except Exception:  # noqa: BLE001 - a pruning rule that needs real timings: all of them
        return list(tuner.configs)


def first_config_only() -> bool:
    """Make every autotuner in this process launch its first config (the interpreter's case);
    returns whether Triton's autotuner was found."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return False
    real = Autotuner.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if len(self.configs) > 1:
            self.nargs = dict(zip(self.arg_names, args))
            self.configs = _configs(self, kwargs)[:1] or self.configs[:1]
        return real(self, *args, **kwargs)

    Autotuner.run = run
    return True


@contextlib.contextmanager
def every_config() -> Iterator[None]:
    """Inside: an autotuner's launch compiles each of its configs (through the JIT's own path,
    with whatever launch hook is in force) instead of benchmarking them."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        yield
        return
    real = Autotuner.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.nargs = dict(zip(self.arg_names, args))
        out = None
        for config in _configs(self, kwargs):
            out = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return out

    Autotuner.run = run
    try:
        yield
    finally:
        Autotuner.run = real


def uses_autotune(source: str) -> bool:
    """Whether a Python file decorates a function with ``triton.autotune`` (or ``autotune``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name == "autotune":
                    return True
    return False

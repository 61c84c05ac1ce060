"""Does a Triton task's starting kernel run on each of its configs? An importer's question, asked of the
drafts it wrote (the held-out configs and the seen drafts), on the CPU.

The starting kernel is called through its entry, in Triton's interpreter, in a process of its own
(``TRITON_INTERPRET=1`` is read as the kernels are defined: a child of the importer's probe server, which
imported torch, Triton and the harness once), each config in a child forked from it, on the
inputs ``make_inputs`` makes for the config. Each launch runs two programs of its grid, the first and the
last: what is asked is whether the kernel is built and traced for the config's sizes (a ``tl.arange`` of a
size that is not a power of two, a block that does not fit, an assertion of the launcher, a ``tl.multiple_of``
false where the last program's rows begin), not what it computes, which the harness's checks are for. A config whose
call does not end within its budget of CPU time is not refuted; it is listed as such, and so is one the
interpreter dies under (``"crashed"``: the signal), the configs after it probed still.

    python -m arena.authoring.importers.kernel_probe FOLDER [--seconds=S] SPLIT:NAME[=PARAMS_JSON] ...

prints one JSON line per config: {"config": "SPLIT:NAME", "error": str | null, "timeout": bool,
"constexprs": [[kernel, parameter, value], ...]} (the compile-time block sizes its launches had), with
"crashed": the signal's name where the interpreter died under it, and "allocated": the bytes its call allocated
outside its launches (a call past the harness's working allowance is an error: a GPU's run of it would be refused).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from arena.errors import Interruption, exception_chain

PROBE_SECONDS = 20.0     # one config's budget, in CPU seconds: making its inputs and the call
PROCESS_SECONDS = 240.0  # the whole probe, in seconds of wall time
# and every probe of one import together (``probes_within``): the block sizes' probe, the drafts', the powers of two
# tried, the drafts retried and the spares are up to five processes, each of PROCESS_SECONDS
IMPORT_PROBES_SECONDS = 240.0
_left: list[float | None] = [None]     # the wall seconds the probes of the import under way may still take


@contextlib.contextmanager
def probes_within(seconds: float) -> Iterator[None]:
    """The probes run in the block take at most ``seconds`` of wall time together; past it, a probe answers
    for no config (none is refuted: the report says which were not probed)."""
    before = _left[0]
    _left[0] = seconds
    try:
        yield
    finally:
        _left[0] = before


class _Budget(Interruption):
    """A config's budget ran out (the kernel's own ``except Exception`` does not catch it)."""


# the compile-time block sizes (``tl.constexpr`` parameters a block's shape follows, ``_block_params``) of the
# launches of the config being probed: (kernel, parameter, value); flags (0, 1, booleans) are left out
_LAUNCHED: set[tuple[str, str, int]] = set()
_BLOCKS: dict[Any, set[str] | None] = {}     # each kernel's (``_block_params``), once

# where a ``triton.language`` function takes a block's shape: the positions of its arguments (an int: every one from
# that position on) and its keywords. A tensor's own method of that name takes the shape in every argument
_SHAPE_ARGS: dict[str, tuple[tuple[int, ...] | int, tuple[str, ...]]] = {
    "arange": ((0, 1), ("start", "end")), "zeros": ((0,), ("shape",)), "full": ((0,), ("shape",)),
    "empty": ((0,), ("shape",)), "reshape": (1, ("shape",)), "view": (1, ("shape",)),
    "broadcast_to": (1, ("shape",)), "static_range": (0, ("arg1", "arg2", "step")),
    "make_block_ptr": ((4,), ("block_shape",)), "make_tensor_descriptor": ((3,), ("block_shape",)),
    "histogram": ((1,), ("num_bins",)),
}
_TENSOR_METHODS = ("reshape", "view", "broadcast_to")


def _block_params(fn: Any, seen: dict[Any, set[str] | None] | None = None) -> set[str] | None:
    """The parameters of the Triton kernel ``fn`` (its Python function) that a block's shape follows: a name in the
    shape of a ``tl.arange``, ``tl.zeros``, ``tl.full``, a reshape, a block pointer's ``block_shape``, a
    ``tl.static_range`` (unrolled), directly, through the locals computed from it (``HALF: tl.constexpr = BLOCK //
    2``) or through a ``@triton.jit`` function it is passed to, whose parameter is one. A stride or a size passed as
    a ``tl.constexpr`` that only masks, offsets or bounds a loop is not: recompiled for each value, the program's
    block stays as it is. None where the source cannot be read (every compile-time integer then counts); a call
    the analysis cannot resolve counts its arguments as shapes."""
    import ast
    import builtins
    import inspect
    import textwrap

    seen = {} if seen is None else seen
    if fn in seen:
        return seen[fn]     # its answer, or, met again inside itself (a recursion), the empty set it started with
    seen[fn] = set()
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        tree = None
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None) \
        if tree is not None else None
    if func is None:
        seen[fn] = None
        return None
    params = [a.arg for a in func.args.args]
    glob = getattr(fn, "__globals__", {})

    def names(node: ast.AST | None) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()

    def resolve(node: ast.AST) -> Any:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in glob and not hasattr(builtins, node.id):
            return None
        obj = glob[node.id] if node.id in glob else getattr(builtins, node.id)
        for a in reversed(parts):
            obj = getattr(obj, a, None)
        return obj

    shape: set[str] = set()
    flows: list[tuple[set[str], set[str]]] = []      # (targets, the names their value is computed from)
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            flows.append(({n for t in targets for n in names(t)}, names(node.value)))
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        last = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        target = resolve(f)
        module = getattr(target, "__module__", "") or ""
        inner = target
        while hasattr(inner, "fn") and hasattr(inner, "run"):     # a @triton.jit function (under its wrappers)
            inner = inner.fn
        if inner is not target:
            inner_shape = _block_params(inner, seen)
            try:
                callee = list(inspect.signature(inner).parameters)
            except (TypeError, ValueError):
                callee = []
            for i, a in enumerate(node.args):
                if inner_shape is None or (i < len(callee) and callee[i] in inner_shape):
                    shape |= names(a)
            for kw in node.keywords:
                if inner_shape is None or kw.arg in inner_shape:
                    shape |= names(kw.value)
        elif last in _SHAPE_ARGS and (target is not None and module.startswith("triton")
                                      or isinstance(f, ast.Attribute) and last in _TENSOR_METHODS):
            where, keys = _SHAPE_ARGS[last] if target is not None else (0, ("shape",))
            picked = node.args[where:] if isinstance(where, int) else [node.args[i] for i in where
                                                                       if i < len(node.args)]
            shape |= {n for a in picked for n in names(a)}
            shape |= {n for kw in node.keywords if kw.arg in keys for n in names(kw.value)}
        elif target is None and not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                                     and f.value.id not in glob):
            # a call the analysis cannot follow (not a method of a local: a tensor's ``.to``, ``.load``)
            shape |= {n for a in [*node.args, *(k.value for k in node.keywords)] for n in names(a)}
    grew = True
    while grew:
        grew = False
        for targets, used in flows:
            if targets & shape and not used <= shape:
                shape |= used
                grew = True
    seen[fn] = out = {p for p in params if p in shape}
    return out


def _two_programs_per_launch() -> None:
    """Each interpreted launch runs two programs of its grid, the first and the last (the one a size that is not a
    multiple of the block reaches with its tail, and the one whose rows begin furthest from an alignment the kernel
    promises), each told the grid's true size (``tl.num_programs``); a grid of one program runs it once, an empty
    grid none. Records the launch's compile-time integers in ``_LAUNCHED``."""
    import inspect

    from triton.runtime import interpreter

    call = interpreter.GridExecutor.__call__
    builder = interpreter.interpreter_builder

    def first_and_last(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            names = inspect.getfullargspec(self.fn).args
            bound = inspect.getcallargs(self.fn, *args, **{k: v for k, v in kwargs.items() if k in names})
            if self.fn not in _BLOCKS:
                _BLOCKS[self.fn] = _block_params(self.fn)
            blocks = _BLOCKS[self.fn]
            _LAUNCHED.update((self.fn.__name__, n, int(bound[n])) for n in self.constexprs
                             if isinstance(bound.get(n), int) and not isinstance(bound[n], bool) and bound[n] > 1
                             and (blocks is None or n in blocks))
        except Exception:  # noqa: BLE001 - what is recorded is a hint; the launch itself says what is wrong
            pass
        grid, true = self.grid, [(1, 1, 1)]

        def two(meta: Any) -> tuple[int, int, int]:
            g = tuple(grid(meta) if callable(grid) else grid)
            true[0] = (*(int(x) for x in g), *(1,) * (3 - len(g)))    # type: ignore[assignment]
            return (min(2, math.prod(true[0])), 1, 1)       # an empty grid runs nothing, as on a GPU

        def set_grid_dim(nx: int, ny: int, nz: int) -> None:
            type(builder).set_grid_dim(builder, *true[0])

        def set_grid_idx(x: int, y: int, z: int) -> None:
            type(builder).set_grid_idx(builder, *((0, 0, 0) if x == 0 else tuple(n - 1 for n in true[0])))

        self.grid = two
        builder.set_grid_dim, builder.set_grid_idx = set_grid_dim, set_grid_idx
        _IN_LAUNCH[0] += 1
        try:
            return call(self, *args, **kwargs)
        finally:
            _IN_LAUNCH[0] -= 1
            self.grid = grid
            del builder.set_grid_dim, builder.set_grid_idx

    interpreter.GridExecutor.__call__ = first_and_last  # type: ignore[method-assign]


_IN_LAUNCH = [0]     # launches under way: the interpreter's copies of a launch's arguments are not the call's


class _Allocations:
    """The bytes of the tensors the starting kernel's call allocates outside its launches (its launcher's
    ``new_empty``, ``torch.zeros``, ``clone``: every operator's output that its schema does not alias to an input),
    counted as they are made, freed or not: as the harness's record of a call counts its allocations, which it holds
    to the candidate's working allowance (``arena.evaluation.memory.working_allowance``). Not
    ``common.peak_bytes_mode``, which counts any storage first seen under it: a launcher's view of an input, or its
    in-place write, would count the input's bytes as the call's."""

    def __init__(self) -> None:
        self.bytes = 0
        self._mode: Any = None

    def __enter__(self) -> "_Allocations":
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                out = func(*args, **(kwargs or {}))
                if not _IN_LAUNCH[0]:
                    outs = out if isinstance(out, (tuple, list)) else (out,)
                    for r, t in zip(func._schema.returns, outs):
                        if isinstance(t, torch.Tensor) and r.alias_info is None:
                            counter.bytes += t.untyped_storage().nbytes()
                return out

        self._mode = Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._mode.__exit__(*exc)


def _past_allowance(allocated: int, io_bytes: int) -> str:
    """Why a call that allocates ``allocated`` bytes, on inputs and outputs of ``io_bytes``, is past what the harness
    lets a candidate's call allocate (its working allowance without the reference's measured share, which only a GPU
    measures: the least it can be); "" where it is not."""
    from arena.evaluation.memory import ALLOWANCE_FLOOR, ALLOWANCE_IO, working_allowance

    allow = working_allowance(io_bytes)
    if allocated <= allow:
        return ""
    return (f"it allocates {allocated / 2**30:.2f} GiB in a call, past the {allow / 2**30:.2f} GiB the harness lets a "
            f"candidate's call allocate beside its inputs and outputs (its working allowance: {ALLOWANCE_IO} times "
            f"their bytes, {ALLOWANCE_FLOOR / 2**30:g} GiB at least)")


_prepared: list[bool] = []


def _prepare() -> None:
    """What a probe's process has before it reads a task: the cpu backend's installs (as the candidate's process
    on the cpu backend has them) and two programs per launch. Once a process (the server's forks find it done)."""
    if _prepared:
        return
    import torch  # noqa: F401 - imported here, before any fork, as everything below is

    import arena.check.degeneracy  # noqa: F401
    import arena.check.inputs  # noqa: F401
    import arena.evaluation.memory  # noqa: F401
    import arena.evaluation.sides  # noqa: F401
    import arena.taskdef.loader  # noqa: F401
    from arena.toolchain import cpu_interpreter

    cpu_interpreter.install()
    _two_programs_per_launch()
    _prepared.append(True)


def _probe(folder: Path, wanted: list[tuple[str, str, dict | None]], seconds: float) -> None:
    import torch

    from arena.check.degeneracy import load_reference
    from arena.check.inputs import DTYPES, make_inputs, run_reference
    from arena.evaluation.protocol import CandidateSpec
    from arena.evaluation.sides import Side
    from arena.taskdef.loader import Config, load_task

    _prepare()
    task = load_task(folder)
    ref = load_reference(task)
    baseline = task.kernel_file("baseline")
    side = Side(CandidateSpec(language="triton", path=str(baseline), entry=task.entry, n_inputs=len(task.inputs),
                              n_outputs=len(task.outputs), scalar_types=[s.type for s in task.scalars]),
                role="probe")

    def on_alarm(*_: Any) -> None:
        raise _Budget()

    # the budget is CPU time of this process (user and system), so that it does not depend on the machine's load
    signal.signal(signal.SIGPROF, on_alarm)
    configs = {(c.split, c.name): c for s in ("seen", "heldout", "smoke") for c in task.configs(s)}
    for split, name, params in wanted:
        config = Config(split, 0, name, params) if params is not None else configs.get((split, name))
        line: dict[str, Any] = {"config": f"{split}:{name}", "error": None, "timeout": False}
        _LAUNCHED.clear()
        if config is None:
            line["error"] = "no such config"
            print(json.dumps({**line, "constexprs": []}), flush=True)
            continue
        # each config in a child of its own, forked with everything imported: where the interpreter dies under a
        # launch (a block pointer it does not emulate: SIGSEGV), that config is not refuted and the next is probed
        pid = os.fork()
        if pid:
            # its CPU budget ends it; a child that uses none (blocked on a lock a thread held at the fork) is
            # killed past a wall-clock bound, and its config is not refuted within its budget
            late = time.monotonic() + 3 * seconds + 30
            while not (done := os.waitpid(pid, os.WNOHANG))[0] and time.monotonic() < late:
                time.sleep(0.02)
            if not done[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                print(json.dumps({**line, "timeout": True, "constexprs": []}), flush=True)
            elif os.WIFSIGNALED(done[1]):
                print(json.dumps({**line, "crashed": signal.Signals(os.WTERMSIG(done[1])).name, "constexprs": []}),
                      flush=True)
            continue
        allocated = _Allocations()
        try:
            signal.setitimer(signal.ITIMER_PROF, seconds)
            stage = "making the inputs"
            try:
                env = task.env(config)
                made = make_inputs(task, env, 1234, "cpu", ref)
                scalars = [task.scalar_value(s, env) for s in task.scalars]
                if params is not None:   # a config the folder does not hold: the reference runs on it too
                    stage = "the reference"
                    run_reference(ref.reference, task, made, scalars)
                stage = "the starting kernel"
                outs = [torch.zeros(task.shape(o, env), dtype=DTYPES[o.dtype]) for o in task.outputs]
                io = sum(t.nbytes for t in [*made.values(), *outs] if isinstance(t, torch.Tensor))
                with _Allocations() as allocated:
                    side(list(made.values()), outs, scalars)
            except BaseException as exc:  # noqa: BLE001 - what the config's call raised is the answer
                if any(isinstance(e, _Budget) for e in exception_chain(exc)):
                    line["timeout"] = True
                else:
                    root = exception_chain(exc)[-1]
                    text = str(root).strip().splitlines()
                    line["error"] = f"{stage}: {type(root).__name__}: {text[-1] if text else ''}"[:300]
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            if allocated.bytes and not line["error"]:
                line["allocated"] = allocated.bytes
                past = _past_allowance(allocated.bytes, io)
                if past:
                    line["error"], line["timeout"] = f"the starting kernel: {past}", False
            line["constexprs"] = sorted(_LAUNCHED)
            print(json.dumps(line), flush=True)
        finally:
            os._exit(0)


class _Server:
    """A probe process that has imported what a probe needs (torch, Triton in its interpreter, the harness) and
    forks a child for each request, which probes as ``main`` does (in the task's folder) and ends: a request pays
    for a fork, not for a Python that imports torch and Triton (4-5 CPU seconds here; an import asks up to five).
    Nothing of a request's task is in the server: the child loads the task and its kernel, and goes. One per
    process and environment; past a request's time, it and all it started are killed (the next request starts
    another)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.proc = subprocess.Popen([sys.executable, "-m", "arena.authoring.importers.kernel_probe", "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, start_new_session=True)
        self.pending = b""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ask(self, folder: str, args: list[str], limit: float) -> str:
        """The lines the request's probe printed, up to its end or to ``limit`` seconds of the clock."""
        import selectors

        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write((json.dumps({"folder": folder, "argv": [folder, *args]}) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            self.close()
            return ""
        out: list[str] = []
        late = time.monotonic() + limit
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                left = late - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self.close()          # past its time: the request's child and its forks go with the server
                    return "".join(out)
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    self.close()
                    return "".join(out)
                self.pending += chunk
                *lines, self.pending = self.pending.split(b"\n")
                for ln in lines:
                    text = ln.decode(errors="replace")
                    if text == _SERVED:
                        return "".join(out)
                    out.append(text + "\n")

    def close(self) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                f.close()  # type: ignore[union-attr]


_SERVED = '{"served": true}'
_servers: list[_Server] = []


def _server() -> _Server:
    repo = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
           "PYTHONPATH": os.pathsep.join([repo, *filter(None, [os.environ.get("PYTHONPATH")])])}
    if _servers and (_keyed(_servers[0].env) != _keyed(env) or not _servers[0].alive()):
        _servers.pop().close()
    if not _servers:
        if not _servers_closed_at_exit:
            import atexit

            atexit.register(close_servers)
            _servers_closed_at_exit.append(True)
        _servers.append(_Server(env))
    return _servers[0]


_servers_closed_at_exit: list[bool] = []
# variables of the environment that change from one call to the next and that no probe reads: pytest's name of the
# test under way (a server kept across a test run's imports, not one a test)
_UNREAD = ("PYTEST_CURRENT_TEST",)


def _keyed(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in _UNREAD}


def close_servers() -> None:
    """End this process's probe server (at exit: its input closes, and it ends with its own children)."""
    while _servers:
        _servers.pop().close()


def serve() -> None:
    """The server's side: prepared once, then a child forked for each request read from stdin."""
    _prepare()
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        req = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            try:
                os.chdir(req["folder"])
                main(req["argv"])
            except BaseException:  # noqa: BLE001 - the request's lines say what it reached; the server goes on
                pass
            finally:
                sys.stdout.flush()
                os._exit(0)
        os.waitpid(pid, 0)
        print(_SERVED, flush=True)


def probe_configs(folder: Path, configs: list[tuple[str, str, dict | None]],
                  seconds: float = PROBE_SECONDS) -> dict[str, dict]:
    """``configs``: (split, name, params or None for the folder's own config of that name); ``seconds``: each
    one's budget. Returns each config's line ({"error", "timeout"}) by "split:name"; a config the process did
    not reach is absent."""
    args = [f"--seconds={seconds}"] + [f"{s}:{n}" + (f"={json.dumps(p)}" if p is not None else "")
                                        for s, n, p in configs]
    limit = PROCESS_SECONDS if _left[0] is None else min(PROCESS_SECONDS, _left[0])
    if limit <= 0:
        return {}
    t0 = time.monotonic()
    try:
        out = _server().ask(str(Path(folder).resolve()), args, limit)
    finally:
        if _left[0] is not None:
            _left[0] -= time.monotonic() - t0
    lines: dict[str, dict] = {}
    for ln in out.splitlines():
        try:
            d = json.loads(ln)
        except ValueError:
            continue
        if isinstance(d, dict) and "config" in d:
            lines[d["config"]] = d
    return lines


def block_fields(folder: Path, base: dict, fields: list[str]) -> list[str]:
    """The sizes among ``fields`` that the starting kernel's compile-time integers follow (a block of
    ``triton.next_power_of_2(n_cols)``, a ``tl.constexpr`` head size): each doubled alone from ``base``
    changes what some launch is compiled for. Growing them grows a program's block, past the shared
    memory of a GPU or its time, where the interpreter on the CPU sees neither. Sizes the probe could
    not answer for are not listed."""
    return [k for k, moved in _doubled(folder, base, fields, _answered).items() if moved]


def bounded_fields(folder: Path, base: dict, fields: list[str]) -> list[str]:
    """The sizes among ``fields`` (those ``block_fields`` found at a small config) that the compile-time integers
    no longer follow at ``base`` (a case grown into the timing window): doubled alone from it, each launch is
    compiled as before. A block that follows a size up to a bound its launcher sets (FLA's layer norm: rows a
    program of ``min(next_power_of_2(ceil(M / 128)), 4)``) is at that bound there, and grows no further with it.
    Only the launches are needed (two programs of a grid, at most, run): a call past its budget after them counts;
    a size the probe could not answer for is not listed."""
    return [k for k, moved in _doubled(folder, base, fields, _launched).items() if moved is False]


def _doubled(folder: Path, base: dict, fields: list[str],
             reached: Callable[[dict | None], bool]) -> dict[str, bool | None]:
    """For each of ``fields``: whether doubling it alone from ``base`` changes the compile-time integers of the
    starting kernel's launches, or None where the probe did not answer for it (``reached`` refused its line or
    the base's)."""
    trials = [("probe", "base", base)] + [("probe", f"x2-{k}", {**base, k: base[k] * 2}) for k in fields]
    got = probe_configs(folder, trials)
    first = got.get("probe:base")
    out: dict[str, bool | None] = {}
    for k in fields:
        line = got.get(f"probe:x2-{k}")
        out[k] = line["constexprs"] != first["constexprs"] if reached(first) and reached(line) else None  # type: ignore[index]
    return out


def compiled_as_cases(folder: Path, grown: list[str], cases: list[dict]) -> bool:
    """Whether each of the folder's seen configs named in ``grown`` (a source's cases grown into the timing
    window) launches the starting kernel with the compile-time integers of one of ``cases`` (the source's
    cases, as full configs): where so, the growth took no block of the kernel past what the source's own cases
    compile (a block of ``min(triton.next_power_of_2(n), 1024)`` that its largest case reached the bound of). A
    grown config whose programs ran past their budget counts: its integers are recorded as it launches; one
    that did not reach its launches does not."""
    trials = [("seen", n, None) for n in grown] + [("probe", f"case{i}", c) for i, c in enumerate(cases)]
    got = probe_configs(folder, trials)
    compiled = [got.get(f"probe:case{i}") for i in range(len(cases))]
    known = [line["constexprs"] for line in compiled if _launched(line)]
    for n in grown:
        line = got.get(f"seen:{n}")
        if not _launched(line) or line["constexprs"] not in known:   # type: ignore[index]
            return False
    return True


def _launched(line: dict | None) -> bool:
    """Did the config's call reach the starting kernel's launches, with no error (its compile-time integers
    recorded; its programs may have run past their budget)."""
    return line is not None and not line["error"] and not line.get("crashed") and bool(line["constexprs"])


def _answered(line: dict | None) -> bool:
    """Did the starting kernel run on the config: its line reached, no error, within its budget, the interpreter
    alive under it (a config it died under is not refuted, nor shown to run)."""
    return line is not None and not line["error"] and not line["timeout"] and not line.get("crashed")


def _params(item: dict) -> dict:
    return {k: v for k, v in item.items() if k not in ("name", "#")}


def _nearest_pow2(v: int, lo: int, hi: int, avoid: Callable[[int], bool]) -> int | None:
    """The power of two in [lo, hi] nearest ``v`` (on a log scale, the larger on a tie) that ``avoid`` allows."""
    cands = [1 << k for k in range(63) if lo <= 1 << k <= hi]
    cands.sort(key=lambda c: (abs(math.log2(c) - math.log2(max(v, 1))), -c))
    return next((c for c in cands if not avoid(c)), None)


def fit_drafts(folder: Path, d: Any, left_to_gpu: bool = False) -> tuple[list[str], list[str]]:
    """Probe the starting kernel on the configs of ``d`` (the Draft written to ``folder``); drafts it does not
    run on are dropped, or, where it needs a power of two for a size, that size is rounded to one (the shape
    space then offers only powers of two for it). ``d`` and the folder's task.yaml and config files are
    changed in place. Returns (what passed, what the author must look at). ``left_to_gpu``: the CPU cannot run
    the kernel (the interpreter dies under it): a probe that cannot answer is no finding, a GPU's check is."""
    from arena.authoring.importers.common import write_configs

    drafts = {"seen": [c for c in d.seen if str(c.get("#", "")).startswith("DRAFT")], "heldout": list(d.heldout)}
    own = [c for c in d.seen if c not in drafts["seen"]]
    wanted = [(s, c["name"], None) for s, items in (("smoke", d.smoke), ("seen", d.seen), ("heldout", d.heldout))
              for c in items]
    lines = probe_configs(folder, wanted)

    def error(split: str, name: str, found: dict[str, dict] = lines) -> str | None:
        line = found.get(f"{split}:{name}")
        return None if line is None else line["error"]   # not reached: not refuted

    broken = [f"{c['name']}: {error('smoke', c['name'])}" for c in d.smoke if error("smoke", c["name"])]
    spent = f"the {IMPORT_PROBES_SECONDS:g} s the import's probes may take were spent"
    out_of_time = _left[0] is not None and _left[0] <= 0
    if broken or not lines:
        if left_to_gpu:
            return [], []
        why = '; '.join(broken) or (spent if out_of_time else 'no answer')
        return [], [f"the starting kernel could not be probed on its drafts ({why}); "
                    "check that it runs on every seen and held-out config"]
    found = [f"the starting kernel does not run on seen config {c['name']}, a case of the source's test "
             f"({error('seen', c['name'])}): correct baseline.py or the signature" for c in own
             if error("seen", c["name"])]
    failing = [(s, c) for s, items in drafts.items() for c in items if error(s, c["name"])]
    unreached = sum(1 for s, n, _ in wanted if f"{s}:{n}" not in lines or lines[f"{s}:{n}"]["timeout"])
    crashed = sum(1 for line in lines.values() if line.get("crashed"))
    how = "Triton's interpreter on the CPU, the first and last programs of each launch"
    if not failing:
        late = (f"; {unreached} not refuted within {PROBE_SECONDS:.0f} CPU seconds"
                + (f" or before {spent}" if out_of_time else "") if unreached else "") + (
            f"; {crashed} not refuted where the interpreter died under a launch" if crashed else "")
        return [f"the starting kernel runs on every seen and held-out config ({how}{late})"], found
    space = d.shape_space
    pow2: list[str] = []
    if (any("power of 2" in (error(s, c["name"]) or "") for s, c in failing)
            or (d.spare_heldout and any(s == "heldout" for s, _ in failing))):
        # which sizes must be powers of two (for the drafts that need it, and the spares that may replace a
        # dropped one): each varied alone, to an odd value, from the test's first case
        base = _params(own[0] if own else d.seen[0])
        varied = [k for k, v in space.items() if isinstance(v, dict) and "min" in v and k in base]
        trials = {f"odd-{k}": {**base, k: base[k] + 1 if base[k] % 2 == 0 else base[k] + 2} for k in varied}
        got = probe_configs(folder, [("probe", n, p) for n, p in trials.items()])
        pow2 = [k for k in varied if "power of 2" in (error("probe", f"odd-{k}", got) or "")]
    for k in list(pow2):
        lo, hi = int(space[k]["min"]), int(space[k]["max"])
        choices = [1 << e for e in range(63) if lo <= 1 << e <= hi]
        if choices:
            space[k] = {"choices": choices}
        else:                           # no power of two in its range: the drafts that need one are dropped
            pow2.remove(k)
    taken = [_params(c) for c in d.seen + d.heldout]
    fixed: dict[str, dict] = {}
    for s, c in failing:
        if not pow2 or "power of 2" not in (error(s, c["name"]) or ""):
            continue
        p = _params(c)
        for k in pow2:
            rounded = _nearest_pow2(int(p[k]), int(space[k]["choices"][0]), int(space[k]["choices"][-1]),
                                    lambda v, k=k, p=p: {**p, k: v} in taken)
            if rounded is not None:
                p[k] = rounded
        if p not in taken:
            taken.append(p)
            fixed[f"{s}:{c['name']}"] = p
    retried = probe_configs(folder, [(key.split(":")[0], key.split(":")[1], p) for key, p in fixed.items()])
    dropped, rounded_names, dropped_kinds, dropped_seen = [], [], [], []
    for s, c in failing:
        key = f"{s}:{c['name']}"
        items = d.seen if s == "seen" else d.heldout
        again = error(s, c["name"], retried) if key in fixed else "not fitted"   # not reached: not refuted
        if key in fixed and again is None:
            note = f"{c.get('#', 'DRAFT')}; {', '.join(pow2)} rounded to a power of two, which the kernel needs"
            items[items.index(c)] = {"name": c["name"], **fixed[key], "#": note}
            rounded_names.append(key)
        else:
            items.remove(c)
            dropped.append(f"{key} ({error(s, c['name'])})")
            dropped_kinds += [c["name"]] if s == "heldout" else []
            dropped_seen += [c] if s == "seen" else []
    replaced = _replace_dropped(folder, d, dropped_kinds, {k: space[k]["choices"] for k in pow2})
    refilled = _refill_seen(folder, d, dropped_seen)
    write_configs(d, folder)
    passed = [f"the starting kernel was probed on every seen and held-out config ({how})"]
    if refilled:
        passed.append(f"{len(refilled)} seen config{'s' if len(refilled) != 1 else ''} drafted around the seen "
                      f"configs left, as the importer drafts them, in place of those dropped, each probed: "
                      f"{', '.join(refilled)}")
    if replaced:
        passed.append(f"{len(replaced)} dropped held-out draft{'s' if len(replaced) != 1 else ''} replaced by another "
                      f"of {'its' if len(replaced) == 1 else 'their'} kind the kernel runs on ({', '.join(replaced)})")
    if pow2:
        n = len(rounded_names)
        passed.append(f"it needs {', '.join(pow2)} to be a power of two: the shape space offers only those"
                      + (f", and {n} draft{'s' if n != 1 else ''} rounded to them ({', '.join(rounded_names)})"
                         if n else ""))
    if dropped:
        text = (f"{len(dropped)} draft{'s' if len(dropped) > 1 else ''} the starting kernel does not run on "
                f"dropped: {'; '.join(dropped)}; the shape space may still draw such configs: add the constraint")
        if len(d.heldout) < 4 or len(d.seen) < 3:
            found.append(text + ": write configs it runs on, or correct baseline.py")
        else:
            passed.append(text)
    return passed, found


def _refill_seen(folder: Path, d: Any, dropped: list[dict]) -> list[str]:
    """Where the probe dropped seen drafts (``dropped``) and fewer than 3 seen configs are left, those left topped up
    to 3 as the importer drafted them (``d.top_up_seen``: drafts inside the timing window, a size of a seen config
    times 3/2, 2, 1/2, 5/4, 3/4, each accepted by the reference), none a dropped one's sizes, each one the starting
    kernel was probed on and runs on (a grown case whose call allocates past the working allowance leaves the ones
    beside it that do not). Added to ``d.seen``; returns their names with what they were drafted from."""
    top_up = getattr(d, "top_up_seen", None)
    short = 3 - len(d.seen)
    if short <= 0 or top_up is None or not d.seen or not dropped:
        return []
    gone = [_params(c) for c in dropped]
    taken = {c["name"] for c in [*d.seen, *d.heldout]}
    tries = []
    # more than are missing: the probe may refuse some as it refused those dropped
    for c in top_up(list(d.seen), want=len(d.seen) + 3 * short)[len(d.seen):]:
        if _params(c) in gone or _params(c) in [_params(t) for t in tries]:
            continue
        name = c["name"] if c["name"] not in taken else f"{c['name']}-{len(taken)}"
        taken.add(name)
        tries.append({**c, "name": name})
    got = probe_configs(folder, [("seen", c["name"], _params(c)) for c in tries]) if tries else {}
    added = []
    for c in tries:
        line = got.get(f"seen:{c['name']}")
        if len(added) < short and line is not None and not line["error"]:
            d.seen.append(c)
            added.append(f"{c['name']} ({str(c.get('#', '')).removeprefix('DRAFT: ')})")
    return added


def _replace_dropped(folder: Path, d: Any, kinds: list[str], pow2: dict[str, list[int]]) -> list[str]:
    """For each held-out kind dropped (``kinds``: the drafts' names), the first of its spare drafts
    (``d.spare_heldout``: the same kind on another size; ``pow2``: sizes rounded to a power of two among
    their choices) that the reference and the starting kernel run on, added to ``d.heldout``. Returns
    what was added, as "name (why)"."""
    taken = [_params(c) for c in d.seen + d.heldout]
    tries = []
    for c in d.spare_heldout:
        p = _params(c)
        for k, choices in pow2.items():
            p[k] = _nearest_pow2(int(p[k]), choices[0], choices[-1], lambda v: False) or p[k]
        if c["name"] in kinds and p not in taken and p not in [_params(t) for t in tries]:
            tries.append({"name": c["name"], **p, "#": c.get("#", "DRAFT")})
    if not tries:
        return []
    got = probe_configs(folder, [("heldout", f"{c['name']}#{i}", _params(c)) for i, c in enumerate(tries)])
    added = []
    for i, c in enumerate(tries):
        line = got.get(f"heldout:{c['name']}#{i}")
        if c["name"] in kinds and _answered(line):
            kinds = [k for k in kinds if k != c["name"]]
            d.heldout.append(dict(c))
            added.append(f"{c['name']} ({str(c.get('#', '')).removeprefix('DRAFT: ')})")
    return added


def main(argv: list[str]) -> None:
    folder = Path(argv[0]).resolve()
    wanted: list[tuple[str, str, dict | None]] = []
    seconds = PROBE_SECONDS
    for a in argv[1:]:
        if a.startswith("--seconds="):
            seconds = float(a.split("=", 1)[1])
            continue
        head, _, params = a.partition("=")
        split, _, name = head.partition(":")
        wanted.append((split, name, json.loads(params) if params else None))
    _probe(folder, wanted, seconds)


if __name__ == "__main__":
    serve() if sys.argv[1:] == ["--serve"] else main(sys.argv[1:])

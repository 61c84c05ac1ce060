"""What the importers share: drafting a task folder (its YAML, configs, shape space and
roofline formulas), fitting formulas over a problem's constants, and reading Python sources."""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import itertools
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Iterator, Sequence

import torch
import yaml
from torch.utils._python_dispatch import TorchDispatchMode

from arena.errors import (
    ArenaError,
    ArenaException,
    Interruption,
    available_memory_bytes,
    data_limited,
    interrupted_after,
    machine_memory_bytes,
    without_frames,
)
from arena.taskdef import formula
from arena.taskdef.loader import CATEGORIES, DEFAULT_TASKS_DIR, SCHEMA_DIR, validate_task_dir
from arena.taskdef.shapes import DTYPE_BYTES, DrawLimits, tensor_bytes

DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
               torch.float8_e4m3fn: "float8_e4m3fn", torch.float8_e5m2: "float8_e5m2", torch.int8: "int8",
               torch.uint8: "uint8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64",
               torch.bool: "bool"}
SMOKE_ELEMENTS = 2**14          # a smoke config moves at most about this many elements per tensor set
MIN_VARIED = 8                  # constants below this (kernel sizes, strides, groups) are kept in drafts
AXIS = re.compile(r"(?i)(\w+_)?(dim|axis)")   # a small constant of this name picks an axis
# A drafted config moves at most the bytes of inputs and outputs a random draw may (arena.taskdef.shapes):
# the corpus's largest config moves 3.9 GiB and is checked on an H100 beside 11 other evaluations, while
# KernelBench level 1's own sizes (a 4096 x 393216 fp32 elementwise op: 12.9 GB; argmin's fp64 reference
# alone asked for 32 GiB) ran out of memory there in the reference or the comparison (HARNESS_ERROR).
MAX_CONFIG_BYTES = int(DrawLimits().max_tensor_bytes)
# and at most the work a random draw may need: on an H100 KernelBench's fp32 3D transposed convolutions past it took
# 51-111 ms, past the timing window's 50 ms
MAX_CONFIG_FLOPS = DrawLimits().max_flops
SCALED_FLOPS = MAX_CONFIG_FLOPS / 4
# a source's sizes past this are scaled down to it, so that drafts up to 4 times their size stay within the bound
SCALED_BYTES = MAX_CONFIG_BYTES // 4
# The FLOP bounds are a matrix product's (fp32, 46-52 TFLOP/s on an H100). KernelBench's fp32 convolutions ran at
# 2.3-16 TFLOP/s there (levels 1-3 drafted by the importer, 2026-11-26: 3D and transposed ones, grouped ones in
# ShuffleNet, an aspect ratio changed 4 times; the slowest draft 109 ms): a convolution's FLOP counts this many.
SLOW_CALLS = {re.compile(r"(?i)conv(_?transpose)?[123]d|convtranspose[123]d"): 20.0}
# A starting kernel written by hand in HIP (gpumode's, translated for the task's ABI) is no vendor library: on an H200
# (2026-12-02) AKA's SimpleMatmulModule, a tiled fp32 product in HIP, ran at 7.8-8.2 TFLOP/s, and its drafts of 464
# and 1,100 GFLOP took 57 and 134 ms, past the timing window's 50 ms. Its importer lists this among the calls, and its
# FLOPs count this many times against the bounds.
HIP_STARTING_KERNEL = "a HIP starting kernel written by hand"
SLOW_CALLS[re.compile(re.escape(HIP_STARTING_KERNEL))] = 6.0
# what each of those is slow at, said where the bounds are
SLOW_WHY = {HIP_STARTING_KERNEL: "one ran fp32 products at 1/6 of the rate the bounds are set at (8 TFLOP/s on an "
                                  "H200)"}


# A recurrence runs its steps one after another, whatever their FLOPs: on an H200 (2026-11-28, KernelBench level 3's
# six-layer LSTMs and GRUs, hidden size 256, batch 10-40, 128-1,026 steps, eight evaluations sharing the GPU) a
# layer's step took 14-37 us one way, 28-53 us both ways; the problems' own 512 steps took 48-107 ms, past the timing
# window. A config's serial time is taken as its steps x layers x directions x this, and held to the window's top
# (``MAX_SERIAL_S``; a base scaled down to a quarter of it, as for the FLOPs).
RECURRENT_STEP_S = 25e-6
MAX_SERIAL_S = 0.05


def recurrent_steps(model: Any) -> Callable[[], int]:
    """Hooks on ``model``'s recurrent modules that count the steps its forward runs one after
    another (a layer's step in one direction each: sequence length x layers x directions for an
    ``nn.RNN``/``LSTM``/``GRU`` call, one for a cell's); returns the count so far."""
    count = [0]

    def rnn(module: Any, args: tuple) -> None:
        x = args[0] if args else None
        if isinstance(x, torch.nn.utils.rnn.PackedSequence):
            steps = len(x.batch_sizes)
        elif isinstance(x, torch.Tensor):
            steps = x.shape[1] if x.dim() == 3 and module.batch_first else x.shape[0]
        else:
            return
        count[0] += int(steps) * module.num_layers * (2 if module.bidirectional else 1)

    def cell(module: Any, args: tuple) -> None:
        count[0] += 1

    for m in model.modules():
        if isinstance(m, torch.nn.RNNBase):
            m.register_forward_pre_hook(rnn)
        elif isinstance(m, torch.nn.RNNCellBase):
            m.register_forward_pre_hook(cell)
    return lambda: count[0]


def work_factor(calls: Iterable[str]) -> tuple[float, str | None]:
    """How many of the FLOP bounds' FLOPs one FLOP of a reference making ``calls`` (module types, functions) costs,
    and the call that makes it so (None where it is 1)."""
    worst: tuple[float, str | None] = (1.0, None)
    for call in calls:
        for pattern, factor in SLOW_CALLS.items():
            if pattern.search(call) and factor > worst[0]:
                worst = (factor, call)
    return worst


class ImportStop(ArenaError):
    """The problem cannot become a task as it is (one line naming the file and what is wrong)."""


@dataclass
class ImportResult:
    folder: Path
    source: Path
    problems: list[ArenaError]
    decisions: list[str]
    checks: list[str] = field(default_factory=list)
    check_problems: list[str] = field(default_factory=list)   # what the importer's own check found

    @property
    def ok(self) -> bool:
        return not self.problems

    def report(self) -> str:
        lines = [f"wrote {self.folder} (from {self.source})"]
        if self.problems:
            lines.append(f"arena tasks validate: {len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}")
            lines += [f"  - {p}" for p in self.problems]
        else:
            lines.append("arena tasks validate: ok")
        lines += [f"checked: {c}" for c in self.checks]
        lines.append("what you must still decide:")
        lines += [f"  {i}. {d}" for i, d in enumerate(self.decisions, 1)]
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# shared: formulas found by probing


PER_ELEMENT_MOST = 2**16     # the largest constant factor of a count per element (2 * 7 * 7 * 7 for a 7^3 kernel)


class _NoValue(ArenaException):
    pass


class ProbeTimeout(Interruption):
    """A probe's run went past the CPU seconds it was given (``probe_limits``): an Interruption, which the
    reference's own ``except Exception`` does not swallow."""


def literal(value: Any) -> str | None:
    """Python source for a value a run read (a test's constant), or None where it has none: an ``IntEnum`` or
    ``IntFlag`` member is written as its number (it compares equal to it), a member of another enum or any other
    object is not a literal (its repr, ``<RotateStyle.GPTJ: 1>``, is not code)."""
    if isinstance(value, bool) or value is None or isinstance(value, str) and type(value) is str:
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        return repr(float(value)) if math.isfinite(value) else f"float({str(float(value))!r})"
    if isinstance(value, (tuple, list)):
        items = [literal(v) for v in value]
        if any(i is None for i in items):
            return None
        inner = ", ".join(items) + ("," if isinstance(value, tuple) and len(items) == 1 else "")
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, dict):
        pairs = [(literal(k), literal(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    return None


class ProbeOverMemory(ArenaException):
    """A probe's run asked for more host memory than ``probe_limits`` gives it: the config is refused, as one the
    original does not accept (an Exception, as the allocator's own refusal is)."""


# a probe's run cut short by its limits (``probe_limits``): its CPU seconds or its host memory; what it would have
# read is not read here (a GPU's check shows it), which is no refusal of the config by the original
PROBE_CUT = (ProbeTimeout, ProbeOverMemory)


def probe_memory_bytes() -> int:
    """The host memory a probe's run may take beyond what the import holds as it starts: twice the bytes a config
    may move (the test's tensors and the copies the reference is handed; its temporaries, with them, are held to
    ``MAX_CONFIG_BYTES`` where they are counted), and at most a quarter of the memory the machine has free as the run
    starts (``available_memory_bytes``: the test suite runs an import per core, and a test may start another in a
    process of its own; a probe that holds what it was given and starts another is given a quarter of what is left).
    A reference run on the CPU unwatched (timed as the harness runs it) has no count of its temporaries: a test
    worker whose probes ran so reached 17 GB and was killed by the kernel's OOM killer; a bound of a quarter of the
    machine's whole memory let two workers reach it together."""
    return int(min(2 * MAX_CONFIG_BYTES, available_memory_bytes(16 * 2**30) // 4))


@contextlib.contextmanager
def probe_limits(seconds: float) -> Iterator[None]:
    """A probe's run held to ``seconds`` more of this process's CPU time, interrupted past it with ``ProbeTimeout``
    (a reference that loops in Python over every element runs for hours at the sizes a probe tries; the budgets
    counted between probes do not stop one run), and to ``probe_memory_bytes()`` more host memory, refused past it
    with ``ProbeOverMemory``; the process in all to half the machine's memory. In the main thread only (a signal's
    handler runs there, and the memory limit is the process's); elsewhere, no limit."""
    if seconds <= 0:
        raise ProbeTimeout("no CPU time left")
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    extra = probe_memory_bytes()
    with data_limited(extra, lambda: ProbeOverMemory(
            f"more than {extra / 1e9:.3g} GB of host memory in one run (a probe's bound: twice the "
            f"{MAX_CONFIG_BYTES / 1e9:g} GB a config may move, or a quarter of the memory this machine had free as "
            "it started; the process half of the machine's in all)"), at_most=machine_memory_bytes(16 * 2**30) // 2), \
            interrupted_after(seconds, lambda: ProbeTimeout(f"more than {seconds:.3g} CPU seconds"), cpu=True):
        yield


def on_one_thread(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run with torch's operators on one thread. The importers' budgets are this process's CPU seconds, which
    count the time of every thread: an operator split over the cores counts their waits for one another too, and how
    long those are depends on the machine and on what else runs there (on 2 cores beside two other imports, a test's
    statements and reference that took 0.95 CPU seconds at one size took 16.5 at twice it), so one import grew its
    cases to other sizes from run to run, and would on a machine of more cores."""
    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn(*args, **kwargs)
        finally:
            torch.set_num_threads(before)
    return wrapped


def once_per_config(probe: Callable[[dict], Any]) -> Callable[[dict], Any]:
    """``probe`` run once per config (its parameters, in any order): what it returned, or the exception it raised
    (a config the original does not accept; ``ProbeTimeout``, one it ran out of time on), kept without its frames
    (``without_frames``: they held the refused config's tensors)."""
    runs: dict[tuple, Any] = {}

    def at(cfg: dict) -> Any:
        key = tuple(sorted(cfg.items()))
        if key not in runs:
            try:
                runs[key] = probe(cfg)
            except (Exception, ProbeTimeout) as exc:  # noqa: BLE001 - the original does not accept this config
                runs[key] = without_frames(exc)
        return runs[key]

    return at


def shapes_only(value: Any) -> Any:
    """``value`` as a probe keeps it for its shapes: every tensor in it (in lists, tuples and dicts, and a module's
    parameters, buffers and tensor attributes, the module changed in place) on the meta device, the same shape and
    dtype with no memory. A probe on the CPU runs at full size; the Fitter and the drafts' checks keep every probe's
    run, and kept whole, those of configs of hundreds of MB held many GB."""
    if isinstance(value, torch.Tensor):
        return value if value.device.type == "meta" else torch.empty_like(value, device="meta")
    if isinstance(value, torch.nn.Module):
        value.to("meta")
        for m in value.modules():
            for k, v in list(vars(m).items()):
                if isinstance(v, torch.Tensor) and v.device.type != "meta":
                    setattr(m, k, torch.empty_like(v, device="meta"))
        return value
    if isinstance(value, (list, tuple)):
        items = [shapes_only(v) for v in value]
        return type(value)(items) if type(value) in (list, tuple) else items
    if isinstance(value, dict):
        return {k: shapes_only(v) for k, v in value.items()}
    return value


def _fused_rnn_flops(input_shape: Any, w_ih: Any, w_hh: Any, *args: Any, **kwargs: Any) -> int:
    """FLOPs of one layer and direction of a recurrent layer fused into one operator on the CPU (an LSTM's
    ``mkldnn_rnn_layer``): at each step of each sequence, the products of its input and of its hidden state with
    their weights (gates x input size, gates x hidden size), a multiply and an add each."""
    steps = math.prod(input_shape) // max(1, input_shape[-1])
    return 2 * steps * (math.prod(w_ih) + math.prod(w_hh))


def flop_counter() -> Any:
    """PyTorch's FLOP counter, which also counts the recurrent layers PyTorch runs fused on the CPU (it has no
    formula for them, and counted a 6-layer LSTM as nothing: a task of 31 GFLOP read as memory-bound, its 18 MB
    below the timing window)."""
    from torch.utils.flop_counter import FlopCounterMode

    fused = getattr(torch.ops.aten, "mkldnn_rnn_layer", None)
    return FlopCounterMode(display=False, custom_mapping={fused: _fused_rnn_flops} if fused is not None else None)


# A reference's cost where it is judged by a run on the CPU (its operations a chunk or a value at a time), counted
# rather than timed: how long a run takes on the CPU moves from run to run (a 16x16 triangular solve over 98,304
# steps took 1.85-2.69 CPU seconds on one machine, alone), and a growth judged on it stopped at one size in one
# import and at another in the next. What a run does, its calls of torch, its values read on the host and the bytes
# its calls make, is the same on every machine and every run; its cost is that count at a fixed pace, the seconds a
# GPU's run of it takes (each call a launch, each read a wait for the device). Calls that read only a tensor's
# metadata (its shape, its strides) do no work and are not counted. The pace was set from an H200's runs of 13 vLLM
# references that loop over chunks or values (117 configs of 10 ms or more, up to 5.2 s; `scripts/reference_pace.py`,
# reports/validation/2026-12-03-cuda-h200-importers-aka-counted-calls.md): their least-squares fit is 4.0 us a call,
# 9.4 a read and 0.23 ns a byte; rounded as below, the estimate is 0.28-1.8 times the seconds measured, 0.86 times
# at the median (a cumulative sum over 64-step chunks 0.66-1.24 times, 16x16 triangular solves and merges 0.28-0.7)
CALL_SECONDS = 4e-6        # a call of torch (an operator, a slice, a copy): its launch and its Python around it
HOST_READ_SECONDS = 10e-6  # a value read on the host: the wait for the device, and the copy
BYTE_SECONDS = 0.25e-9     # a byte a call makes (the host's work where a reference copies its inputs there first)
# the calls that do no work: a tensor's metadata (a property read through a descriptor is one of them too)
_METADATA_CALLS = frozenset({"dim", "ndimension", "size", "numel", "nelement", "stride", "__len__", "is_contiguous",
                             "data_ptr", "element_size", "storage_offset", "get_device", "is_floating_point",
                             "is_complex", "is_signed", "__get__", "__format__", "__repr__", "__hash__"})
_HOST_READ_CALLS = frozenset({"item", "tolist", "__int__", "__float__", "__bool__", "__index__", "__complex__",
                              "numpy"})


@dataclass
class CallCost:
    """What a counted run did (``counted_calls``): its calls of torch, the values it read on the host and the bytes
    of the tensors its calls made, and the seconds of a GPU's run those come to at the fixed pace."""
    calls: int = 0
    host_reads: int = 0
    bytes: int = 0

    @property
    def seconds(self) -> float:
        return self.calls * CALL_SECONDS + self.host_reads * HOST_READ_SECONDS + self.bytes * BYTE_SECONDS


@contextlib.contextmanager
def counted_calls(limit: float | None = None, cost: CallCost | None = None) -> Iterator[CallCost]:
    """The calls of torch made in the block, counted (into ``cost``, or a ``CallCost`` of its own); past ``limit``
    estimated seconds, the run is stopped with ``ProbeTimeout`` at the call that passes it, the same call on every
    machine. A loop in Python that calls nothing of torch is not stopped here: ``probe_limits`` bounds its time."""
    from torch.overrides import TorchFunctionMode

    cost = CallCost() if cost is None else cost

    def made(value: Any) -> int:
        if isinstance(value, torch.Tensor):
            return value.nbytes if value._base is None and value.device.type != "meta" else 0
        if isinstance(value, (tuple, list)):
            return sum(made(v) for v in value)
        return 0

    class Count(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            name = getattr(func, "__name__", "")
            if name in _METADATA_CALLS:
                return out
            if name in _HOST_READ_CALLS:
                cost.host_reads += 1
            else:
                cost.calls += 1
                cost.bytes += made(args[2]) if name == "__setitem__" and len(args) > 2 else made(out)
            if limit is not None and cost.seconds > limit:
                raise ProbeTimeout(f"an estimated {cost.seconds:.3g} s of a GPU's run ({cost.calls} calls, "
                                   f"{cost.host_reads} values read on the host) and more")
            return out

    with Count():
        yield cost


def peak_bytes_mode() -> Any:
    """A dispatch mode that measures the bytes of the tensors made under it that are alive at once, at most
    (``.peak``): a forward pass's temporaries and outputs, run on the meta device at any size without memory
    (an attention's score matrix, which no input or output shows). A storage is counted once, whatever views it
    has, until the last tensor on it is gone."""
    import weakref

    from torch.utils._pytree import tree_leaves

    class PeakBytes(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.tensors: dict[int, int] = {}
            self.live = 0
            self.peak = 0

        def _gone(self, key: int, n: int) -> None:
            self.tensors[key] -= 1
            if not self.tensors[key]:
                del self.tensors[key]
                self.live -= n

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor):
                    storage = t.untyped_storage()
                    key, n = storage._cdata, storage.nbytes()
                    if key not in self.tensors:
                        self.tensors[key] = 0
                        self.live += n
                        self.peak = max(self.peak, self.live)
                    self.tensors[key] += 1
                    weakref.finalize(t, self._gone, key, n)
            return out

    return PeakBytes()


def read_bytes_mode(named: dict[str, Any]) -> Any:
    """A dispatch mode that counts the bytes the operations under it read of each of the ``named`` tensors (or
    write into them), views of them included (``.read``: name -> bytes, a tensor read twice counted twice): an
    operation handed a view reads that view's bytes; one that picks elements by index (``x[idx]``, ``gather``,
    ``index_select``, ``.item()``) reads what it picks, its result's bytes, and one that writes elements by index
    (``x[idx] = v``) writes its values' bytes; a view, or a tensor made like another (``empty_like``), reads nothing.
    A copy of one (``clone``) is read as it is, its reads counted as the tensor's; copied back into it whole (a
    test's reference updating a copy of a cache, or of logits, then the harness's buffer from it) the copy and the
    copy back count nothing: what was read or changed of the copy in between is what the tensor gave.
    What a reference reads of a buffer bounds what a kernel must: vLLM's slot mappings read one block number a token
    of a block table of 131,072 a request, and a roofline that counts the table whole grew the configs along it, into
    a window their GPU runs of 4 us were far below."""
    import weakref

    from torch.utils._pytree import tree_leaves

    aten = torch.ops.aten
    picking = {aten.index.Tensor, aten.index_select.default, aten.gather.default, aten.embedding.default,
               aten.take.default, aten._local_scalar_dense.default, aten.masked_select.default}
    placing = {aten.index_put_.default, aten.index_put.default, aten._index_put_impl_.default,
               aten.scatter_.src, aten.scatter.src, aten.scatter_.value, aten.scatter.value,
               aten.scatter_add_.default, aten.scatter_add.default, aten.index_copy_.default,
               aten.index_copy.default, aten.index_fill_.int_Scalar, aten.index_fill.int_Scalar,
               aten.masked_fill_.Scalar, aten.masked_fill.Scalar}
    shaped = {aten.empty_like.default, aten.zeros_like.default, aten.ones_like.default, aten.full_like.default,
              aten.new_empty.default, aten.new_empty_strided.default, aten.new_zeros.default, aten.new_ones.default,
              aten.new_full.default, aten.randn_like.default, aten.rand_like.default, aten.randint_like.default}
    copying = {aten.clone.default, aten._to_copy.default}

    def key(t: torch.Tensor) -> int:
        return t.untyped_storage()._cdata

    class ReadBytes(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.names = {key(t): n for n, t in named.items() if isinstance(t, torch.Tensor)}
            self.counted = {n: 0 for n, t in named.items() if isinstance(t, torch.Tensor)}
            self.copies: dict[int, list] = {}     # a copy's storage -> [the tensor's name, the copy's bytes]

        @property
        def read(self) -> dict[str, int]:
            return {n: max(0, v) for n, v in self.counted.items()}

        def name(self, t: torch.Tensor) -> str | None:
            k = key(t)
            return self.names.get(k) or (self.copies[k][0] if k in self.copies else None)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            out = func(*args, **(kwargs or {}))
            if func.is_view or func in shaped:
                return out
            given = [t for t in tree_leaves((args, kwargs or {})) if isinstance(t, torch.Tensor)]
            if func is aten.copy_.default and len(given) == 2:
                dst, src = (self.name(t) for t in given)
                copy = self.copies.get(key(given[1]))
                if dst is not None and key(given[0]) in self.names and copy is not None and copy[0] == dst \
                        and given[1].numel() == given[0].numel() == named[dst].numel():
                    self.counted[dst] -= copy[1]       # copied back whole: the copy read nothing of it either
                    copy[1] = 0
                    return out
            for i, t in enumerate(given):
                name = self.name(t)
                if name is None:
                    continue
                if i == 0 and func in picking:
                    n = (t.element_size() if func is aten._local_scalar_dense.default else
                         sum(o.nbytes for o in tree_leaves(out) if isinstance(o, torch.Tensor)))
                elif i == 0 and func in placing:      # as many as its indices, its values or its mask
                    n = t.element_size() * max([v.numel() for v in given[1:]] or [1])
                else:
                    n = t.numel() * t.element_size()
                self.counted[name] += n
                if i == 0 and func in copying and isinstance(out, torch.Tensor):
                    k = key(out)
                    self.copies[k] = [name, n]
                    # forgotten with it: a storage made later may take its address
                    weakref.finalize(out, self.copies.pop, k, None)
            return out

    return ReadBytes()


def _solve(rows: list[list[Fraction]]) -> list[Fraction] | None:
    """The one solution of the linear equations ``rows`` (each its coefficients and, last, its value), by
    Gaussian elimination; None where they have none or more than one."""
    rows = [list(r) for r in rows]
    n = len(rows[0]) - 1
    r = 0
    for col in range(n):
        pick = next((i for i in range(r, len(rows)) if rows[i][col] != 0), None)
        if pick is None:
            return None     # a term no probe tells apart from the others
        rows[r], rows[pick] = rows[pick], rows[r]
        rows[r] = [x / rows[r][col] for x in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][col] != 0:
                f = rows[i][col]
                rows[i] = [x - f * y for x, y in zip(rows[i], rows[r])]
        r += 1
    if any(row[n] != 0 for row in rows[r:]):
        return None         # no solution gives every probe
    return [rows[i][n] for i in range(n)]


class Fitter:
    """Formulas over named parameters for values a probe computes. ``probe(params)`` runs the
    problem with those parameter values (it may raise: that parameter set is not valid);
    each int parameter is doubled and tripled, each float one doubled, one at a time."""

    def __init__(self, base: dict[str, Any], probe: Callable[[dict[str, Any]], Any]):
        self.base = dict(base)
        self.probe = probe
        self._cache: dict[tuple, Any] = {}
        # an axis (``dim = 1``, ``reduce_dim = 1``) is not a size: doubling it reduces another axis, and two
        # such probes fit any line (``4095 * reduce_dim - 4094``), so it is never probed
        self.ints = [k for k, v in base.items() if type(v) is int and v >= 1
                     and not (v < MIN_VARIED and AXIS.fullmatch(k))]
        self.floats = [k for k, v in base.items() if type(v) is float and v != 0.0]
        self.used: set[str] = set()
        self.inexact: list[str] = []
        self.unwritten: list[tuple[str, list[str]]] = []     # (what, the constants it changes with) of each inexact
        self.unwritable: set[str] = set()      # constants a dimension changes with in a way no formula here writes
        self.out_of_time: set[tuple] = set()    # the probes that ran out of CPU time (not a refusal of the sizes)

    def run(self, overrides: dict[str, Any] | None = None) -> Any:
        key = tuple(sorted((overrides or {}).items()))
        if key not in self._cache:
            try:
                self._cache[key] = self.probe({**self.base, **(overrides or {})})
            except ProbeTimeout:
                self._cache[key] = None
                self.out_of_time.add(key)
            except Exception:  # noqa: BLE001 - a parameter set the problem does not accept
                self._cache[key] = None
        return self._cache[key]

    def _get(self, get: Callable[[Any], Any], run: Any) -> Any:
        if run is None:
            raise _NoValue()
        try:
            return get(run)
        except Exception as exc:  # noqa: BLE001
            raise _NoValue() from exc

    def _at(self, name: str, factor: int, get: Callable[[Any], Any]) -> Any:
        return self._get(get, self.run({name: self.base[name] * factor}))

    def _at_value(self, name: str, value: int, get: Callable[[Any], Any]) -> Any:
        return self._get(get, self.run({name: value}))

    def _affecting(self, get: Callable[[Any], Any], v0: Any) -> list:
        """The integer constants whose doubling changes the value ``get`` reads."""
        affecting = []
        for c in self.ints:
            try:
                if self._at(c, 2, get) != v0:
                    affecting.append(c)
            except _NoValue:
                continue
        return affecting

    def int_formula(self, get: Callable[[Any], Any], what: str = "") -> str | int:
        """A formula for an integer value (a dimension, an attribute), or the number itself
        (recorded as inexact when some parameter changes it in a way not written)."""
        v0 = self._get(get, self.run())
        v0 = int(v0)
        affecting = self._affecting(get, v0)
        if not affecting:
            unseen = [c for c in self.ints if ((c, self.base[c] * 2),) in self.out_of_time]
            if what and unseen:   # not shown constant: the probes that would show what changes it ran out of time
                self.unwritten.append((what, unseen))
                self.inexact.append(f"{what} is {v0} here; the probes with {', '.join(unseen)} doubled ran out of "
                                    "CPU time, so whether it changes with them is not known: kept as the number; "
                                    "write it as a formula if it does")
            return v0
        text = None
        if len(affecting) == 1:
            text = self._linear(affecting[0], get, v0)
        if text is None:
            text = self._monomial(affecting, get, v0)
        if text is None and len(affecting) > 1:
            text = self._affine(affecting, get, v0)
        if text is None and 2 <= len(affecting) <= 5:
            text = self._window(affecting, get, v0)
        if text is None and len(affecting) > 1:
            text = self._quotient(affecting, get, v0)
        if text is None and 2 <= len(affecting) <= 4:
            # a role whose constant cannot be doubled (a padding past half the kernel) changes the size too
            fixed = [c for c in self.ints if c not in affecting and self.run({c: self.base[c] * 2}) is None]
            for extra in fixed[:3]:
                text = self._window(affecting + [extra], get, v0)
                if text is not None:
                    break
        if text is None and 2 <= len(affecting) <= 4:
            text = self._blocks(affecting, get, v0)
        if text is None and 2 <= len(affecting) <= 3:
            text = self._multilinear(affecting, get, v0)
        if text is None:
            if what:
                self.unwritten.append((what, list(affecting)))
                self.unwritable.update(affecting)
                self.inexact.append(f"{what} is {v0} here but changes with {', '.join(affecting)} in a way the "
                                    "importer cannot write: kept as the number; write it as a formula")
            return v0
        self.used.update(formula.names_in(text))
        return text

    def _linear(self, c: str, get: Callable, v0: int) -> str | None:
        v = self.base[c]
        try:
            v2 = self._at(c, 2, get)
        except _NoValue:
            return None
        try:
            v3 = self._at(c, 3, get)
        except _NoValue:
            v3 = None
        a = Fraction(int(v2) - v0, v)
        b = v0 - a * v
        if a <= 0 or b.denominator != 1 or (a.numerator != 1 and a.denominator != 1):
            return None
        b = int(b)

        def f(x: int) -> int:
            return x * a.numerator // a.denominator + b

        if f(v) != v0 or f(2 * v) != v2 or (v3 is not None and f(3 * v) != v3):
            return None
        q, off = a.denominator, 0
        if q > 1:
            # a quotient's phase: probes at multiples of q cannot tell ``x // 4 - 1`` from ``(x - 3) // 4``
            # (a strided window over an 11-wide kernel), the values just above them can
            near = {}
            for i in range(1, q):
                try:
                    near[v + i] = int(self._at_value(c, v + i, get))
                except _NoValue:
                    continue
            if near:
                known = {v: v0, 2 * v: int(v2), **({3 * v: int(v3)} if v3 is not None else {}), **near}
                fits = [(o, v0 - (v + o) // q) for o in range(q)
                        if all((x + o) // q + v0 - (v + o) // q == y for x, y in known.items())]
                if not fits:
                    return None
                # one phase fits where every residue was probed; where some could not be, the plain quotient
                # if it is among those that fit
                plain = next((fb for fb in fits if fb[0] == 0), None)
                off, b = fits[0] if len(fits) == 1 or plain is None else plain
        term = c if a == 1 else f"{a.numerator} * {c}" if q == 1 else f"({c} + {off}) // {q}" if off else f"{c} // {q}"
        return term + (f" + {b}" if b > 0 else f" - {-b}" if b < 0 else "")

    def _blocks(self, names: list[str], get: Callable, v0: int) -> str | None:
        """v = k * (the others' product) * ceil(a / b) + c: a cache of whole blocks, ``num_seqs * ceil(seq_len /
        block_size)`` of them and a few spare (vLLM's paged attention tests: ``num_seqs * num_blocks_per_seq + 4``),
        each pair of ``names`` tried as the length and the block, k and c read off the base and one probe, checked
        on every probe made (each size doubled and tripled, all of them doubled together)."""
        probes = self._probes(names, get, v0)
        for a, b in itertools.permutations(names, 2):
            rest = [c for c in names if c not in (a, b)]
            text = " * ".join([*rest, f"(({a} - 1) // {b} + 1)"])

            def term(values: dict[str, int], text: str = text) -> int:
                return int(formula.evaluate(text, values))

            t0 = term(self.base)
            other = next(((t, v) for p, v in probes if (t := term(p)) != t0), None)
            if other is None:
                continue
            k = Fraction(other[1] - v0, other[0] - t0)
            off = v0 - k * t0
            if k <= 0 or k.denominator != 1 or off.denominator != 1:
                continue
            if all(int(k) * term(p) + int(off) == v for p, v in probes):
                out = text if k == 1 else f"{int(k)} * {text}"
                return out + (f" + {int(off)}" if off > 0 else f" - {-int(off)}" if off < 0 else "")
        return None

    def _affine(self, names: list[str], get: Callable, v0: int) -> str | None:
        """v = sum(a_c * c) + b with integer a_c (a convolution's output size: h - k + 3),
        checked with each parameter tripled and with all of them doubled together."""
        coef = {}
        try:
            for c in names:
                a = Fraction(int(self._at(c, 2, get)) - v0, self.base[c])
                if a.denominator != 1 or a == 0:
                    return None
                coef[c] = int(a)
        except _NoValue:
            return None
        b = v0 - sum(a * self.base[c] for c, a in coef.items())

        def f(values: dict[str, int]) -> int:
            return sum(a * values[c] for c, a in coef.items()) + b

        for c in names:
            try:
                if self._at(c, 3, get) != f({**self.base, c: 3 * self.base[c]}):
                    return None
            except _NoValue:
                pass
        both = {c: 2 * self.base[c] for c in names}
        try:
            if self._get(get, self.run(both)) != f({**self.base, **both}):
                return None
        except _NoValue:
            pass
        terms = []
        for c, a in coef.items():
            mag = c if abs(a) == 1 else f"{abs(a)} * {c}"
            terms.append(("- " if a < 0 else "+ ") + mag)
        text = " ".join(terms)
        text = text[2:] if text.startswith("+ ") else "-" + text[2:] if text.startswith("- ") else text
        if text.startswith("-"):
            return None
        return text + (f" + {b}" if b > 0 else f" - {-b}" if b < 0 else "")

    # a sliding window's output size (convolution, pooling; PyTorch's docs for Conv2d / ConvTranspose2d):
    # each template is a function of the roles size, kernel, stride, padding, dilation, and its text
    WINDOWS = (
        (lambda x, k, s, p, d, o: (x + 2 * p - d * (k - 1) - 1) // s + 1 if o == 0 else None, "conv"),
        (lambda x, k, s, p, d, o: (x - 1) * s - 2 * p + d * (k - 1) + o + 1, "transposed"),
    )

    @staticmethod
    def _window_text(kind: str, role: dict[str, str]) -> str:
        """The template written over the constants in ``role``, the absent roles left out."""
        x, k, s, p, d, o = (role.get(r) for r in ("x", "k", "s", "p", "d", "o"))
        span = f" - {d} * ({k} - 1)" if k and d else f" - ({k} - 1)" if k else ""
        if kind == "conv":
            inner = f"{x}" + (f" + 2 * {p}" if p else "") + span
            return f"({inner} - 1) // {s} + 1" if s else inner
        grown = span.replace(" - ", " + ", 1) if span else ""
        return ((f"({x} - 1) * {s}" if s else f"{x} - 1") + (f" - 2 * {p}" if p else "") + grown
                + (f" + {o}" if o else "") + " + 1")

    def _window(self, names: list[str], get: Callable, v0: int) -> str | None:
        """A convolution's or a pooling's output size over the constants that change it: one of
        them the input's size, the others its kernel, stride, padding, dilation and a transposed one's output
        padding (each role one constant or absent: kernel 1, stride 1, padding 0, dilation 1, output padding 0),
        checked on every probe made (each constant doubled and tripled, all doubled together)."""
        import itertools

        roles = ("x", "k", "s", "p", "d", "o")     # o: a transposed convolution's output_padding
        absent = {"k": 1, "s": 1, "p": 0, "d": 1, "o": 0}
        probes = self._probes(names, get, v0)
        # the input's size first among the largest constants (a kernel, a stride are small)
        by_size = sorted(names, key=lambda c: -self.base[c])
        for fn, kind in self.WINDOWS:
            for picked in itertools.permutations(roles, len(names)):
                if "x" not in picked:
                    continue
                first = dict(zip(picked, by_size))
                # a pooling's stride defaults to its kernel: one constant in both roles
                for role in [first] + ([{**first, "s": first["k"]}] if "k" in first and "s" not in first else []):

                    def value(values: dict[str, int], fn: Callable = fn, role: dict = role) -> int | None:
                        args = {r: values[role[r]] if r in role else absent[r] for r in roles}
                        if args["s"] <= 0:
                            return None
                        return fn(**args)

                    if all(value(values) == want for values, want in probes):
                        return self._window_text(kind, {r: role[r] for r in role})
        return None

    def _probes(self, names: list[str], get: Callable, v0: int) -> list[tuple[dict[str, int], int]]:
        """The values read at the base, with each of ``names`` doubled and tripled, and all of them doubled together
        (those the original accepts)."""
        probes: list[tuple[dict[str, int], int]] = [(dict(self.base), v0)]
        for c in names:
            for factor in (2, 3):
                try:
                    probes.append(({**self.base, c: self.base[c] * factor}, int(self._at(c, factor, get))))
                except _NoValue:
                    pass
        both = {c: 2 * self.base[c] for c in names}
        try:
            probes.append(({**self.base, **both}, int(self._get(get, self.run(both)))))
        except _NoValue:
            pass
        return probes

    def _multilinear(self, names: list[str], get: Callable, v0: int, most: int = 64) -> str | None:
        """v = the sum over the subsets S of ``names`` of a_S * prod(S), each a_S a whole number of at most ``most``,
        but a lone size's, which may be a half, a third or a quarter (a floor division, its phase read off the values
        just above the base): the tokens of requests of a fixed length plus one each (``num_reqs * (1 + num_spec)``)
        or of lengths that alternate (``sum(max_draft - j % 2 for j in range(batch))`` is ``batch * max_draft -
        batch // 2``). Solved on the probes made (each size doubled and tripled, all doubled together, each pair
        doubled), and kept only where those are more than its unknowns and it gives every one of them."""
        subsets = [s for r in range(len(names) + 1) for s in itertools.combinations(names, r)]
        probes = self._probes(names, get, v0)
        if len(names) > 2:
            for a, b in itertools.combinations(names, 2):
                pair = {a: 2 * self.base[a], b: 2 * self.base[b]}
                with contextlib.suppress(_NoValue):
                    probes.append(({**self.base, **pair}, int(self._get(get, self.run(pair)))))
        if len(probes) <= len(subsets):
            return None
        coef = _solve([[Fraction(math.prod(p[c] for c in s)) for s in subsets] + [Fraction(v)] for p, v in probes])
        if coef is None:
            return None
        known = list(probes)
        parts: list[tuple[Fraction, tuple[str, ...]]] = []     # (a_S, S)
        for s, a in zip(subsets, coef):
            if a == 0:
                continue
            if abs(a) > most or (a.denominator != 1 and (len(s) != 1 or a.denominator > 4 or abs(a.numerator) != 1)):
                return None
            if a.denominator != 1:      # the values just above the base tell the floor division's phase
                (c,) = s
                for i in range(1, a.denominator):
                    with contextlib.suppress(_NoValue):
                        known.append(({**self.base, c: self.base[c] + i},
                                      int(self._at_value(c, self.base[c] + i, get))))
            parts.append((a, s))
        if not any(len(s) > 1 for _, s in parts):
            return None     # an affine value: ``_affine``'s, or not one at all

        def text_of(phases: dict[tuple[str, ...], int]) -> str | None:
            terms = []
            for a, s in sorted(parts, key=lambda t: (-len(t[1]), t[0] < 0)):
                if a.denominator != 1:
                    (c,) = s
                    o = phases[s]
                    mag = f"({c} + {o}) // {a.denominator}" if o else f"{c} // {a.denominator}"
                else:
                    mag = " * ".join(([str(abs(a.numerator))] if abs(a) != 1 or not s else []) + list(s))
                terms.append(("- " if a < 0 else "+ ") + mag)
            if not terms or terms[0].startswith("- "):
                return None
            return " ".join(terms)[2:]

        floors = [(a, s) for a, s in parts if a.denominator != 1]
        for offsets in itertools.product(*[range(a.denominator) for a, _ in floors]):
            text = text_of({s: o for (_, s), o in zip(floors, offsets)})
            if text is None:
                return None
            try:
                if all(int(formula.evaluate(text, values)) == want for values, want in known):
                    return text
            except (formula.FormulaError, ZeroDivisionError):
                return None
        return None

    def _quotient(self, names: list[str], get: Callable, v0: int) -> str | None:
        """v = a // b + k or a ceiling's (a + b - 1) // b + k, k small: the boundaries of a sequence's chunks
        (``seqlen // chunk_size + 1``), checked on every probe made."""
        if len(names) != 2:
            return None
        probes = self._probes(names, get, v0)
        for a, b in (names, names[::-1]):
            for ceil in (False, True):
                def q(values: dict[str, int], a: str = a, b: str = b, ceil: bool = ceil) -> int:
                    return (values[a] + values[b] - 1) // values[b] if ceil else values[a] // values[b]
                k = v0 - q(self.base)
                if abs(k) > 2 or not all(q(values) + k == want for values, want in probes):
                    continue
                text = f"({a} + {b} - 1) // {b}" if ceil else f"{a} // {b}"
                return text + (f" + {k}" if k > 0 else f" - {-k}" if k < 0 else "")
        return None

    def _monomial(self, names: list[str], get: Callable, v0: float, most: int = 64) -> str | None:
        """v = k * prod(c ** e): each exponent read off the parameter doubled; a parameter that
        halves the value divides (``K // group_size``, floor division), checked on every probe made."""
        if v0 == 0:
            return None
        exps = {}
        for c in names:
            try:
                r = Fraction(self._at(c, 2, get)) / Fraction(v0)
            except (_NoValue, ValueError, TypeError):
                return None
            e = round(math.log2(r)) if r > 0 else 0
            if e == 0 or abs(e) > 3 or Fraction(2) ** e != r:
                return None
            exps[c] = e
        k = Fraction(v0) / math.prod(Fraction(self.base[c]) ** e for c, e in exps.items())
        if k.numerator > most or k.denominator > 64:   # (1023 * h) // (k * 1024) fits the probes, not the op
            return None
        num = [c for c, e in exps.items() if e > 0 for _ in range(e)]
        den = [c for c, e in exps.items() if e < 0 for _ in range(-e)]
        if k.numerator != 1:
            num.insert(0, str(k.numerator))
        if k.denominator != 1:
            den.append(str(k.denominator))
        text = " * ".join(num) or "1"
        if den:
            text = (f"({text})" if len(num) > 1 else text) + " // " + (den[0] if len(den) == 1 else
                                                                       "(" + " * ".join(den) + ")")
        for c in names:
            for factor in (2, 3):
                try:
                    want = self._at(c, factor, get)
                except _NoValue:
                    continue
                try:
                    if formula.evaluate(text, {**self.base, c: self.base[c] * factor}) != want:
                        return None
                except (formula.FormulaError, ZeroDivisionError):
                    return None
        return text

    def number_formula(self, get: Callable[[Any], Any],
                       per: Sequence[tuple[Sequence[str | int], Callable[[Any], int]]] = ()) -> tuple[str | int, bool]:
        """A product formula for a count (FLOPs); (the number, False) when none fits. ``per``: tensors' shapes
        (their dimensions' formulas) and element counts, tried in turn where the count is no product of the
        constants: a count per element of one of them that is (a valid convolution's ``2 * in_channels *
        kernel_size ** 2`` per output element, whose height is ``height - kernel_size + 1``)."""
        v0 = self._get(get, self.run())
        if v0 == 0:
            return 0, True
        affecting = self._affecting(get, v0)
        if not affecting:
            return int(v0), True
        text = self._monomial(affecting, get, v0)
        if text is None:
            text = self._per_element(get, per)
        if text is None:
            return int(v0), False
        self.used.update(formula.names_in(text))
        return text, True

    def _per_element(self, get: Callable[[Any], Any],
                     per: Sequence[tuple[Sequence[str | int], Callable[[Any], int]]]) -> str | None:
        for shape, numel in per:
            if not shape:
                continue

            def ratio(r: Any, numel: Callable[[Any], int] = numel) -> Fraction:
                return Fraction(int(get(r)), int(numel(r)))
            try:
                r0 = self._get(ratio, self.run())
            except _NoValue:
                continue
            if r0 == 0:
                continue
            affecting = self._affecting(ratio, r0)
            # a count per element holds the sizes the problem writes as numbers (2 * 5 * 7 for a 5 x 7 kernel)
            each = (self._monomial(affecting, ratio, r0, most=PER_ELEMENT_MOST) if affecting
                    else str(r0) if r0.denominator == 1 else None)
            if each is None:
                continue
            dims = [str(d) if re.fullmatch(r"\w+", str(d)) else f"({d})" for d in shape]
            text = " * ".join([f"({each})" if "//" in each else each] + dims)
            if self._holds(text, get):
                return text
        return None

    def _holds(self, text: str, get: Callable[[Any], Any]) -> bool:
        """Whether ``text`` gives what ``get`` reads on every probe made so far."""
        for key, run in list(self._cache.items()):
            if run is None:
                continue
            try:
                if formula.evaluate(text, {**self.base, **dict(key)}) != self._get(get, run):
                    return False
            except (formula.FormulaError, ZeroDivisionError, _NoValue):
                return False
        return True

    def float_formula(self, get: Callable[[Any], Any]) -> str:
        v0 = float(self._get(get, self.run()))
        for c in self.floats:
            if self.base[c] != v0:
                continue
            try:
                if float(self._at(c, 2, get)) == 2 * v0:
                    self.used.add(c)
                    return c
            except _NoValue:
                continue
        return repr(v0)

    def render(self, get: Callable[[Any], Any], what: str) -> str:
        """A Python expression for a value: ints and floats over the parameters, tuples
        element by element, other plain values as literals."""
        v0 = self._get(get, self.run())
        if v0 is None or isinstance(v0, (bool, str)):
            return repr(v0)
        if isinstance(v0, int):
            return str(self.int_formula(get, what))
        if isinstance(v0, float):
            return self.float_formula(get)
        if isinstance(v0, torch.dtype):
            return str(v0)
        if isinstance(v0, (tuple, list)):
            items = [self.render(lambda r, i=i: get(r)[i], f"{what}[{i}]") for i in range(len(v0))]
            if isinstance(v0, list):
                return "[" + ", ".join(items) + "]"
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        raise Untranslatable(f"{what} is a {type(v0).__name__}")


# ------------------------------------------------------------------------------------------
# shared: the draft and how it is written


@dataclass
class Draft:
    category: str
    name: str
    title: str
    description: str
    entry: str
    inputs: list[dict]
    outputs: list[dict]
    scalars: list[dict]
    roofline: dict
    shape_space: dict
    reference: str
    tags: list[str] = field(default_factory=list)
    difficulty: int = 1
    forbidden: list[str] = field(default_factory=list)
    seen: list[dict] = field(default_factory=list)
    heldout: list[dict] = field(default_factory=list)
    smoke: list[dict] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    decisions: list[str] = field(default_factory=list)
    origin: str = ""
    notes: dict[str, str] = field(default_factory=dict)     # top-level key -> DRAFT comment
    tolerance: dict[str, Any] = field(default_factory=dict)   # dtype -> atol / rtol / norm, and its reason
    spare_heldout: list[dict] = field(default_factory=list)   # draft_configs' spares: not written
    # the seen configs a check leaves, topped up to so many (3 by default) as the importer drafted them
    # (``drop_degenerate``, ``kernel_probe.fit_drafts``)
    top_up_seen: Callable[..., list[dict]] | None = None
    grown: dict[str, dict] = field(default_factory=dict)      # seen config name -> the source's case it grew from
    cases: list[dict] = field(default_factory=list)           # the source's cases as written (the sizes each sets)
    # a config's FLOPs counted by running the original, where the roofline's are no formula of the sizes (not written)
    work: Callable[[dict], float | None] | None = field(default=None, repr=False, compare=False)

    @property
    def id(self) -> str:
        return f"{self.category}/{self.name}"


def _scalar_yaml(v: Any) -> str:
    if isinstance(v, str):
        bare = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", v) and v.lower() not in (
            "true", "false", "null", "yes", "no", "on", "off", "y", "n", "none")
        return v if bare else json.dumps(v)
    return yaml.safe_dump(v, default_flow_style=True).strip().removesuffix("...").strip()


def _flow(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_flow(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    return _scalar_yaml(v)


def _comment(key: str, d: Draft) -> str:
    note = d.notes.get(key)
    return f"   # DRAFT: {note}" if note else ""


def task_yaml(d: Draft) -> str:
    lines = [f"# Imported by `arena tasks import` from {d.origin}.",
             "# Lines marked DRAFT are the importer's guesses: confirm or replace them (and this header).",
             "schema_version: 1", f"id: {d.id}", f"category: {d.category}",
             f"title: {_scalar_yaml(d.title)}{_comment('title', d)}",
             "description: |" + _comment("description", d)]
    lines += ["  " + ln if ln else "" for ln in d.description.rstrip().splitlines()]
    lines += [f"tags: {_flow(d.tags)}{_comment('tags', d)}",
              f"difficulty: {d.difficulty}{_comment('difficulty', d)}",
              f"entry: {d.entry}", "signature:"]
    lines += ["  inputs:"] + [f"    - {_flow(i)}" for i in d.inputs] if d.inputs else ["  inputs: []"]
    lines += ["  outputs:"] + [f"    - {_flow(o)}" for o in d.outputs] if d.outputs else ["  outputs: []"]
    if d.scalars:
        lines += ["  scalars:"] + [f"    - {_flow(s)}" for s in d.scalars]
    lines += ["roofline:" + _comment("roofline", d)] + [f"  {k}: {_scalar_yaml(v)}" for k, v in d.roofline.items()]
    lines += ["shape_space:" + _comment("shape_space", d) if d.shape_space else "shape_space: {}" +
              _comment("shape_space", d)]
    lines += [f"  {k}: {_flow(v) if isinstance(v, dict) else _scalar_yaml(v)}" for k, v in d.shape_space.items()]
    lines.append(f"forbidden: {_flow(d.forbidden)}{_comment('forbidden', d)}")
    if d.tolerance:
        lines.append("tolerance:   # DRAFT: its reason says where it comes from; confirm it")
        lines += [f"  {dtype}: {_flow(t)}" if dtype != "reason" else f"  reason: {_scalar_yaml(t)}"
                  for dtype, t in d.tolerance.items()]
    return "\n".join(lines) + "\n"


def test_tolerance(found: dict[str, float], outputs: list[dict], where: str, decisions: list[str]
                   ) -> dict[str, Any]:
    """The tolerance a source test compares its floating outputs with (``allclose(..., atol=1e-2,
    rtol=1e-2)``), for each of their dtypes: its atol and rtol, and a norm bound no tighter than its rtol
    (the test has none; the harness's default would hold a kernel the test accepts to 1e-5)."""
    if not found:
        return {}
    from arena.taskdef.loader import DEFAULT_TOLERANCE

    out: dict[str, Any] = {}
    for dtype in dict.fromkeys(o["dtype"] for o in outputs if o.get("dtype") in DEFAULT_TOLERANCE):
        base = DEFAULT_TOLERANCE[dtype]
        t = {"atol": found.get("atol", base["atol"]), "rtol": found.get("rtol", base["rtol"])}
        t["norm"] = max(base["norm"], t["rtol"])
        if t != dict(base):
            out[dtype] = t
    if out:
        out["reason"] = (f"the source test {where} compares with {', '.join(f'{k}={v:g}' for k, v in found.items())}"  # type: ignore[assignment]
                         "; the norm bound is its rtol")
        defaults = "; ".join(f"{d}: {dict(DEFAULT_TOLERANCE[d])}" for d in out if d != "reason")
        decisions.append(f"tolerance is {where}'s own comparison ({', '.join(f'{k}={v:g}' for k, v in found.items())}"
                         f"): confirm it; the harness's defaults are {defaults}")
    return out


# the most work a config may need for its reference to run twice on the CPU here (fp64 convolutions run at a few
# GFLOP/s on a CPU core: an import stays within its minute)
ROUNDING_FLOPS = 2 * 10**10
# and the most bytes of inputs and outputs (roofline.bytes): the measure holds fp64 copies of them and their
# differences, about eight times this, beside the other imports of a table (a product with an 8192 x 16384 fp32
# weight, 537 MB, fits)
ROUNDING_BYTES = 8 * 10**8
ROUNDING_MARGIN = 8             # the tolerance holds this many times the rounding measured on one config
# the outputs' scale (for atol and the degeneracy rules) is read again, from one fp32 run of the reference, on the
# other seen and held-out configs with work up to these (``smallest_scale``): a scale read on a smaller config
# is not the task's (on an H100, KernelBench level 2's logsumexp and softmax chains measured on a small config
# had outputs whose spread fell below the degeneracy floor on every seen and held-out config: 3 of 87 imports)
SPREAD_FLOPS = 2 * 10**11
SPREAD_BYTES = 2 * 10**9
# within these CPU seconds, and the smallest scale stands (a softmax's outputs over a seen config's 2M-long rows are
# 5e-7; an H100's check found their spread under the degeneracy floor at the scale read, before, on the config with
# the most work alone, whose rows were shorter)
SCALE_SECONDS = 10.0
# the reference's runs in fp32 and fp64 that measure its rounding (an attention over long rows in fp64 on the CPU
# ran for minutes): past these CPU seconds, the tolerance is left to a GPU's check
ROUNDING_SECONDS = 60.0
# an atol scaled to the outputs' scale leaves their spread this many times the degeneracy check's floor
# (arena.check.degeneracy.STD_OVER_ATOL times atol), and their median magnitude 100 times atol: room for
# configs whose outputs are smaller than the one measured (a softmax over 4 times the columns)
SCALE_MARGIN = 10
# atol is not scaled below this: outputs smaller are degenerate for an fp32 kernel (a cumulative product that
# underflows), and the degeneracy check says so
MIN_SCALED_ATOL = 1e-12
# An element's error where the sums cancel (|ref| small) is the error of its terms, not of its value: a sample of a
# few dozen outputs may hold no small one, and rtol then covers what the GPU's thousands show past atol (on an H100,
# KernelBench level 2's row sums of an 8192-long product: 2-5 of 1024 elements, 0.01-0.02 off values near 0, with
# atol 1e-4). atol holds the errors of the outputs below the median |ref| as a normal tail over every element the
# check compares (the configs' outputs, 3 seeds each): their RMS times sqrt(2 ln N), TAIL_MARGIN times over (not
# ROUNDING_MARGIN: the tail is already the largest of N; at 8 times, 40 times the RMS, a chain of logsumexp and
# GELUs whose outputs spread 0.002 got an atol that left them degenerate on an H100).
TAIL_MIN_SAMPLE = 16
TAIL_MARGIN = 4
# the rounding is not loosened past these: an fp32 reference on the CPU that rounds more (a norm summed over
# 2e8 elements is 2% off there, and within 1e-6 on a GPU) measures the CPU's summation, not the task's need
MAX_ROUNDING_TOL = {"elementwise": 2e-3, "norm": 1e-3}
# and where the starting kernel's products run in TF32 (``tf32_dots``), the bounds of fp16's default tolerance, whose
# mantissa is TF32's 10 bits
MAX_ROUNDING_TOL_TF32 = {"elementwise": 2e-2, "norm": 1e-2}
_LADDER = (1, 2, 5)


def _tail_error(d: torch.Tensor, w: torch.Tensor, compared: int) -> float:
    """The largest error expected among ``compared`` elements whose |ref| is small, from the errors ``d`` of the
    outputs ``w`` below their median magnitude (0 where fewer than ``TAIL_MIN_SAMPLE``)."""
    small = d.flatten()[w.flatten().abs() <= w.abs().median()]
    if small.numel() < TAIL_MIN_SAMPLE:
        return 0.0
    return float(small.pow(2).mean().sqrt()) * math.sqrt(2 * math.log(max(2, compared)))


def _fp32_elements(task: Any, config: Any) -> int:
    """The elements of a config's fp32 outputs."""
    env = task.env(config)
    return sum(math.prod(task.shape(o, env)) for o in task.outputs if o.dtype == "float32")


def _compared(task: Any) -> int:
    """How many fp32 output elements the check compares: every seen and held-out config's, 3 seeds each."""
    n = 0
    for c in [*task.configs("seen"), *task.configs("heldout")]:
        try:
            n += _fp32_elements(task, c)
        except formula.FormulaError:
            continue
    return 3 * n


def _ceil_ladder(v: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``v``."""
    e = math.floor(math.log10(v))
    for k in (e, e + 1):
        for m in _LADDER:
            if m * 10.0 ** k >= v * (1 - 1e-9):
                return float(f"{m}e{k}")
    return v


def _floor_ladder(v: float) -> float:
    """The largest of 1, 2, 5 times a power of ten that is at most ``v``."""
    e = math.floor(math.log10(v))
    for k in (e, e - 1):
        for m in reversed(_LADDER):
            if m * 10.0 ** k <= v * (1 + 1e-9):
                return float(f"{m}e{k}")
    return v


def _work(task: Any, config: Any, count: Callable[[dict], float | None] | None = None) -> tuple[float, float]:
    """A config's FLOPs and bytes: the roofline's, its FLOPs the importer's ``count`` of them where it has one (a
    network whose count is no formula of its sizes: its roofline holds the seen config's number for every config).
    A ``FormulaError`` where they cannot be had (the original does not accept the config)."""
    flops, nbytes = task.roofline_for(config)
    if count is not None:
        counted = count(dict(config.params))
        if counted is None:
            raise formula.FormulaError(f"no FLOP count of config {config.name}")
        flops = float(counted)
    return flops, nbytes


def _reduction_length(task: Any, config: Any, count: Callable[[dict], float | None] | None = None) -> float:
    """FLOPs per element of the fp32 outputs: the length of the sums each element needs (a matrix
    product's K, a reduction's row), what its rounding grows with."""
    return _work(task, config, count)[0] / max(1, _fp32_elements(task, config))


def median_nonzero(w: torch.Tensor, sample: int = 1 << 20) -> float:
    """The median of |w| over its nonzero elements, from an even sample of at most ``sample`` of them."""
    flat = w.flatten()
    flat = flat[:: max(1, flat.numel() // sample)].abs()
    flat = flat[flat != 0]
    return float(flat.median()) if flat.numel() else 0.0


def spread_of(t: torch.Tensor, sample: int = 1 << 20) -> tuple[float, float]:
    """A tensor's standard deviation and median nonzero |value| (what the degeneracy rules read of an output), from
    an even sample of at most ``sample`` of its elements (an output of a grown config: hundreds of MB, not copied
    whole in double precision)."""
    flat = t.detach().flatten()
    flat = flat[:: max(1, flat.numel() // sample)].double()
    return float(flat.std()), median_nonzero(flat)


def _fp32_outputs(ref: Any, ins: dict[str, Any], scalars: list, tf32: bool = False) -> list:
    """The reference run as the task's eager starting point computes: on clones of the inputs, in
    their own precision (``tf32``: its matrix products' operands cut to TF32, ``TF32Products``); its outputs as a
    list."""
    with torch.no_grad(), (TF32Products() if tf32 else contextlib.nullcontext()):
        out = ref.reference(*[None if t is None else t.clone() for t in ins.values()], *scalars)
    return list(out) if isinstance(out, (tuple, list)) else [out]


class TF32Products(TorchDispatchMode):
    """Matrix products and convolutions whose fp32 operands are cut to TF32 (a 10-bit mantissa), as a GPU's tensor
    cores compute Triton's ``tl.dot`` on fp32 at its default precision on NVIDIA (``default_dot_input_precision``
    "tf32"; "ieee" on AMD): the 13 low bits of each operand dropped, the products summed in fp32. Dropped, not
    rounded: the tensor cores read the top 19 bits, and Triton does not round before them (triton-lang/triton#4574
    measured its TF32 dots less accurate than PyTorch's TF32 and than fp16's, of the same mantissa; an option to
    round came later, triton-lang/triton#9295). Of the two, the larger error, of one sign."""

    # the operands of each: a product's two factors, not the sum it is added to (``addmm``'s first argument)
    OPERANDS = {"mm": (0, 1), "bmm": (0, 1), "mv": (0, 1), "dot": (0, 1), "addmm": (1, 2), "baddbmm": (1, 2),
                "addbmm": (1, 2), "addmv": (1, 2), "convolution": (0, 1)}

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        which = self.OPERANDS.get(func.overloadpacket.__name__, ())
        args = tuple(tf32_cut(a) if i in which else a for i, a in enumerate(args))
        return func(*args, **(kwargs or {}))


def tf32_cut(t: Any) -> Any:
    """An fp32 tensor with the 13 low bits of each value's mantissa dropped (TF32's 10 bits kept); anything else as
    it is."""
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
        return t
    return t.contiguous().view(torch.int32).bitwise_and(-(1 << 13)).view(torch.float32)


def tf32_dots(kernel: Path | None) -> list[int]:
    """The lines of a Triton kernel file's ``tl.dot`` calls that run at Triton's default precision for fp32 operands
    (TF32 on an NVIDIA GPU): no ``input_precision="ieee"`` and no ``allow_tf32=False``; a precision named by a
    variable counts (it may be TF32); none where the file is not Python or does not parse."""
    if kernel is None or kernel.suffix != ".py":
        return []
    try:
        tree = ast.parse(kernel.read_text(errors="replace"))
    except SyntaxError:
        return []
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dot"
                and ast.unparse(node.func.value) in ("tl", "triton.language", "language")):
            continue
        said = {k.arg: k.value for k in node.keywords if k.arg}
        if len(node.args) > 3:     # tl.dot(a, b, acc, input_precision, ...)
            said.setdefault("input_precision", node.args[3])
        precision, allow = said.get("input_precision"), said.get("allow_tf32")
        if isinstance(precision, ast.Constant) and precision.value is not None:
            if str(precision.value).lower() == "ieee":
                continue
        elif isinstance(allow, ast.Constant) and allow.value is False:
            continue
        lines.append(node.lineno)
    return sorted(lines)


def _rounding_config(task: Any, count: Callable[[dict], float | None] | None = None
                     ) -> tuple[Any, float, list[tuple[float, float, Any]], list[tuple[float, float, Any]]]:
    """The seen or held-out config whose reference's rounding is measured: the one with the most work up to
    ``ROUNDING_FLOPS`` and ``ROUNDING_BYTES``, or the longest sums as they are, on a config with its other sizes shrunk
    (``_shrunk_for_rounding``), where none that fits has them; None where neither. With it: how many times the
    task's longest sums are longer than its own, the configs that fit (flops, bytes, config), and those within
    ``SPREAD_FLOPS`` and ``SPREAD_BYTES`` past them. A FLOP count that is one number for every config (an
    importer's count of one case, ``roofline.flops`` not yet a formula) tells no sum's length: the configs' sums are
    taken as long as each other's."""
    configs, larger = [], []
    lengths: dict[int, float] = {}
    known = count is not None or bool(formula.names_in(str(task.roofline["flops"])))
    longest: tuple[float, Any] | None = None
    for c in [*task.configs("seen"), *task.configs("heldout")]:
        try:
            flops, nbytes = _work(task, c, count)
            lengths[id(c)] = _reduction_length(task, c, count) if known else 1.0
        except formula.FormulaError:
            continue
        if longest is None or lengths[id(c)] > longest[0]:
            longest = (lengths[id(c)], c)
        if flops <= ROUNDING_FLOPS and nbytes <= ROUNDING_BYTES:
            configs.append((flops, nbytes, c))
        elif flops <= SPREAD_FLOPS and nbytes <= SPREAD_BYTES:
            larger.append((flops, nbytes, c))
    config = max(configs, key=lambda fbc: fbc[:2])[2] if configs else None
    if longest is not None and all(lengths[id(c)] < longest[0] * (1 - 1e-9) for *_, c in configs):
        config = _shrunk_for_rounding(task, longest[1], count) or config
    grow = 1.0 if config is None or not known else max(
        1.0, max(lengths.values()) / max(1e-300, _reduction_length(task, config, count)))
    return config, grow, configs, larger


def _atol_left(task: Any, pairs: list[tuple[torch.Tensor, torch.Tensor]], rtol: float) -> tuple[float, float]:
    """What atol must hold of the rounding measured (``_rounding_errors``' pairs) past ``rtol``: the largest error
    left, and the errors of the outputs below the median |ref| as a normal tail over the elements the check compares
    (``_tail_error``)."""
    compared = _compared(task)
    return (max(float((d - rtol * w.abs()).max()) for d, w in pairs),
            max(_tail_error(d * (TAIL_MARGIN / ROUNDING_MARGIN), w, compared) for d, w in pairs))


def _rounding_where(config: Any, dots: list[int]) -> str:
    """Where ``_rounding_errors`` measured, in words."""
    return (f"{config.split} config {config.name}, on the CPU, fp32 against fp64"
            + (f", its matrix products' operands cut to TF32 as the starting kernel's tl.dot (line "
               f"{', '.join(map(str, dots))}) computes them on an NVIDIA GPU" if dots else ""))


def rounding_floor(task: Any, ref: Any, rtol: float, count: Callable[[dict], float | None] | None = None
                   ) -> tuple[float, str]:
    """The atol a task's fp32 outputs need for its reference's rounding past ``rtol`` (``_rounding_errors`` on
    ``_rounding_config``'s config, as the starting kernel rounds: its products in TF32 where ``tf32_dots`` finds
    them; ``_atol_left``), and where it was measured (``_rounding_where``); 0 where nothing could be measured within
    ``ROUNDING_SECONDS``."""
    config, grow, _, _ = _rounding_config(task, count)
    if config is None:
        return 0.0, ""
    dots = tf32_dots(task.kernel_file("baseline"))
    try:
        with probe_limits(ROUNDING_SECONDS):
            pairs = [dw for _, dw in _rounding_errors(task, ref, config, grow, bool(dots))]
    except (Exception, ProbeTimeout):  # noqa: BLE001 - the scale stands; a GPU's check shows
        return 0.0, ""
    left = max(_atol_left(task, pairs, rtol)) if pairs else 0.0
    return (_ceil_ladder(left) if left > 0 else 0.0), _rounding_where(config, dots)


def _rounding_errors(task: Any, ref: Any, config: Any, grow: float, tf32: bool = False
                     ) -> list[tuple[str, tuple[torch.Tensor, torch.Tensor]]]:
    """For each fp32 output of the reference on ``config`` (seed 0, on the CPU): its name, and its error in fp32
    (``tf32``: with the matrix products' operands cut to TF32) against the harness's fp64 reference,
    ``ROUNDING_MARGIN`` and ``grow`` times over, beside that reference's values (in fp64)."""
    from arena.check.inputs import make_inputs, run_reference

    env = task.env(config)
    ins = make_inputs(task, env, 0, "cpu", ref)
    scalars = [task.scalar_value(sc, env) for sc in task.scalars]
    got = _fp32_outputs(ref, ins, scalars, tf32)
    with torch.no_grad():
        want = run_reference(ref.reference, task, ins, scalars)
    out = []
    for spec, g, w in zip(task.outputs, got, want):
        if spec.dtype != "float32" or not isinstance(g, torch.Tensor) or g.shape != w.shape or not g.numel():
            continue
        w = w.double()
        d = (g.double() - w).abs()
        if bool(torch.isfinite(d).all()) and bool(torch.isfinite(w).all()):
            out.append((spec.name, (d * (ROUNDING_MARGIN * grow), w)))
    return out


def _shrunk_for_rounding(task: Any, config: Any, count: Callable[[dict], float | None] | None = None) -> Any:
    """``config`` with the sizes that its longest sums do not run over halved in turn (the largest
    first) until one run of its reference fits ``ROUNDING_FLOPS`` and ``ROUNDING_BYTES``: a matrix
    product's rows halved, its K kept. None where that cannot be done (a size the sums' length
    depends on, or work that does not shrink). ``count``: as for ``_work``."""
    from dataclasses import replace

    length = _reduction_length(task, config, count)
    params = dict(config.params)
    for _ in range(64):
        c = replace(config, name=f"{config.name} with its other sizes shrunk", params=params)
        flops, nbytes = _work(task, c, count)
        if flops <= ROUNDING_FLOPS and nbytes <= ROUNDING_BYTES:
            return c if params != dict(config.params) else None
        for k, v in sorted(params.items(), key=lambda kv: -kv[1] if type(kv[1]) is int else 0):
            if type(v) is not int or v < 2:
                continue
            p = {**params, k: v // 2}
            try:
                smaller = replace(config, params=p)
                if (abs(_reduction_length(task, smaller, count) - length) <= 1e-9 * length
                        and _work(task, smaller, count)[0] < flops):
                    params = p
                    break
            except (formula.FormulaError, ZeroDivisionError):
                continue
        else:
            return None
    return None


def outputs_scale(outs: Sequence[torch.Tensor]) -> float:
    """The largest atol that leaves outputs ``outs`` ``SCALE_MARGIN`` times above what the degeneracy rules ask of
    them: their spread above ``STD_OVER_ATOL`` times atol, their median nonzero magnitude above 100 times atol."""
    from arena.check.degeneracy import STD_OVER_ATOL

    return min(min(float(w.std()) if w.numel() > 1 else math.inf for w in outs) / (STD_OVER_ATOL * SCALE_MARGIN),
               min(median_nonzero(w) for w in outs) / (100 * SCALE_MARGIN))


def held_bytes(task: Any, config: Any) -> int:
    """The bytes of every input and output of a task's config, whole (``tensor_bytes``): what a run of it holds
    (its roofline's bytes may count less: what a kernel must move of a buffer it reads a part of)."""
    return tensor_bytes(task, task.env(config))


def configs_within(task: Any, flops: float, nbytes: float) -> list[Any]:
    """The seen and held-out configs whose work is within ``flops`` and ``nbytes`` (their tensors' bytes, whole: what
    a run on the CPU holds), the least work first."""
    fits = []
    for c in [*task.configs("seen"), *task.configs("heldout")]:
        try:
            f, b = task.roofline_for(c)[0], held_bytes(task, c)
        except formula.FormulaError:
            continue
        if f <= flops and b <= nbytes:
            fits.append((f, b, c))
    return [c for *_, c in sorted(fits, key=lambda fbc: fbc[:2])]


MEASURABLE_S = 0.02


def runs_within(configs: Sequence[Any], run: Callable[[Any], Any], seconds: float | None = None,
                nbytes: Callable[[Any], float] = lambda c: 0.0) -> Iterator[tuple[Any, Any]]:
    """(config, ``run(config)``) for the ``configs`` (in the order given) that ``seconds`` (``SCALE_SECONDS``) of
    this process's CPU time allow: a config whose bytes (``nbytes``) would take longer than what is left, at the CPU
    time a byte took on the largest config run before it, is not run (a smaller one after it may be). The largest's,
    not the most of any: a small config's time is mostly what a run costs whatever its size (a 1.5 MB config took
    0.08 s here, a 600 MB one 3.2 s, not 33)."""
    seconds = SCALE_SECONDS if seconds is None else seconds
    start = time.process_time()
    per_byte, largest = 0.0, -1.0    # CPU seconds a byte took on the largest config run so far, and its bytes
    for c in configs:
        left = seconds - (time.process_time() - start)
        size = nbytes(c)
        if left <= 0 or per_byte * size > left:
            continue
        t0 = time.process_time()
        result = run(c)
        took = time.process_time() - t0
        if took >= MEASURABLE_S and size >= largest:   # a shorter run says nothing of the rate (a clock of 4 ms ticks)
            per_byte, largest = took / max(1.0, size), size
        yield c, result
        del result


def smallest_scale(configs: Sequence[Any], run: Callable[[Any], list[tuple[str, str, torch.Tensor]]],
                   seconds: float | None = None, nbytes: Callable[[Any], float] = lambda c: 0.0
                   ) -> dict[str, tuple[Any, list[str], list[torch.Tensor]]]:
    """Of ``configs`` (in the order given), for each group of outputs (``run``: (group, name, tensor) of the outputs
    read on a config; a group is a dtype), the config whose outputs of that group have the smallest scale
    (``outputs_scale``), as {group: (config, names, tensors)}, of those whose scale is at least ``MIN_SCALED_ATOL``.
    One run a config, within ``seconds`` of this process's CPU time (``runs_within``)."""
    best: dict[str, tuple[float, Any, list[str], list[torch.Tensor]]] = {}
    for c, kept in runs_within(configs, run, seconds, nbytes):
        for group in dict.fromkeys(g for g, _, _ in kept):
            mine = [(n, w) for g, n, w in kept if g == group]
            scale = outputs_scale([w for _, w in mine])
            if scale < MIN_SCALED_ATOL:
                # a constant (a softmax over one column is ones): degenerate at any atol, which the rules say of
                # that config; it does not set the scale of the others
                continue
            if group not in best or scale < best[group][0]:
                best[group] = (scale, c, [n for n, _ in mine], [w for _, w in mine])
    return {g: b[1:] for g, b in best.items()}


def reference_on_cpu(task: Any, ref: Any, config: Any, seed: int = 0) -> list:
    """The task's reference on ``config``, on the CPU, as the harness runs it (``run_reference``), on the inputs
    ``make_inputs`` makes from ``seed``: its outputs, then its inout inputs (``Task.compared``)."""
    from arena.check.inputs import make_inputs, run_reference

    env = task.env(config)
    with torch.no_grad():
        return run_reference(ref.reference, task, make_inputs(task, env, seed, "cpu", ref),
                             [task.scalar_value(sc, env) for sc in task.scalars])


# output dtypes a reference's values at a task's sizes can run past (an fp16 product of long sums past 65504)
NARROW = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int8", "uint8", "int16")


def range_at_sizes(folder: Path, seconds: float | None = None) -> list[str]:
    """The range rule of the degeneracy checks (``range_problems``: the reference's values past what an output's
    dtype holds) on the seen and held-out configs up to ``SPREAD_FLOPS`` and ``SPREAD_BYTES`` that ``seconds``
    (``SCALE_SECONDS``) of CPU time allow (``runs_within``), for the outputs of a narrow dtype: a case grown into the
    timing window can reach values the test's own sizes did not (a chain of fp16 products over a longer K). Where the
    test gives a tolerance, ``scaled_test_tolerance`` reads the rule on the runs it reads the outputs' scale on."""
    from arena.evaluation.sides import import_reference
    from arena.taskdef.loader import load_task

    task = load_task(folder)
    if not any(spec.dtype in NARROW for spec in task.compared):
        return []
    ref = import_reference(task.reference_path, f"arena_import_range_{abs(hash(str(folder)))}")
    found: list[str] = []
    for c, outs in runs_within(configs_within(task, SPREAD_FLOPS, SPREAD_BYTES),
                               lambda c: reference_on_cpu(task, ref, c), seconds,
                               nbytes=lambda c: held_bytes(task, c)):
        found += _out_of_range(task, c, outs)
    return found


def _out_of_range(task: Any, config: Any, outs: list) -> list[str]:
    """The range rule on the outputs of a narrow dtype (``NARROW``) of the reference's run on ``config``."""
    from arena.check.degeneracy import range_problems
    from arena.check.inputs import DTYPES

    return [f"on {config.split} config {config.name}: {p}" for spec, o in zip(task.compared, outs)
            if spec.dtype in NARROW and isinstance(o, torch.Tensor)
            for p in range_problems(spec.name, o, DTYPES[spec.dtype])]


FEW_VALUES_SECONDS = 60.0    # CPU seconds the importer's reads of outputs of few values may take in all


def few_values_at_sizes(folder: Path, seconds: float | None = None) -> list[str]:
    """The degeneracy rule on outputs of a few values (``arena.check.degeneracy.few_values_problems``: read over
    several draws of the inputs, a loss's or one row's norm, whose one redraw is itself a draw) on the seen and
    held-out configs up to ``SPREAD_FLOPS`` and ``SPREAD_BYTES`` whose outputs have so few values, at their own sizes,
    on the CPU, within ``seconds`` (``FEW_VALUES_SECONDS``) of CPU time (``runs_within``); said as "on SPLIT config
    NAME: ..." for ``drop_degenerate``. A config the reads do not reach is left to a GPU's check."""
    from arena.check.degeneracy import FEW_VALUES_DRAWS, REDRAW, few_values_problems, has_few_values
    from arena.evaluation.sides import import_reference
    from arena.taskdef.loader import load_task

    task = load_task(folder)
    configs = [c for c in configs_within(task, SPREAD_FLOPS, SPREAD_BYTES) if has_few_values(task, c)]
    if not configs:
        return []
    ref = import_reference(task.reference_path, f"arena_import_few_{abs(hash(str(folder)))}")

    def read(config: Any) -> list[str]:
        return few_values_problems(task, reference_on_cpu(task, ref, config),
                                   lambda k: reference_on_cpu(task, ref, config, k * REDRAW))

    found: list[str] = []
    seconds = FEW_VALUES_SECONDS if seconds is None else seconds
    try:
        with probe_limits(2 * seconds):   # a first config's runs, which nothing before them could price
            for c, problems in runs_within(configs, read, seconds,
                                           nbytes=lambda c: FEW_VALUES_DRAWS[1] * held_bytes(task, c)):
                found += [f"on {c.split} config {c.name}: {p}" for p in problems]
    except PROBE_CUT:
        pass
    return found


def scaled_test_tolerance(d: Draft, folder: Path, decisions: list[str]) -> list[str] | None:
    """A source test's own atol (``test_tolerance``) that leaves the outputs near-constant for the comparison (a
    recurrence whose outputs are 1e-3, compared with atol 0.05): scaled down to the outputs' scale as read from the
    reference on the smoke config, on the seen configs at the sizes of the source's cases they grew from
    (``as_written``) and on the seen and held-out configs up to ``SPREAD_FLOPS`` and ``SPREAD_BYTES``
    the CPU reads within ``SCALE_SECONDS`` (``smallest_scale``: the smallest scale stands; ``outputs_scale``; no
    lower than the dtype's rounding where the test's rtol is below the dtype's default), the test's rtol kept; the
    folder's task.yaml written again. Returns what the range rule finds on the same runs (``range_at_sizes``'s
    read), or None where the test gives no tolerance (nothing was read)."""
    if not d.tolerance:
        return None
    from arena.evaluation.sides import import_reference
    from arena.taskdef.loader import load_task

    task = load_task(folder)
    ref = import_reference(task.reference_path, f"arena_import_scale_{abs(hash(str(folder)))}")
    out_of_range: list[str] = []

    def outputs(config: Any) -> list:
        outs = reference_on_cpu(task, ref, config)
        out_of_range.extend(_out_of_range(task, config, outs))
        return outs

    runs = [reference_on_cpu(task, ref, task.configs("smoke")[0])]
    where = "on the smoke config"
    # and on the seen or held-out config whose outputs' scale is the smallest, of those the CPU may run: a softmax's
    # outputs over the task's long rows are smaller than over the smoke config's short ones
    tolerated = [k for k in d.tolerance if k != "reason"]
    try:
        with probe_limits(ROUNDING_SECONDS):
            cases = as_written(folder, d)
            small = smallest_scale([*cases, *configs_within(task, SPREAD_FLOPS, SPREAD_BYTES)], lambda c: [
                (spec.dtype, spec.name, o.double()) for spec, o in zip(task.compared, outputs(c))
                if spec.dtype in tolerated and isinstance(o, torch.Tensor) and o.numel() > 1
                and bool(torch.isfinite(o).all())], nbytes=lambda c: held_bytes(task, c))
    except (Exception, ProbeTimeout):  # noqa: BLE001 - the smoke config's scale stands; a GPU's check shows
        small = {}
    names = [spec.name for spec in task.compared]
    sized: list[tuple[Any, list]] = []     # the seen or held-out configs read at their own sizes, and their outputs
    for config, read, ws in small.values():
        runs.append([None] * len(names))
        for name, w in zip(read, ws):
            runs[-1][names.index(name)] = w
        written = any(config is x for x in cases)
        if not written:
            sized.append((config, runs[-1]))
        where = (f"on the smoke config and {config.split} config {config.name}"
                 + (" at the sizes of the case it grew from" if written else ""))
    from arena.check.degeneracy import spread_problems
    from arena.taskdef.loader import DEFAULT_TOLERANCE

    scaled: list[str] = []
    held: list[str] = []
    own: list[str] = []
    for dtype, t in d.tolerance.items():
        named = [(spec.name, o.double()) for outs in runs for spec, o in zip(task.compared, outs)
                 if spec.dtype == dtype and isinstance(o, torch.Tensor) and o.numel() > 1
                 and bool(torch.isfinite(o).all())]
        ws = [w for _, w in named]
        if dtype == "reason" or not ws or not any(spread_problems("", w, t) for w in ws):
            continue
        # an output of whole numbers of this dtype (quantised values compared as floats) that the test's atol lets be
        # off by one (a tie rounded the other way) keeps the test's tolerance as its own; the others are scaled
        whole = list(dict.fromkeys(n for n, w in named if _whole_steps(w)))
        if whole and t["atol"] >= 1:
            near = [(n, w) for n, w in named if n not in whole]
            if not near or not any(spread_problems("", w, t) for _, w in near):
                continue
            steps = ", ".join(whole)
            reason = (f"the source test's own atol={t['atol']:g}, rtol={t['rtol']:g}: whole numbers (as {dtype}) that "
                      f"may be off by one step, as a tie rounded the other way is; the task's {dtype} tolerance is "
                      "scaled to the other outputs")
            for spec in (*d.outputs, *d.inputs):
                if spec["name"] in whole:
                    spec["tolerance"] = {"atol": t["atol"], "rtol": t["rtol"], "reason": reason}
            own.append(f"{steps} (whole numbers, as {dtype}) keep{'s' if len(whole) == 1 else ''} the test's atol "
                       f"{t['atol']:g} as {'its' if len(whole) == 1 else 'their'} own tolerance (off by one step, as "
                       f"a tie rounded the other way is)")
            named = near
            ws = [w for _, w in named]
        # where the test has a smaller rtol than the dtype's default (``rtol=0``), atol holds the rounding too
        rounding = max(0.0, DEFAULT_TOLERANCE[dtype]["rtol"] - t["rtol"]) * max(float(w.abs().max()) for w in ws)
        scale = outputs_scale(ws)
        if not MIN_SCALED_ATOL <= scale < math.inf:
            continue
        atol = max(_floor_ladder(scale), _ceil_ladder(rounding) if rounding else 0.0)
        if dtype == "float32" and MIN_SCALED_ATOL <= atol < t["atol"]:
            # no lower than the reference's own rounding where |ref| is small, as the starting kernel rounds it
            floor, measured_on = rounding_floor(task, ref, t["rtol"], getattr(d, "work", None))
            if floor > atol:
                atol = floor
                held.append(f"no lower than the reference's rounding past rtol {t['rtol']:g} ({measured_on}, "
                            f"{ROUNDING_MARGIN} times over: {floor:g})")
                if any(spread_problems("", w, {**t, "atol": atol}) for w in ws):
                    fix = ("draw the inputs larger (their `init` in task.yaml)"
                           + (", or have the kernel's dots compute in fp32 (`input_precision=\"ieee\"`)"
                              if "TF32" in measured_on else ""))
                    decisions.append(
                        f"atol {atol:g} holds the starting kernel's own rounding, and at it the outputs are degenerate "
                        f"for the comparison (the degeneracy rules of CONTRIBUTING.md): {fix}")
                    # read so on a seen or held-out config at its own sizes, the task is refused: its other configs
                    # are drafts around that one, and the rounding is the starting kernel's on all of them (vLLM's
                    # kda_gla_fwd_o, passed to an H200, failed there on all nine: std 0.0067-0.0092 at atol 0.0002)
                    out_of_range += [
                        f"at atol {atol:g}, the starting kernel's own rounding, {config.split} config {config.name}'s "
                        f"{p}: {fix}" for config, outs in sized for spec, o in zip(task.compared, outs)
                        if spec.dtype == dtype and isinstance(o, torch.Tensor) and o.numel() > 1
                        for p in spread_problems(spec.name, o.double(), {**t, "atol": atol})]
        if MIN_SCALED_ATOL <= atol < t["atol"]:
            scaled.append(f"{dtype} {t['atol']:g} -> {atol:g}")
            t["atol"] = atol
    if scaled or own:
        why = ((f"atol scaled to the outputs' scale ({', '.join(scaled)}; {where}, on the CPU): at the "
                "test's own atol its outputs would be near-constant for the comparison" if scaled else
                "atol left at the test's")
               + "".join(f"; {h}" for h in held) + "".join(f"; {o}" for o in own))
        d.tolerance["reason"] = f"{d.tolerance['reason']}; {why}"
        decisions.append(f"the tolerance's {why}: confirm it")
        write_configs(d, folder)
    return out_of_range


def _whole_steps(w: torch.Tensor) -> bool:
    """Whether an output holds whole numbers only, more than one of them (quantised values compared as floats)."""
    return bool((w == w.round()).all()) and int(w.unique().numel()) > 1


def measured_tolerance(folder: Path, cases: Sequence[Any] = (), count: Callable[[dict], float | None] | None = None
                       ) -> tuple[dict[str, Any], str | None, list[str]]:
    """The fp32 tolerance a task needs at its sizes, from its reference run on the CPU in fp32 (as the
    task's eager starting point computes) and in fp64 (as the harness's reference computes), on the seen
    or held-out config with the most work up to ``ROUNDING_FLOPS``:

    - rounding: ``ROUNDING_MARGIN`` times the error measured, grown by the ratio of the longest sums of
      any seen or held-out config to the measured one's (rounding grows with a sum's length, at most in
      proportion): rtol from the error relative to 1 + |ref|, atol what is left where |ref| is small, the
      norm bound from the norm error;
    - scale: where the outputs are small (a softmax over many columns), atol below the default, so that
      their spread and median magnitude stay ``SCALE_MARGIN`` times above what the degeneracy check asks, on the
      config measured and on the one of the other seen and held-out configs up to ``SPREAD_FLOPS`` and
      ``SPREAD_BYTES``, and of ``cases`` (seen configs at the sizes of the source's cases they were grown from:
      a softmax's rows as long, read on a few of them), whose outputs' scale is the smallest (``smallest_scale``).

    ``count``: the importer's count of a config's FLOPs, where the roofline's is no formula of the sizes (``_work``).

    Returns the tolerance and its reason where it differs from the fp32 default, else {}; a note (no
    config could be run, a rounding not taken); and what the degeneracy rules find in the outputs
    measured, at the tolerance the task gets (a loss over millions of elements is one value that
    drawing the inputs again hardly moves: a constant passes)."""
    from arena.check.degeneracy import STD_OVER_ATOL, spread_problems
    from arena.check.inputs import make_inputs
    from arena.evaluation.sides import import_reference
    from arena.taskdef.loader import DEFAULT_TOLERANCE, load_task

    task = load_task(folder)
    if not any(o.dtype == "float32" for o in task.outputs):
        return {}, None, []
    config, grow, configs, larger = _rounding_config(task, count)
    unmeasured = (f"no seen or held-out config needs less than {ROUNDING_FLOPS / 1e9:.0f} GFLOP and "
                  f"{ROUNDING_BYTES / 1e6:.0f} MB: the fp32 rounding of the reference at the task's sizes was not "
                  "measured; `arena tasks check` on a GPU shows whether the default fp32 tolerance holds the task's "
                  "own starting point")
    if config is None and not larger and not cases:
        return {}, unmeasured, []
    ref = import_reference(task.reference_path, f"arena_import_rounding_{abs(hash(str(folder)))}")
    base = DEFAULT_TOLERANCE["float32"]
    dots = tf32_dots(task.kernel_file("baseline"))
    pairs, names = [], []
    note = None if config is not None else unmeasured
    if config is not None:
        measured = _rounding_errors(task, ref, config, grow, bool(dots))
        names, pairs = [n for n, _ in measured], [dw for _, dw in measured]
        if not pairs:
            return {}, None, []
    # the outputs whose scale is read: those measured, and of the other seen and held-out configs within SPREAD_*,
    # those whose scale is the smallest (a softmax's over the longest rows)
    scaled_on = [(config, names, [w for _, w in pairs])] if pairs else []

    def fp32(c: Any) -> list[tuple[str, torch.Tensor]]:
        cenv = task.env(c)
        out = _fp32_outputs(ref, make_inputs(task, cenv, 0, "cpu", ref), [task.scalar_value(sc, cenv)
                                                                          for sc in task.scalars])
        return [(spec.name, b.double()) for spec, b in zip(task.outputs, out)
                if spec.dtype == "float32" and (not pairs or spec.name in names) and isinstance(b, torch.Tensor)
                and b.numel() and bool(torch.isfinite(b).all())]

    others = [fbc for fbc in configs if fbc[2] is not config] + larger
    small = smallest_scale([*cases, *(c for *_, c in sorted(others, key=lambda fbc: fbc[:2]))],
                           lambda c: [("float32", n, w) for n, w in fp32(c)], nbytes=lambda c: held_bytes(task, c))
    if small:
        scaled_on.append(small["float32"])
    if not scaled_on:
        return {}, note, []
    outs = [w for _, _, ws in scaled_on for w in ws]
    where = "" if config is None else _rounding_where(config, dots)
    cap = MAX_ROUNDING_TOL_TF32 if dots else MAX_ROUNDING_TOL
    where_scale = "; ".join([where] * bool(pairs) + [
        f"{c.split} config {c.name}"
        + (" at the sizes of the case it grew from (" + ", ".join(f"{k} = {v}" for k, v in c.params.items()) + ")"
           if any(c is x for x in cases) else "") + ", on the CPU, in fp32"
        for c, _, _ in scaled_on[bool(pairs):]])
    why = []
    rtol, atol_needed, norm_tol = base["rtol"], 0.0, base["norm"]
    if pairs:
        rtol = max(base["rtol"], _ceil_ladder(max(float((d / (1 + w.abs())).max()) for d, w in pairs) or 1e-300))
        left, tail = _atol_left(task, pairs, rtol)
        if tail > max(left, base["atol"]):
            why.append(f"atol holds the errors of the outputs below the median |ref| as a normal tail over the "
                       f"{_compared(task)} elements the check compares ({tail:.3g})")
        left = max(left, tail)
        atol_needed = _ceil_ladder(left) if left > 0 else 0.0
        norm = max(float(d.norm() / w.norm().clamp_min(1e-300)) for d, w in pairs)
        norm_tol = max(base["norm"], _ceil_ladder(norm) if norm else 0.0)
    # atol against the outputs' magnitude (a sum of 8192 products is thousands: 0.05 off is 2e-5 of it)
    magnitude = max(1.0, min(median_nonzero(w) for _, w in pairs)) if pairs else 1.0
    if max(rtol, atol_needed / magnitude) > cap["elementwise"] or norm_tol > cap["norm"]:
        why.append(f"the reference's fp32 rounding ({where}; {ROUNDING_MARGIN} times over"
                   + (f", grown {grow:.3g} times for the longest sums" if grow > 1 else "")
                   + f": rtol {rtol:g}, atol {atol_needed:g}, norm {norm_tol:g}) is past what the importer loosens "
                   f"the tolerance to ({cap}): not taken; `arena tasks check` on a GPU shows whether "
                   "the task's starting point passes")
        rtol, atol_needed, norm_tol = base["rtol"], 0.0, base["norm"]
    scale = outputs_scale(outs)
    scaled = _floor_ladder(scale) if MIN_SCALED_ATOL <= scale < base["atol"] else None
    atol = max(atol_needed, scaled if scaled is not None else base["atol"])
    sequential = _sequential_atol(task, outs, base["rtol"], count)
    if sequential > atol:
        atol = sequential
        why.append(f"atol {sequential:g}, the default rtol ({base['rtol']:g}) of the outputs' std where it is past 1 "
                   f"and the sums have {SEQUENTIAL_TERMS} terms or more ({where_scale}): the starting kernel is HIP, "
                   "whose order of summation the CPU does not run, and "
                   "a sum taken one term at a time in fp32 rounds relative to the values it passes through, not to "
                   "the one it ends at (an H200 found 10,889 of 16,777,216 of AKA's SimpleMatmulModule's products over "
                   "K = 4,096, whose std is 128, off by up to 5.6e-4 where the sums cancel, at the default atol 1e-4)")
    final = {"atol": atol, "rtol": rtol, "norm": norm_tol}
    # the degeneracy rules on the outputs measured, at the tolerance the task gets (an output of a few values is read
    # over several draws, on the configs of such outputs: ``few_values_at_sizes``)
    problems = []
    for name, (_, w) in zip(names, pairs):
        if w.numel() > 1:
            problems += [f"on {config.split} config {config.name}: {p}"       # type: ignore[union-attr]
                         for p in spread_problems(name, w, final)]
    for c, cnames, ws in scaled_on[bool(pairs):]:
        for name, w in zip(cnames, ws):
            if w.numel() > 1:
                problems += [f"on {c.split} config {c.name}: {p}" for p in spread_problems(name, w, final)]
    if final == dict(base):     # (the last reason: a rounding not taken, where one was measured)
        return {}, (why[-1] if why else note), problems
    if (rtol, norm_tol) != (base["rtol"], base["norm"]) or atol_needed > (scaled or base["atol"]):
        why.insert(0, f"the reference's own fp32 rounding ({where}), {ROUNDING_MARGIN} times over"
                   + (f" and grown {grow:.3g} times for the longest sums of the task's configs" if grow > 1 else "")
                   + f", which the default fp32 tolerance (atol = rtol = {base['atol']:g}, norm {base['norm']:g}) "
                   "does not hold")
    if scaled is not None:
        times = STD_OVER_ATOL * SCALE_MARGIN
        why.append(f"atol scaled to the outputs' scale ({where_scale}: their std or median |ref| is "
                   f"{scale * times:.3g}, "
                   f"at least {times} times atol): at the default {base['atol']:g}, outputs this small would be "
                   "near-constant for the comparison"
                   + ("; the rounding asks more at small values" if atol_needed > scaled else ""))
    return {"float32": final, "reason": "; ".join(why)}, note, problems


# a sum of at least this many terms an output element (its FLOPs per element, ``_reduction_length``) is one whose
# order of summation a HIP starting kernel may round differently from the reference's (``_sequential_atol``)
SEQUENTIAL_TERMS = 64


def _sequential_atol(task: Any, outs: Sequence[torch.Tensor], rtol: float,
                     count: Callable[[dict], float | None] | None = None) -> float:
    """The atol a task whose starting kernel is HIP needs for sums it may take one term at a time: ``rtol`` of the
    smallest std of the fp32 ``outs`` (each config's outputs read), on the 1-2-5 ladder below it, where that std is
    past 1 and some seen or held-out config sums ``SEQUENTIAL_TERMS`` or more terms an element; 0 otherwise (an
    elementwise op's error is its value's, which rtol holds), or where the starting kernel is not HIP (a Triton
    kernel's rounding is measured as it computes: ``tf32_dots``; PyTorch's is the reference's own)."""
    baseline = task.kernel_file("baseline")
    spreads = [float(w.std()) for w in outs if w.numel() > 1]
    if baseline is None or baseline.suffix != ".hip" or not spreads or min(spreads) <= 1:
        return 0.0
    lengths = []
    for c in [*task.configs("seen"), *task.configs("heldout")]:
        try:
            lengths.append(_reduction_length(task, c, count))
        except formula.FormulaError:
            continue
    if not lengths or max(lengths) < SEQUENTIAL_TERMS:
        return 0.0
    return _floor_ladder(rtol * min(spreads))


def as_written(folder: Path, d: Draft) -> list[Any]:
    """The seen configs of ``d`` grown from a source's cases, at the case's own sizes (``Draft.grown``), under their
    own names."""
    from arena.taskdef.loader import Config, load_task

    grown = getattr(d, "grown", {})
    return [Config("seen", c.index, c.name, {**c.params, **grown[c.name]})
            for c in load_task(folder).configs("seen") if grown.get(c.name)]


def rounding_tolerance(folder: Path, d: Draft) -> tuple[list[str], list[str]]:
    """The fp32 tolerance the task needs at its sizes (``measured_tolerance``), written into
    task.yaml where it is not the default: the decisions that say so (or why it was not
    measured), and what the degeneracy rules found in the outputs measured."""
    from arena.taskdef.loader import DEFAULT_TOLERANCE

    try:
        with probe_limits(ROUNDING_SECONDS):
            tol, note, degenerate = measured_tolerance(folder, as_written(folder, d), d.work)
    except (Exception, ProbeTimeout) as exc:  # noqa: BLE001 - reported, not raised: the folder is written
        what = (f"its runs on the CPU took more than {ROUNDING_SECONDS:g} CPU seconds" if isinstance(exc, ProbeTimeout)
                else f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        return [f"the importer could not measure the reference's fp32 rounding ({what}): `arena tasks check` on a "
                "GPU shows whether the default fp32 tolerance holds the task's own starting point"], []
    if not tol:
        return ([note] if note else []), degenerate
    d.tolerance = tol
    (folder / "task.yaml").write_text(task_yaml(d))
    return [f"tolerance: {tol['reason']}: confirm it (the harness's default is "
            f"{DEFAULT_TOLERANCE['float32']})"], degenerate


def configs_yaml(items: list[dict], header: str) -> str:
    lines = [f"# {ln}" for ln in header.splitlines()]
    if not items:
        return "\n".join(lines + ["[]   # DRAFT: none could be drafted; write them"]) + "\n"
    for item in items:
        note = item.get("#")
        body = {k: v for k, v in item.items() if k != "#"}
        lines.append(f"- {_flow(body)}" + (f"   # {note}" if note else ""))
    return "\n".join(lines) + "\n"


def write_draft(d: Draft, root: Path) -> Path:
    """The draft's folder under ``root`` (``CATEGORY/NAME``), written; an error where it exists."""
    folder = root / d.category / d.name
    if folder.exists():
        raise ArenaError("already exists: remove it or choose another name with --id", path=folder)
    (folder / "configs").mkdir(parents=True)
    (folder / "reference.py").write_text(d.reference)
    write_configs(d, folder)
    for name, text in d.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def drop_degenerate(d: Draft, problems: list[str]) -> list[tuple[str, str]]:
    """The seen and held-out configs the degeneracy rules refused (``problems``: "on SPLIT config NAME: ..."), taken
    out of ``d`` where the rest are still enough (3 seen, 4 held-out; a test's case of a size of 1 that growth keeps:
    a softmax over one column is ones; the seen configs left topped up to 3 by ``d.top_up_seen`` where the draft has
    one). Returns (split, name) of those taken out; none where either split would be left short."""
    named = {(m.group(1), m.group(2)) for p in problems if (m := re.match(r"on (seen|heldout) config (\S+): ", p))}
    if not named:
        return []
    keep = {"seen": [c for c in d.seen if ("seen", c["name"]) not in named],
            "heldout": [c for c in d.heldout if ("heldout", c["name"]) not in named]}
    top_up = getattr(d, "top_up_seen", None)
    if len(keep["seen"]) < 3 and top_up is not None and keep["seen"]:
        # drafted anew around the seen configs left, as the importer drafted the seen configs: none a refused one's
        # sizes, none a name taken
        refused = [config_params(c) for c in d.seen if ("seen", c["name"]) in named]
        taken = {c["name"] for c in [*d.seen, *d.heldout]}
        for c in top_up(list(keep["seen"]))[len(keep["seen"]):]:
            if config_params(c) not in refused:
                c = {**c, "name": c["name"] if c["name"] not in taken else f"{c['name']}-{len(taken)}"}
                taken.add(c["name"])
                keep["seen"].append(c)
    if len(keep["seen"]) < 3 or len(keep["heldout"]) < 4:
        return []
    d.seen[:], d.heldout[:] = keep["seen"], keep["heldout"]
    return sorted(named)


def drop_degenerate_configs(d: Draft, folder: Path, problems: list[str]) -> tuple[list[str], str | None]:
    """``drop_degenerate`` on a written draft: its configs written again where some were taken out. Returns the
    problems left and what was done (None where nothing was)."""
    before = {c["name"] for c in d.seen}
    dropped = drop_degenerate(d, problems)
    if not dropped:
        return problems, None
    write_configs(d, folder)
    left = [p for p in problems if not any(p.startswith(f"on {k} config {n}: ") for k, n in dropped)]
    added = [c["name"] for c in d.seen if c["name"] not in before]
    return left, (f"{len(dropped)} config{'s' if len(dropped) != 1 else ''} whose output is degenerate dropped "
                  f"({', '.join(f'{k} {n}' for k, n in dropped)}; the rules of CONTRIBUTING.md): the others are enough"
                  + (f", with {', '.join(added)} drafted around the seen configs left" if added else ""))


def write_configs(d: Draft, folder: Path) -> None:
    """task.yaml and the config files of ``d``'s folder (written again where a check changed the drafts)."""
    (folder / "task.yaml").write_text(task_yaml(d))
    (folder / "configs" / "seen.yaml").write_text(configs_yaml(
        d.seen, "Seen configs. Entries marked DRAFT were drafted by the importer (run through the original where\n"
                "it could be run); the rules ask for >= 3 'nice' production shapes inside the timing window."))
    (folder / "configs" / "heldout.yaml").write_text(configs_yaml(
        d.heldout, "DRAFT held-out configs (run through the original where it could be run): the rules ask for\n"
                   ">= 4 that differ in kind (odd or prime, not a multiple of 8, another aspect ratio, scale-up,\n"
                   "scale-down)."))
    (folder / "configs" / "smoke.yaml").write_text(configs_yaml(
        d.smoke, "Tiny configs for the CPU backend (drafted by the importer)."))


# where the smoke config's outputs are degenerate, the larger smoke configs tried (one size doubled, or four
# times), and how many times a smoke config's elements they may have
SMOKE_TRIES = 6
SMOKE_GROWTH = 64


def larger_smoke(d: Draft, folder: Path, sizes: Sequence[str], size: Callable[[dict], int],
                 check: Callable[[], Any], clean: Callable[[Any], bool], first_problem: str,
                 valid: Callable[[dict], bool] = lambda c: True) -> tuple[str, Any] | None:
    """Where the smoke config's outputs are degenerate (shrunk so far that a softmax's row is one value, or that a
    chunk's rows hold a few values beside the zeros of its upper triangle), the smoke config with one of ``sizes``
    doubled (else four times as large), the smallest such config first, up to ``SMOKE_TRIES`` of them and
    ``SMOKE_GROWTH`` times ``SMOKE_ELEMENTS`` elements, that ``valid`` accepts and whose ``check`` (run with it
    written in the folder) is ``clean``: (what the import says, that check's result), that config left written.
    None where none is: the smoke config as it was, written again."""
    first = d.smoke
    small = config_params(first[0])
    larger = [{**small, k: small[k] * f} for f in (2, 4) for k in sizes if isinstance(small.get(k), int)]
    larger = sorted((c for c in larger if size(c) <= SMOKE_ELEMENTS * SMOKE_GROWTH and valid(c)), key=size)
    note = str(first[0].get("#", "DRAFT"))
    for cfg in larger[:SMOKE_TRIES]:
        grew = next(k for k in small if cfg[k] != small[k])
        times = cfg[grew] // small[grew]
        d.smoke = [{"name": "smoke", **cfg, "#": f"{note}, {grew} {times} times that (the outputs degenerate there)"}]
        write_configs(d, folder)
        try:
            again = check()
        except Exception:  # noqa: BLE001 - the original refuses that config: the next one is tried
            continue
        if clean(again):
            return (f"the smoke config {small} gave degenerate outputs ({first_problem}); with {grew} {times} times "
                    f"as large, {cfg[grew]}, they are not: that is the smoke config (the seen and held-out configs' "
                    "outputs are checked on a GPU)"), again
    d.smoke = first
    write_configs(d, folder)
    return None


def size_rule_problems(folder: Path) -> list[str]:
    """What `arena tasks check` would refuse in a task folder's sizes alone (``arena.authoring.check.size_problems``):
    the importer's own check reads it on the CPU, as the GPU check would."""
    from arena.authoring.check import size_problems
    from arena.taskdef.loader import load_task

    try:
        found = size_problems(load_task(folder))
    except (ArenaException, formula.FormulaError, ValueError) as exc:
        return [f"the sizes' rules could not be read ({type(exc).__name__}: {exc})"]
    return [f"{p}: the seen and held-out configs are below the timing window; make them larger" for p in found]


def finish_draft(d: Draft, root: Path | None, source: Path,
            self_check: Callable[[Path], tuple[list[str], list[str]]] | None = None,
            device: Any = None) -> ImportResult:
    """Write the folder, validate it as `arena tasks validate` does and, where it validates,
    run the importer's own check (what passed, and what the author must look at; a check may
    also add to the draft's decisions what it decided, which is no problem of the import). ``device`` (an
    ``arena.devices.Device`` that runs kernels): where the import is complete and its own check found nothing, the
    task is then checked there as `arena tasks check --drop-failing-drafts` does (``check_and_fit``)."""
    root = Path(root) if root is not None else DEFAULT_TASKS_DIR
    folder = write_draft(d, root)
    problems = validate_task_dir(folder)
    check_problems: list[str] = []
    checks: list[str] = []
    found: list[str] = []
    if not problems and self_check is not None:
        passed, found = self_check(folder)
        checks += passed
        problems = validate_task_dir(folder)   # the check may have dropped drafts the starting kernel refused
        found = found + size_rule_problems(folder) if not problems else found
        check_problems = list(found)
    decisions = list(d.decisions) + found
    if device is not None and device.runs_kernels and not problems and not check_problems:
        from arena.authoring.check import check_and_fit

        row = check_and_fit(folder, device)
        where = f"{device.kind} ({device.name})"
        if row.dropped:
            decisions.append(f"on {where}, {len(row.dropped)} of the drafted configs failed on their own and were "
                             "taken out (`arena tasks check --drop-failing-drafts`): " + "; ".join(row.dropped))
        if row.ok:
            checks.append(f"`arena tasks check` on {where}: ok ({row.baseline}; baseline {row.window_us} us)")
        else:
            check_problems += [f"`arena tasks check` on {where}: {p}" for p in row.problems]
            decisions += check_problems
        problems = validate_task_dir(folder)
    decisions.append(f"then: `arena tasks check {d.id} --device cpu`, and on a GPU `arena tasks check {d.id} "
                     "--device cuda` (timing window, degeneracy on every split)")
    return ImportResult(folder, source, problems, decisions, checks, check_problems)


def _task_name(text: str) -> str:
    """A task name from a problem's file or folder name: its index dropped (``11_4D_tensor_matrix``), a
    word that starts with a digit moved to the end, as the entry's name may not start with one
    (``tensor_matrix_4d``, not ``d_tensor_matrix``, which ``10_3D_tensor_matrix`` would also give)."""
    words = [w for w in re.sub(r"[^a-z0-9]+", "_", text.lower()).split("_") if w]
    if len(words) > 1 and words[0].isdigit():
        words = words[1:]
    lead = []
    while words and words[0][0].isdigit():
        lead.append(words.pop(0))
    return "_".join(words + lead) if words else "_".join(["imported"] + lead)


def resolve_task_id(task_id: str | None, default_name: str, categories: Iterable[str]) -> tuple[str | None, str]:
    """(category or None, name) from ``--id`` (NAME or CATEGORY/NAME)."""
    if not task_id:
        return None, _task_name(default_name)
    if "/" in task_id:
        category, name = task_id.split("/", 1)
        if category not in CATEGORIES or category not in categories:
            raise ArenaError(f"this importer writes {' or '.join(categories)} tasks, not {category!r}", key="--id")
    else:
        category, name = None, task_id
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise ArenaError("task names are lower_snake_case (a-z, 0-9, _)", key="--id")
    return category, name


def product_formula(dims: list) -> str:
    parts = [str(x) if isinstance(x, int) or re.fullmatch(r"\w+", str(x)) else f"({x})" for x in dims]
    return " * ".join(parts) if parts else "1"


def count_elements(tensors: list[dict], env: dict, weigh: Callable[[dict], int] = lambda t: 1) -> int:
    """The elements of ``tensors`` (signature entries: shape formulas) at ``env``, each tensor's
    count times ``weigh(tensor)``."""
    return sum(math.prod(int(formula.evaluate(x, env)) for x in t["shape"]) * weigh(t) for t in tensors)


def count_bytes(tensors: list[dict], env: dict) -> int:
    """The bytes of ``tensors`` (signature entries: dtype and shape formulas) at ``env``."""
    return count_elements(tensors, env, lambda t: DTYPE_BYTES.get(t.get("dtype"), 4))


def config_params(item: dict) -> dict:
    """A drafted config's parameters (without its name and its note)."""
    return {k: v for k, v in item.items() if k not in ("name", "#")}


def roofline_draft(tensors: list[dict], flops: str | int | None, base_env: dict,
                   reads: dict[str, str] | None = None) -> tuple[dict, list[str]]:
    """bytes: every input read and every output written once, an input named in ``reads`` by its formula there (the
    bytes the reference reads of a buffer it reads a part of); flops: the count given (from PyTorch's FLOP counter,
    which counts matrix products and convolutions), else one per output element."""
    notes = []
    reads = reads or {}
    by_size: dict[int, list[str]] = {}
    for t in tensors:
        if t.get("_output") or t["name"] not in reads:
            by_size.setdefault(DTYPE_BYTES[t["dtype"]], []).append(product_formula(t["shape"]))
    nbytes = " + ".join([f"{size} * ({' + '.join(ps)})" if len(ps) > 1 else f"{size} * {ps[0]}"
                         for size, ps in sorted(by_size.items(), reverse=True)] + list(reads.values())) or "0"
    if not flops:
        outs = [t for t in tensors if t.get("_output")]
        flops = " + ".join(product_formula(t["shape"]) for t in outs) or "0"
        notes.append("roofline.flops counts one operation per output element (no matrix product or convolution "
                     "was counted): write the real count")
    try:
        f_val = float(formula.evaluate(flops, base_env))
        b_val = float(formula.evaluate(nbytes, base_env))
        bound = "compute" if b_val and f_val / b_val > 20 else "memory"
    except formula.FormulaError:
        bound = "memory"
    return {"bound": bound, "flops": flops if isinstance(flops, int) else str(flops), "bytes": nbytes}, notes


def _odd(v: int) -> int:
    v = v + 1 if v % 2 == 0 else v
    while v & (v - 1) == 0:
        v += 2
    return v


def _prime_below(v: int) -> int:
    def prime(n: int) -> bool:
        return n >= 2 and all(n % k for k in range(2, int(n ** 0.5) + 1))
    n = v - 1
    while n > 2 and not prime(n):
        n -= 1
    return n


def _shrunk(base: dict[str, int], keys: Iterable[str], fits: Callable[[dict], bool], valid: Callable[[dict], bool],
            floor: int = 4, excess: Callable[[dict], float] | None = None) -> dict[str, int]:
    """``base`` with its largest sizes among ``keys`` halved, one at a time, until ``fits``
    accepts it; a halving ``valid`` refuses freezes that size. With ``excess`` (how far a config is
    past the bounds), the size halved is the one whose halving brings it down the most (a
    recurrence's steps, not its hidden size, where the steps are what is past)."""
    out = dict(base)
    frozen: set[str] = set()
    for _ in range(200):
        if fits(out):
            break
        cands = [k for k in sorted(keys, key=lambda k: -out[k]) if k not in frozen and out[k] > floor]
        if excess is not None:
            now = excess(out)
            gain = {k: now - excess({**out, k: max(floor, out[k] // 2)}) for k in cands}
            cands = sorted((k for k in cands if gain[k] > 0), key=lambda k: -gain[k]) or cands
        if not cands:
            break
        trial = {**out, cands[0]: max(floor, out[cands[0]] // 2)}
        if valid(trial):
            out = trial
        else:
            frozen.add(cands[0])
    return out


# A config inside the timing window (arena.authoring.check: every seen and held-out config's baseline 20 us or
# more; a memory-bound task moves 100 MB in one config at least): three times the check's 100 MB, so that the
# drafts around it (halved, a third) stay above it, or this much work
WINDOW_MARGIN = 3
WINDOW_BYTES = WINDOW_MARGIN * 100 * 10**6
WINDOW_FLOPS = 2 * 10**10


# growth and drafts hold a half-precision output's largest value, as predicted from the source's largest case, this
# many times inside its dtype's range: a sum's length grows its values (AKA's llama_ff_triton, grown along its model
# dimension from 64 to 12,288, reached 125,060 in fp16; rocmbench's test_chained_matmul, along the length of its second
# product's sum, 6.8e6), and the check then refuses the task
RANGE_MARGIN = 4
# a size whose doubling moves the outputs' RMS by less than this factor is one their values do not follow (the draw's
# own noise, at a case's small sizes)
FOLLOWS = 1.15
# growth and drafts hold an output whose values shrink as a size grows (an attention's average over its keys: about
# 1 / sqrt(keys)) this many times above what the degeneracy rules ask of it at its tolerance (its spread above
# min(MIN_STD, STD_OVER_ATOL * atol), its median nonzero magnitude above atol), as predicted from the source's largest
# case: vLLM's unified_attention_2d, grown along its keys to 16,384, had 56% of its outputs below the test's atol of
# 0.01 on an H200, past what the CPU could read for the tolerance's scale
FLOOR_MARGIN = 2


def _doubling_factors(magnitudes: Callable[[dict], dict[str, tuple[float, ...]] | None], base: dict[str, int],
                      at: dict[str, tuple[float, ...]], k: str) -> dict[str, float]:
    """Each output's RMS's factor per doubling of size ``k`` from ``base`` (read with it four times larger, or, where
    that does not run, twice), {} where neither runs."""
    for times in (4, 2):
        got = magnitudes({**base, k: base[k] * times})
        if got:
            return {n: (got[n][1] / rms) ** (1 / math.log2(times)) for n, (_, rms, *_) in at.items() if n in got}
    return {}


def _under_floor(std: float, median: float, least_std: float, atol: float) -> tuple[str, float, str] | None:
    """Which of an output's spread and median nonzero |value| is within ``FLOOR_MARGIN`` times of what the
    degeneracy rules ask at its atol (``least_std`` for the spread, atol for the median): (what, its value, why),
    or None."""
    for what, v, least in (("spread", std, least_std), ("median nonzero |value|", median, atol)):
        if v < FLOOR_MARGIN * least:
            return what, v, (f"within {FLOOR_MARGIN} times of the {least:g} its tolerance (atol {atol:g}) asks: "
                             "outputs near zero pass for a kernel that writes zeros")
    return None


class RangeModel:
    """How the values of each output follow the sizes, read by ``magnitudes(cfg)`` (each output's largest |value|,
    RMS, count of values, standard deviation and median nonzero |value|, from a run of the reference on the CPU; None
    where it did not run) at a case and with each size among ``keys`` made four times larger in turn (two doublings:
    a product of two sums grows by 1.67 a doubling from 64 and by 2 further on), or, where that does not run, twice:
    each doubling of a size multiplies the RMS by the factor read.

    ``limits``: each output's dtype's largest finite value (the outputs a range can hold: half precision), read at
    ``base`` (the source's largest case): a size whose factor is ``FOLLOWS`` or more is one the values follow
    (``follows``), and the largest of N values over their RMS grows as sqrt(2 ln N) (a normal tail). A config is
    within range where every limited output's predicted largest |value| is ``RANGE_MARGIN`` times inside its limit,
    or no larger than at ``base`` (a case the source itself runs).

    ``floors``: an output's atol, as the task will compare it: read at the case of ``cases`` (and ``base``) nearest a
    config (the fewest doublings apart, a size 0 only near a 0: a sliding window off), a size whose factor is 1 /
    ``FOLLOWS`` or less is one the values shrink along (an attention's keys, where no window bounds them), and a
    config is out of range where an output the degeneracy rules pass at that case would have its spread or median
    within ``FLOOR_MARGIN`` times of what they ask. Read lazily, a case when a config nearest it is first asked
    about. Where a case does not run, no config is held by it."""

    def __init__(self, magnitudes: Callable[[dict], dict[str, tuple[float, ...]] | None],
                 base: dict[str, int], keys: Iterable[str], limits: dict[str, float],
                 counts: Callable[[dict], dict[str, int]], floors: dict[str, float] | None = None,
                 cases: Iterable[dict] = ()) -> None:
        reads: dict[tuple, dict[str, tuple[float, ...]] | None] = {}
        run = magnitudes

        def read(cfg: dict) -> dict[str, tuple[float, ...]] | None:   # each config run once
            key = tuple(sorted(cfg.items()))
            if key not in reads:
                reads[key] = run(cfg)
            return reads[key]

        self.magnitudes = magnitudes = read
        self.base = dict(base)
        self.keys = list(keys)
        self.limits = dict(limits)
        self.counts = counts
        self.floor_atol = dict(floors or {})
        at = (magnitudes(self.base) or {}) if limits else {}
        self.at = {n: v for n, v in at.items() if n in self.limits and math.isfinite(v[0]) and v[1] > 0}
        self.follows: dict[str, dict[str, float]] = {}      # size -> output -> factor per doubling
        for k in self.keys if self.at else ():
            if self.base.get(k, 0) > 0:
                up = {n: f for n, f in _doubling_factors(magnitudes, self.base, self.at, k).items() if f >= FOLLOWS}
                if up:
                    self.follows[k] = up
        self.cases = [dict(c) for c in [self.base, *cases]] if self.floor_atol else []
        # per case read: {output: (spread it asks, atol, std, median)}, {size: {output: factor}}
        self._floor_reads: dict[int, tuple[dict[str, tuple[float, float, float, float]],
                                           dict[str, dict[str, float]]]] = {}

    def nearest(self, cfg: dict) -> int | None:
        """The index among ``cases`` of the case fewest doublings from ``cfg`` (a size 0 is only near a 0), or None."""
        def apart(c: dict) -> float:
            d = 0.0
            for k in self.keys:
                a, b = cfg.get(k, c.get(k, 0)), c.get(k, 0)
                if (a > 0) != (b > 0):
                    return math.inf
                d += abs(math.log2(a / b)) if a > 0 else 0.0
            return d
        far = [apart(c) for c in self.cases]
        return None if not far or min(far) == math.inf else far.index(min(far))

    def floor_read(self, i: int) -> tuple[dict[str, tuple[float, float, float, float]], dict[str, dict[str, float]]]:
        """Case ``i``'s outputs the degeneracy rules pass there (what their spread asks, their atol, spread and
        median) and the sizes their values shrink along."""
        if i not in self._floor_reads:
            from arena.check.degeneracy import least_spread

            case = self.cases[i]
            at = {n: v for n, v in (self.magnitudes(case) or {}).items()
                  if n in self.floor_atol and len(v) > 4 and math.isfinite(v[0]) and v[1] > 0}
            held = {}
            for n, v in at.items():
                atol = self.floor_atol[n]
                least = least_spread(atol)
                if v[3] > least and v[4] >= atol:
                    held[n] = (least, atol, v[3], v[4])
            shrinks: dict[str, dict[str, float]] = {}
            for k in self.keys if held else ():
                if case.get(k, 0) > 0:
                    down = {n: f for n, f in _doubling_factors(self.magnitudes, case, at, k).items()
                            if f <= 1 / FOLLOWS and n in held}
                    if down:
                        shrinks[k] = down
            self._floor_reads[i] = (held, shrinks)
        return self._floor_reads[i]

    @property
    def shrinks(self) -> dict[str, dict[str, float]]:
        """The sizes the outputs' values shrink along, read at ``base``."""
        return self.floor_read(0)[1] if self.cases else {}

    def predicted(self, cfg: dict) -> dict[str, float]:
        """Each limited output's largest |value| predicted at ``cfg``."""
        out = {}
        try:
            counts = self.counts(cfg)
        except Exception:  # noqa: BLE001 - a config the formulas do not give: its count as at base
            counts = {}
        for n, (peak, rms, count, *_) in self.at.items():
            for k, factors in self.follows.items():
                if n in factors and cfg.get(k, 0) > 0:
                    rms *= factors[n] ** math.log2(cfg[k] / self.base[k])
            tail = math.sqrt(max(1.0, math.log(max(counts.get(n, count), 2)) / math.log(max(count, 2))))
            out[n] = peak / self.at[n][1] * rms * tail
        return out

    def past(self, cfg: dict) -> str | None:
        """Why ``cfg`` is out of range (the output, its predicted largest |value| and its dtype's limit, or its
        predicted spread or median and what its tolerance asks), or None."""
        for n, v in self.predicted(cfg).items():
            if v * RANGE_MARGIN > self.limits[n] and v > self.at[n][0]:
                sizes = ", ".join(k for k in self.follows if n in self.follows[k])
                return (f"{n} would reach about {v:.3g} there"
                        + (f" (its values follow {sizes})" if sizes else "")
                        + f", past {RANGE_MARGIN} times inside the {self.limits[n]:g} its dtype holds")
        i = self.nearest(cfg)
        if i is None:
            return None
        case = self.cases[i]
        held, shrinks = self.floor_read(i)
        for n, (least_std, atol, std, median) in held.items():
            scale = 1.0
            for k, factors in shrinks.items():
                if n in factors and cfg.get(k, 0) > 0:
                    scale *= factors[n] ** math.log2(cfg[k] / case[k])
            if scale >= 1:
                continue
            sizes = [k for k in shrinks if n in shrinks[k]]
            under = _under_floor(std * scale, median * scale, least_std, atol)
            if under:
                return (f"{n}'s {under[0]} would shrink to about {under[1]:.3g} there (its values shrink as "
                        f"{', '.join(sizes)} grow{'s' if len(sizes) == 1 else ''}), {under[2]}")
        return None

    def measured(self, cfg: dict, read: dict[str, tuple[float, float]]) -> str | None:
        """Why ``cfg``'s outputs as ``read`` there (each output's spread and median nonzero |value|, from a run of
        the reference at ``cfg`` on the CPU) are too small for their tolerance: an output the degeneracy rules pass
        at the nearest case whose spread or median is within ``FLOOR_MARGIN`` times of what they ask. The predicted
        rule misses sizes that bound each other's effect (an attention's keys and its sliding window: the window
        read alone at a case of 128 keys, past them, seemed to move the outputs little; vLLM's
        unified_attention_2d grown along both to 16,384 had 55% of its outputs below its atol on an H200)."""
        i = self.nearest(cfg)
        if i is None:
            return None
        for n, (least_std, atol, *_) in self.floor_read(i)[0].items():
            under = _under_floor(*read[n], least_std, atol) if n in read else None
            if under:
                return f"{n}'s {under[0]} is {under[1]:.3g} there (the reference run on the CPU), {under[2]}"
        return None

    def __call__(self, cfg: dict) -> bool:
        return self.past(cfg) is None


def grown(base: dict[str, int], keys: list[str], valid: Callable[[dict], bool], nbytes: Callable[[dict], int],
          enough: Callable[[dict], bool], work: Callable[[dict], float] | None = None,
          last: Collection[str] = ()) -> dict[str, int]:
    """``base`` with the sizes among ``keys`` doubled one at a time until ``enough`` accepts it, within
    ``SCALED_BYTES``: each time the size whose doubling moves the most bytes (a histogram's tokens, not its count
    of experts, which only makes its reference loop longer), among sizes alike in that the one doubled least (a
    matrix keeps its aspect); a doubling ``valid`` refuses, or that passes ``SCALED_BYTES``, freezes that size. Where
    the doublings stop short of the window, a size whose doubling passed that bound (a size three dimensions follow:
    eight times the bytes) or that ``valid`` refused (a reference whose cost grows with it past its bound at twice
    the size, FLA's chunked cumsum at 2,097,152 steps: 1,048,576 was 67 MB, below the check's floor, and 1,572,864
    is past it) then steps by 3/2, then by 5/4, as far as it goes. A size whose doubling moves no more
    bytes, and does no more ``work`` where it is given, than the config before (a block size, which only divides a
    count) brings the window no nearer however far it goes, and is frozen too: doubled on, it had reached sizes past
    what a float holds (AKA's ``w8a8_block_int8_matmul``: ``OverflowError``, the import lost); where the original
    refuses a size doubled alone, it is doubled with one of those instead, where the original accepts that (a KV
    cache's tokens, bounded by its slots, whose count moves nothing: the cache is counted by the slots written),
    that one first scaled by as much as the size has grown since ``base``, and the two doubled together from then
    on: their proportion stays the case's. Doubled only as far as the bound, the tokens filled every slot, the
    cache's old values were gone from the outputs, and the check refused the configs as degenerate (vLLM's
    ``reshape_and_cache_flash``: 32 tokens for 256 slots grown to 32,768 for 32,768). Sizes in ``last`` (those
    the outputs' values follow, ``RangeModel``: a sum's length) are doubled only once no other size can be: grown
    first, they took the range the others needed (rocmbench's test_chained_matmul stopped at 2 MB, its rows never
    grown)."""
    out = dict(base)
    live = [k for k in keys if out[k] > 0]
    doubled = dict.fromkeys(live, 0)
    finer: list[str] = []
    tied: dict[str, str] = {}       # a size the original bounds by another: the two doubled together
    while live and not enough(out):
        gain = {k: nbytes({**out, k: out[k] * 2}) for k in ([k for k in live if k not in last] or live)}
        top = max(gain.values())
        k = min((k for k in gain if gain[k] >= 0.99 * top), key=lambda k: doubled[k])
        trial = {**out, k: out[k] * 2}
        if gain[k] <= nbytes(out) and (work is None or work(trial) <= work(out)):
            live.remove(k)
            continue
        if gain[k] > SCALED_BYTES:
            live.remove(k)
            finer.append(k)
            continue
        if k in tied:
            trial = next((t for t in ({**trial, tied[k]: out[tied[k]] * 2}, trial) if valid(t)), None)
            if trial is None:
                live.remove(k)
                continue
        elif not valid(trial):
            # a size bounded by one that moves nothing itself (a cache's tokens by its slots): that one scaled as
            # this has grown since the case, then doubled with it
            room = [r for r in keys if r != k and out[r] > 0 and nbytes({**out, r: out[r] * 2}) <= nbytes(out)
                    and (work is None or work({**out, r: out[r] * 2}) <= work(out))]
            both = next(((r, t) for r in room
                         for t in ({**trial, r: max(out[r] * 2, -(-base[r] * trial[k] // base[k]))},
                                   {**trial, r: out[r] * 2}) if valid(t)), None)
            if both is None:
                live.remove(k)
                finer.append(k)
                continue
            tied[k], trial = both
        out = trial
        doubled[k] += 1
    for k in finer:
        while not enough(out):
            step = next((t for t in ({**out, k: out[k] * 3 // 2}, {**out, k: out[k] * 5 // 4})
                         if out[k] < t[k] and nbytes(t) <= SCALED_BYTES and valid(t)), None)
            if step is None:
                break
            out = step
    return out


def leading_size(inputs: list[dict], outputs: list[dict], params: list[dict]) -> str | None:
    """The name of the size that leads the shape of every input and every output and is in no parameter's shape (a
    batch), or None."""
    lead = {str(t["shape"][0]) if t["shape"] else "" for t in [*inputs, *outputs]}
    name = lead.pop() if len(lead) == 1 else ""
    if not inputs or not re.fullmatch(r"[A-Za-z_]\w*", name):
        return None
    in_params = {n for t in params for x in t["shape"] for n in re.findall(r"[A-Za-z_]\w*", str(x))}
    return None if name in in_params else name


def in_window(nbytes: Callable[[dict], int], work: Callable[[dict], float], share: float = 1.0
              ) -> Callable[[dict], bool]:
    """Whether a config is inside the timing window, by its bytes or its work (``WINDOW_BYTES``, ``WINDOW_FLOPS``;
    ``share`` of them: a third, the check's own 100 MB, is the floor where a reference's cost stops the growth)."""
    return lambda c: nbytes(c) >= WINDOW_BYTES * share or work(c) >= WINDOW_FLOPS * share


def grown_cases(cases: list[dict], keys: list[str], valid: Callable[[dict], bool], nbytes: Callable[[dict], int],
                enough: Callable[[dict], bool], floor: Callable[[dict], bool] | None = None,
                work: Callable[[dict], float] | None = None,
                last: Collection[str] = ()) -> list[tuple[int, dict, dict]]:
    """Where a source's ``cases`` (full configs) are below the timing window (``enough``), all or some: each one
    below it grown into it by its sizes among ``keys`` (``grown``), each inside it as it is, as (its number, the case,
    the config), those that reach it and differ from the ones before in a size the bytes follow (a case below the
    window is a config the harness cannot time; cases that grow into one set of sizes, a seed apart, are one
    config); [] where every case is inside it already. ``floor``: where ``valid`` stops a growth short of the window
    (a reference whose cost grows with a size), what it reached is kept if ``floor`` accepts it. ``work``: as
    ``grown`` takes it (what the window counts beside the bytes), and ``last``."""
    if not keys or not cases or all(enough(c) for c in cases):
        return []
    out: list[tuple[int, dict, dict]] = []
    sizes = [k for k in keys if nbytes({**cases[0], k: cases[0][k] * 2}) != nbytes(cases[0])]   # not a seed
    for i, c in enumerate(cases):
        g = c if enough(c) else grown(c, keys, valid, nbytes, enough, work, last)
        if (enough(g) or (floor is not None and floor(g))) and all(any(g[k] != o[k] for k in sizes)
                                                                   for _, _, o in out):
            out.append((i, c, g))
    return out


def grown_from(case: dict, config: dict) -> dict:
    """The comment of a seen config grown from a source's ``case`` (``{}`` where it is the case as written)."""
    changed = [f"{k} {case[k]}" for k in case if case[k] != config[k]]
    return {"#": "DRAFT: grown from " + ", ".join(changed)} if changed else {}


def topped_up(seen: list[dict], drafts: list[dict], keys: list[str], valid: Callable[[dict], bool],
              nbytes: Callable[[dict], int], enough: Callable[[dict], bool], fallback: Iterable[dict] = (),
              want: int = 3, fits: Callable[[dict], bool] = lambda c: True) -> list[dict]:
    """``seen`` (named configs inside the timing window: the cases grown) topped up to ``want`` with configs that
    differ from them: the ``drafts`` inside the window, then a seen config with one size among ``keys`` times 3/2,
    2, 1/2, 5/4 or 3/4 (inside the window, within ``SCALED_BYTES`` and ``fits``, the drafts' bound on their work,
    accepted by ``valid``; cases that grew into one set of sizes leave room: a power-of-two grid has few sizes between
    the window and the bound, and a product of one size in three dimensions fewer: 3/4 of it is under half the
    work), then ``fallback`` (the cases as written)."""
    out = list(seen)

    def new(c: dict) -> bool:
        return all(config_params(c) != config_params(x) for x in out)

    for d in drafts:
        if len(out) < want and enough(config_params(d)) and new(d):
            out.append(d)
    for base in list(out):
        for k in keys:
            for factor, tag in ((1.5, "x 3/2"), (2, "doubled"), (0.5, "halved"), (1.25, "x 5/4"), (0.75, "x 3/4")):
                c = {**config_params(base), k: max(1, int(config_params(base)[k] * factor))}
                if (len(out) < want and new(c) and enough(c) and nbytes(c) <= SCALED_BYTES and fits(c)
                        and valid(c)):
                    out.append({"name": f"draft-{len(out)}", **c,
                                "#": f"DRAFT: {base.get('name', 'a seen config')}'s {k} {tag}"})
    for c in fallback:
        if len(out) < want and new(c) and all(c.get("name") != x.get("name") for x in out):
            out.append(c)
    return out


def draft_configs(base: dict[str, int], vary: list[str], valid: Callable[[dict], bool],
                  size: Callable[[dict], int], seen_name: str, nbytes: Callable[[dict], int] | None = None,
                  work: Callable[[dict], float] | None = None, smoke_from: dict | None = None,
                  calls: Iterable[str] = (), temporaries: Callable[[dict], int] | None = None,
                  smoke_keeps: Iterable[str] = (), serial: Callable[[dict], float] | None = None,
                  min_bytes: float = 0.0, grow_first: Iterable[str] = (),
                  ) -> tuple[list[dict], list[dict], list[dict], list[str], list[dict]]:
    """Seen (the base config and drafts around it), held-out and smoke drafts, each kept only
    where ``valid`` accepts it; notes on what could not be drafted; spare held-out drafts (each
    kind's alternatives after the one taken, not run through the original: where a starting
    kernel refuses a draft, ``kernel_probe.fit_drafts`` tries its kind's spares). The smoke config is shrunk from
    ``smoke_from`` (sizes over the base's; a source's smallest test case) where given, but for the sizes
    ``smoke_keeps`` names (every test case of the source has them alike: a head size the kernel asserts).
    With ``nbytes`` (a config's
    bytes of inputs and outputs) and ``work`` (its FLOPs), a base past ``SCALED_BYTES`` or
    ``SCALED_FLOPS`` is scaled down first (the seen configs' first is then the scaled one), and
    no draft past ``MAX_CONFIG_BYTES`` or ``MAX_CONFIG_FLOPS`` is kept; ``calls``: what the reference calls, its
    FLOPs counted ``work_factor(calls)`` times against the bounds; ``temporaries``: the bytes the reference has alive
    at once past its outputs', counted with the inputs' and outputs' against the bytes bounds; ``serial``: the seconds
    its steps that run one after another take (a recurrence's), held to ``MAX_SERIAL_S`` as the FLOPs are;
    ``min_bytes``: where no seen or held-out draft moves that many bytes (a memory-bound task's rule), a seen config
    grown from the base (``grown``: its sizes doubled, those of ``grow_first`` first, within the bounds above) until
    one does, beside the base."""
    notes = []
    io_b = nbytes or (lambda c: 0)
    temp_b = temporaries or (lambda c: 0)
    cost_f = work or (lambda c: 0.0)
    factor, slow = work_factor(calls) if work else (1.0, None)

    def cost_b(c: dict) -> int:
        return io_b(c) + temp_b(c)

    serial_s = serial or (lambda c: 0.0)

    def fits(c: dict, b: float = MAX_CONFIG_BYTES, f: float = MAX_CONFIG_FLOPS, t: float = MAX_SERIAL_S) -> bool:
        return cost_b(c) <= b and cost_f(c) * factor <= f and serial_s(c) <= t

    def cost(c: dict) -> str:
        temps = cost_b(c) - io_b(c)
        return (f"{io_b(c) / 2**30:.2f} GiB of inputs and outputs"
                + (f" and {temps / 2**30:.2f} GiB of the reference's temporaries" if temps > 0 else "")
                + (f", {cost_f(c) / 1e9:.3g} GFLOP" if work else "")
                + (f", {serial_s(c) / RECURRENT_STEP_S:.0f} recurrent steps one after another" if serial else ""))

    first: dict[str, Any] = {"name": seen_name, **base}
    def excess(c: dict) -> float:
        return max(cost_b(c) / SCALED_BYTES, cost_f(c) * factor / SCALED_FLOPS, serial_s(c) / (MAX_SERIAL_S / 4))

    if not fits(base, SCALED_BYTES, SCALED_FLOPS, MAX_SERIAL_S / 4) and vary:
        scaled = _shrunk(base, vary, lambda c: fits(c, SCALED_BYTES, SCALED_FLOPS, MAX_SERIAL_S / 4), valid,
                         floor=MIN_VARIED, excess=excess if serial else None)
        changed = ", ".join(f"{k} {base[k]} -> {scaled[k]}" for k in base if scaled[k] != base[k])
        bound = f"{MAX_CONFIG_BYTES / 2**30:.1f} GiB, {MAX_CONFIG_FLOPS / factor / 1e12:.3g} TFLOP" + (
            f" of {slow}, counted {factor:g} times: " + SLOW_WHY.get(
                slow, f"an H100 runs fp32 convolutions at down to 1/{factor:g} of a matrix product's rate")
            if slow else "") + (
            f", {MAX_SERIAL_S / RECURRENT_STEP_S:.0f} recurrent steps one after another (a layer's step in one "
            f"direction: {RECURRENT_STEP_S * 1e6:.0f} us on an H200)" if serial else "")
        if changed and fits(scaled):
            notes.append(f"the {seen_name}'s own sizes need {cost(base)}; drafts up to 4 times that must stay within "
                         f"what the harness draws and checks beside other evaluations ({bound}): they are made around "
                         f"the {seen_name}'s sizes scaled down ({changed}; {cost(scaled)})")
            base = scaled
            first = {"name": f"{seen_name}-scaled", **base,
                     "#": f"DRAFT: the {seen_name}'s sizes scaled down ({changed})"}
        else:
            notes.append(f"the {seen_name}'s own sizes need {cost(base)}, and the importer could not scale them down "
                         "with the original valid; drafts past what the harness draws and checks beside other "
                         f"evaluations ({bound}) are not kept: make them smaller")
    seen = [first]
    big = sorted(vary, key=lambda k: -base[k])
    tried: list[tuple[str, dict, str]] = []
    for top in big[:3]:     # the largest size first; the next where the original refuses its drafts
        tried += [("draft-x2", {top: base[top] * 2}, f"{top} doubled"),
                  ("draft-half", {top: max(1, base[top] // 2)}, f"{top} halved"),
                  ("draft-x4", {top: base[top] * 4}, f"{top} x4")]
        tried.append(("draft-quarter", {top: max(1, base[top] // 4)}, f"{top} quartered"))
    for name, over, why in tried:
        cfg = {**base, **over}
        if (len(seen) < 3 and cfg not in [config_params(s) for s in seen]
                and fits(cfg) and valid(cfg)):
            if name in [s["name"] for s in seen]:
                name = f"{name}-{next(iter(over))}"
            seen.append({"name": name, **cfg, "#": f"DRAFT: {why}"})
    held: list[dict] = []
    # each kind of held-out draft, on the largest size first, else on the next ones (a size the original ties to
    # another, a matrix's rows to its groups, refuses what a free one takes)
    kinds: list[tuple[str, list[tuple[dict, str]]]] = []
    if big:
        keys = big[:3]
        kinds.append(("draft-odd", [({k: _odd(base[k]) for k in vary}, "every size odd, not a power of two")]))
        kinds.append(("draft-not-mult-8", [({k: base[k] - base[k] % 8 + 4 if base[k] >= 8 else base[k] + 1},
                                            f"{k} not a multiple of 8") for k in keys]))
        kinds.append(("draft-prime", [({k: _prime_below(base[k])}, f"{k} prime") for k in keys if base[k] > 3]))
        if len(big) >= 2:
            pairs = list(dict.fromkeys([(big[0], big[-1]), *((a, b) for a in keys for b in reversed(big) if a != b)]))
            aspects = [({a: max(1, base[a] // 4), b: base[b] * 4}, f"{a} / 4, {b} x 4") for a, b in pairs[:4]]

            def apart(c: dict) -> float:
                """How far a config's bytes or FLOPs are from the base's (a factor, as its log): another shape of
                about the same work, not a quarter of the classifier's width and four times the batch (4 times
                a network's work, past the timing window where its base is near the top of it)."""
                ratios = [f(c) / f(base) for f in (cost_b, cost_f) if f(base) > 0 and f(c) > 0]
                return round(max((abs(math.log(r)) for r in ratios), default=0.0), 1)

            kinds.append(("draft-aspect", sorted(aspects, key=lambda ow: apart({**base, **ow[0]}))))
        kinds.append(("draft-scale-up", [({k: base[k] * 2 + 2}, f"{k} scaled up") for k in keys]))
        kinds.append(("draft-scale-down", [({k: max(1, base[k] // 3 + 1)}, f"{k} scaled down") for k in keys]))
    seen_params = [config_params(s) for s in seen]
    spare: list[dict] = []      # each kind's other alternatives, not run through the original
    for name, alternatives in kinds:
        taken = False
        for over, why in alternatives:
            cfg = {**base, **over}
            if cfg in seen_params or cfg in [config_params(h) for h in held]:
                continue
            if taken:
                if fits(cfg):
                    spare.append({"name": name, **cfg, "#": f"DRAFT: {why}"})
            elif fits(cfg) and valid(cfg):
                held.append({"name": name, **cfg, "#": f"DRAFT: {why}"})
                taken = True
    most = max((io_b(c) for c in [*seen, *held]), default=0)
    if min_bytes and nbytes and vary and most < min_bytes:
        def takes(c: dict) -> bool:
            return fits(c) and valid(c)

        def moves(c: dict) -> bool:
            return io_b(c) >= min_bytes

        first_keys = [k for k in grow_first if k in vary]
        g = grown(base, first_keys or vary, takes, io_b, moves)
        if not moves(g) and first_keys:
            g = grown(g, vary, takes, io_b, moves)
        if moves(g) and g != base and takes(g):
            seen = [seen[0], {"name": "draft-grown", **g, **grown_from(base, g)}, *seen[1:]][:max(3, len(seen))]
            changed = ", ".join(f"{k} {base[k]} -> {g[k]}" for k in base if g[k] != base[k])
            notes.append(f"the {seen_name}'s sizes and the drafts around them move at most {most / 1e6:.0f} MB, below "
                         f"the {min_bytes / 1e6:.0f} MB a memory-bound task moves in one config: seen.yaml has a "
                         f"config grown from them ({changed}; {io_b(g) / 1e6:.0f} MB), each size accepted by the "
                         "original")
    if not vary:
        notes.append("no constant of the problem is a size (>= 8) the importer could vary: the seen and held-out "
                     "drafts could not be made; write them")
    # smoke: halve the largest sizes until the tensors are tiny
    small = {**base, **(smoke_from or {})}
    smoke = _shrunk(small, [k for k in small if k not in set(smoke_keeps)], lambda c: size(c) <= SMOKE_ELEMENTS, valid)
    if size(smoke) > SMOKE_ELEMENTS:
        notes.append(f"the smoke config still has {size(smoke)} elements (the importer could not shrink it "
                     "further and keep the original valid): make it smaller for the CPU backend")
    why = "the smallest case" if smoke_from and smoke == small else "sizes halved from the seen config"
    return seen, held, [{"name": "smoke", **smoke, "#": f"DRAFT: {why}"}], notes, spare


def shape_space_draft(base: dict[str, int], vary: list[str]) -> dict:
    """Ranges around ``base`` for the sizes in ``vary``, its value for the rest; a size varied elsewhere that is 0
    here (a sliding window a grown case has off) keeps that value: [0 // 8, 0 * 4] is no range."""
    space: dict[str, Any] = {}
    for k, v in base.items():
        if k in vary and v >= 1:
            space[k] = {"min": max(1, v // 8), "max": v * 4}
        else:
            space[k] = {"choices": [v]}
    return space


def _without_docstrings(source: str) -> str:
    """Python source with its docstrings taken out (as ``ast.unparse`` writes it, comments gone too); the source
    as it is where it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            body[0] = ast.Pass()
    return ast.unparse(tree)


def space_constraint(base: dict[str, int], vary: list[str], space: dict, valid: Callable[[dict], bool],
                     draws: int = 48, seed: int = 0, source: str = "") -> tuple[str | None, str | None]:
    """The constraint a draft shape_space needs where the original refuses configs drawn from it: up to three
    of: a divisibility (``features % num_groups == 0``, ``out_channels % (4 * groups) == 0``), an equality
    (``out_channels == in_channels``) or a bound (``height >= kernel_size``, ``kernel_size >= 2 * padding``)
    between two of its parameters that the problem's own values satisfy, kept when every refused draw, adjusted
    to satisfy it, is accepted; another is looked for where draws that keep it are still refused. ``source``: the
    problem's text, to choose between relations that draw alike.
    Returns (constraint or None, what the author is told or None)."""
    import itertools
    import random

    from arena.taskdef.shapes import draw_value

    rng = random.Random(seed)
    code = _without_docstrings(source)

    def draw() -> dict:   # as the random split draws
        return {k: draw_value(rng, v) for k, v in space.items()}

    names = [k for k in space if k in base]
    cands: list[tuple[str, Callable[[dict], dict]]] = []
    for a in vary:
        for b in names:
            if a == b or base[b] <= 1:
                continue
            if base[a] % base[b] == 0:
                cands.append((f"{a} % {b} == 0",
                              lambda c, a=a, b=b: {**c, a: max(c[b], round(c[a] / c[b]) * c[b])}))
            for m in (2, 4, 8):     # channels a quarter of which a grouped convolution splits into groups
                if base[a] % (m * base[b]) == 0:
                    cands.append((f"{a} % ({m} * {b}) == 0", lambda c, a=a, b=b, m=m: {
                        **c, a: max(m * c[b], round(c[a] / (m * c[b])) * m * c[b])}))
            if base[a] == base[b] and (b not in vary or names.index(b) < names.index(a)):
                cands.append((f"{a} == {b}", lambda c, a=a, b=b: {**c, a: c[b]}))
            elif base[a] > base[b]:
                cands.append((f"{a} >= {b}", lambda c, a=a, b=b: {**c, a: max(c[a], c[b])}))
            if base[a] >= 2 * base[b]:      # a pooling window and its padding (at most half the window)
                cands.append((f"{a} >= 2 * {b}", lambda c, a=a, b=b: {**c, a: max(c[a], 2 * c[b])}))
    for a in vary:     # a size a fixed number divides (a map pooled four times: its side a multiple of 16; a
        # depthwise convolution's output channels a multiple of its input channels, kept as the number 128)
        for m in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
            if base[a] % m == 0 and (base[a] > m or (m > 64 and base[a] == m)):
                cands.append((f"{a} % {m} == 0", lambda c, a=a, m=m: {**c, a: max(m, round(c[a] / m) * m)}))
    # a fixed divisor (groups) first, then equalities, then bounds; a number of its own last (of two relations that
    # draw alike, the one whose names the source writes on one line: ``out_channels % (4 * groups)``, not
    # ``out_channels % 12`` where groups is 3; ``height % 16``, not ``height % (4 * out_channels)`` where
    # out_channels happens to be 4)
    cands.sort(key=lambda t: (">=" in t[0], re.findall(r"[A-Za-z_]\w*", t[0])[-1] in vary if "%" in t[0] else True))
    chosen: list[tuple[str, Callable[[dict], dict]]] = []
    first_bad = 0
    for _ in range(3):   # a relation, then another where draws that keep it are still refused (width, height)
        plain = [draw() for _ in range(draws)]
        for _, adjust in chosen:
            plain = [adjust(c) for c in plain]
        bad = [c for c in plain if not valid(c)]
        first_bad = first_bad or len(bad)
        if not bad:
            break
        # the refused draws first: a relation that does not make them valid is not the one (a relation any
        # draw adjusted to it happens to keep is not evidence)
        sample = bad + [c for c in plain if c not in bad][:4]
        left = [(t, f) for t, f in cands if t not in [x for x, _ in chosen]]
        fits = [(t, f) for t, f in left if all(valid(f(c)) for c in sample)]
        if not fits:   # two at once: a grouped convolution's channels on each side; else both sides of an image
            # a number divides (not a number with a relation between two parameters: too many pairs to run)
            exact = [(t, f) for t, f in left if ">=" not in t and not re.search(r"% \d+ ==", t)]
            numbers = [(t, f) for t, f in left if re.search(r"% \d+ ==", t)]
            pairs = [*itertools.combinations(exact, 2),
                     *((x, y) for x, y in itertools.combinations(numbers, 2) if x[0].split()[-3] == y[0].split()[-3])]
            fits = [(f"{t1} and {t2}", lambda c, f1=f1, f2=f2: f2(f1(c))) for (t1, f1), (t2, f2) in pairs]
            fits = [(t, f) for t, f in fits if all(valid(f(c)) for c in sample)]

        def moved(tf: tuple[str, Callable[[dict], dict]], sample: list[dict] = sample) -> float:
            # the least change wins: width >= kernel_size, not width % batch_size == 0 (which also makes a
            # width past the kernel, by luck)
            return sum(abs(v - c[k]) / max(abs(c[k]), 1) for c in sample for k, v in tf[1](c).items())

        def apart(tf: tuple[str, Callable[[dict], dict]]) -> bool:   # of two that draw alike (two fixed values
            used = set(re.findall(r"[A-Za-z_]\w*", tf[0])) - {"and"}  # of 4), the one whose names the source's
            return not any(used <= set(re.findall(r"[A-Za-z_]\w*", ln))  # code writes on one line (not a docstring)
                           for ln in code.splitlines())

        found = min(fits, key=lambda tf: (round(moved(tf), 9), apart(tf))) if fits else None
        if found is None:
            return None, (f"the original refuses {len(bad)} of {draws} configs drawn from the draft shape_space "
                          f"(e.g. {bad[0]}){' that keeps ' + ' and '.join(t for t, _ in chosen) if chosen else ''} "
                          "and no divisibility, equality or bound between two of its parameters explains it: "
                          "write shape_space.constraint")
        chosen.append(found)
    if not chosen:
        return None, None
    # a size a number divides is drawn as a multiple of it (``multiple_of``): as a constraint, the draws that miss
    # it are thrown away, and of out_channels' draws over 16-512 few are multiples of 128 (the draws shun powers of
    # two): the random split found no config
    parts = [t for found, _ in chosen for t in found.split(" and ")]
    multiples = {m.group(1): int(m.group(2)) for t in parts if (m := re.fullmatch(r"(\w+) % (\d+) == 0", t))}
    for a, m in multiples.items():
        space[a]["multiple_of"] = m
        space[a]["max"] = max(space[a]["max"], m)
    text = " and ".join(t for t in parts if not re.fullmatch(r"\w+ % \d+ == 0", t)) or None
    said = " and ".join([*(f"shape_space.{a}.multiple_of {m}" for a, m in multiples.items()),
                         *([f"shape_space.constraint {text!r}"] if text else [])])
    return text, (f"{said} {'is' if len(parts) == 1 else 'are'} the importer's: the original refused {first_bad} of "
                  f"{draws} configs drawn from the draft space without {'it' if len(parts) == 1 else 'them'} and "
                  f"accepted every one adjusted to {'it' if len(parts) == 1 else 'them'}; confirm "
                  f"{'it' if len(parts) == 1 else 'them'}, and add the bounds the kernel needs")


def schema_supports(key: str) -> bool:
    """Whether the task schema in this checkout knows an input key (e.g. ``inout``)."""
    try:
        schema = json.loads((SCHEMA_DIR / "task.schema.json").read_text())
        return key in schema["$defs"]["input"]["properties"]
    except (OSError, KeyError, ValueError):
        return False


# ------------------------------------------------------------------------------------------
# shared: reading Python sources


RANDOM_FUNCS = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "bernoulli",
                "multinomial", "normal", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d",
                "alpha_dropout", "feature_alpha_dropout", "rrelu", "uniform_", "normal_", "bernoulli_",
                "exponential_", "geometric_", "cauchy_", "log_normal_", "random_", "gumbel_softmax"}
TENSOR_MAKERS = {"randn", "rand", "randint", "empty", "zeros", "ones", "full", "arange", "tensor", "randn_like",
                 "rand_like", "empty_like", "zeros_like", "ones_like", "full_like", "randint_like", "randperm"}
PASS_METHODS = {"to", "cuda", "contiguous", "clone", "detach", "requires_grad_", "cpu"}
DTYPE_METHODS = {"half": "float16", "float": "float32", "bfloat16": "bfloat16", "int": "int32", "long": "int64",
                 "bool": "bool"}


def parse_source(path: Path) -> tuple[str, ast.Module]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportStop(f"cannot read the file: {exc}", path=path) from None
    try:
        return text, ast.parse(text, str(path))
    except SyntaxError as exc:
        raise ImportStop(f"not valid Python (line {exc.lineno}): {exc.msg}", path=path) from None


def call_name(node: ast.AST) -> str:
    """The last name of a call's function: ``torch.nn.functional.relu`` -> ``relu``; a Triton
    launch ``add_kernel[grid](...)`` -> ``add_kernel``."""
    f = node.func if isinstance(node, ast.Call) else node
    if isinstance(f, ast.Subscript):
        f = f.value
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def dotted_name(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return ""


def split_chained_constants(tree: ast.Module) -> tuple[ast.Module, list[str]]:
    """``height = width = 128`` at module level as one statement per name (each a constant of its own, varied
    apart: an image's height and width that only happen to be equal), and the names so split."""
    t = copy.deepcopy(tree)
    body: list[ast.stmt] = []
    split: list[str] = []
    for stmt in t.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) > 1
                and all(isinstance(x, ast.Name) for x in stmt.targets) and number_expression(stmt.value) is not None):
            body += [ast.copy_location(ast.Assign(targets=[x], value=copy.deepcopy(stmt.value)), stmt)
                     for x in stmt.targets]
            split += [x.id for x in stmt.targets if isinstance(x, ast.Name)]
        else:
            body.append(stmt)
    t.body = body
    return ast.fix_missing_locations(t), split


def split_unpacked_constants(tree: ast.Module) -> ast.Module:
    """``height, width = 224, 224`` at module level (names unpacked from as many numbers) as one statement per name:
    each a constant of its own, read and varied as the others are."""
    t = copy.deepcopy(tree)
    body: list[ast.stmt] = []
    for stmt in t.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple)
                and isinstance(stmt.value, ast.Tuple) and len(stmt.targets[0].elts) == len(stmt.value.elts)
                and all(isinstance(x, ast.Name) for x in stmt.targets[0].elts)
                and all(number_expression(v) is not None for v in stmt.value.elts)):
            body += [ast.copy_location(ast.Assign(targets=[x], value=v), stmt)
                     for x, v in zip(stmt.targets[0].elts, stmt.value.elts)]
        else:
            body.append(stmt)
    t.body = body
    return ast.fix_missing_locations(t)


SPLIT_LIST_MOST = 8   # the longest module-level list of sizes whose elements become constants of their own


def split_list_constants(tree: ast.Module) -> tuple[ast.Module, list[str]]:
    """``layer_sizes = [16384, 16384]`` at module level, every element a size (an int of at least ``MIN_VARIED``):
    one constant per element (``layer_sizes_0 = 16384``, ...) and the list made of them, so that each is varied
    like the problem's named sizes (an MLP's hidden widths: fixed, they keep its weights at 2 GiB however its batch
    is scaled); a list with a count or a kernel size among its elements (``layers = [3, 4, 23, 3]``) stays as
    written. Returns the tree and the new constants' names."""
    t = copy.deepcopy(tree)
    taken = {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    body: list[ast.stmt] = []
    made: list[str] = []
    for stmt in t.body:
        values = [number_expression(e) for e in stmt.value.elts] \
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.List) else []
        if not (values and len(values) <= SPLIT_LIST_MOST and len(stmt.targets) == 1  # type: ignore[attr-defined]
                and isinstance(stmt.targets[0], ast.Name)  # type: ignore[attr-defined]
                and all(type(v) is int and v >= MIN_VARIED for v in values)):
            body.append(stmt)
            continue
        base, names = stmt.targets[0].id, []  # type: ignore[attr-defined]
        for i, v in enumerate(values):
            name = f"{base}_{i}"
            while name in taken:
                name += "_"
            taken.add(name)
            names.append(name)
            body.append(ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())], value=ast.Constant(v)),
                                          stmt))
        body.append(ast.copy_location(ast.Assign(targets=[ast.Name(base, ast.Store())], value=ast.List(
            [ast.Name(n, ast.Load()) for n in names], ast.Load())), stmt))
        made += names
    t.body = body
    return ast.fix_missing_locations(t), made


def literal_constants(tree: ast.Module) -> dict[str, int | float]:
    """Module-level ``NAME = <int or float literal>`` (one target): the problem's constants."""
    out: dict[str, int | float] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target.id, stmt.value
        else:
            continue
        v = number_expression(value)
        if v is not None:
            out[target] = v
    return out


_ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
               ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b,
               ast.Pow: lambda a, b: a ** b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b}


def number_expression(node: ast.AST) -> int | float | None:
    """The value of a number written as arithmetic on numbers (``2048 * 2``, ``2**12``,
    ``1 << 10``, ``-1``), or None for anything else (a name, a call, a bool). Big powers and
    shifts are refused rather than computed."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) in (int, float) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = number_expression(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        a, b = number_expression(node.left), number_expression(node.right)
        if a is None or b is None or (isinstance(node.op, (ast.Pow, ast.LShift)) and abs(b) > 64):
            return None
        try:
            v = _ARITHMETIC[type(node.op)](a, b)
        except (ZeroDivisionError, OverflowError, ValueError):
            return None
        return v if type(v) in (int, float) and abs(v) < 2**63 else None
    return None


def with_constants(tree: ast.Module, values: dict[str, Any]) -> ast.Module:
    t = copy.deepcopy(tree)
    for stmt in t.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
            stmt.target if isinstance(stmt, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id in values and stmt.value is not None:
            stmt.value = ast.copy_location(ast.Constant(values[target.id]), stmt.value)
    return ast.fix_missing_locations(t)


def _off_in_eval(node: ast.Call) -> bool:
    """A dropout that a module in eval mode does not apply: a module of the model (``self.dropout(x)``; a dropout
    module in eval mode is the identity) or a call told the module's mode
    (``F.dropout(x, p, training=self.training)``)."""
    return call_name(node).endswith("dropout") and (
        (isinstance(node.func, ast.Attribute) and _rooted_at_self(node.func))
        or any(kw.arg == "training" and dotted_name(kw.value) == "self.training" for kw in node.keywords))


def _zero_dropout(node: ast.Call, identity: Collection[str]) -> bool:
    """A dropout of probability 0, the identity: a module of the model among ``identity`` (``self.dropout(x)``
    where the model's ``dropout`` is ``nn.Dropout(0.0)``), or a call given p = 0 (``F.dropout(x, 0.0)``)."""
    if not call_name(node).endswith("dropout"):
        return False
    if isinstance(node.func, ast.Attribute) and dotted_name(node.func).removeprefix("self.") in identity:
        return True
    p = next((kw.value for kw in node.keywords if kw.arg == "p"), node.args[1] if len(node.args) > 1 else None)
    return p is not None and number_expression(p) == 0


def impure_reason(funcs: Iterable[tuple[str, ast.FunctionDef]], inputs: Iterable[str] = (),
                  eval_mode: bool = False, identity: Collection[str] = ()) -> str | None:
    """What makes these functions impure, naming the line: random numbers, writes to
    ``self`` (module state), in-place writes into an input that was not rebound first. ``eval_mode``: the module
    runs in eval mode (its source's harness calls ``.eval()``), where its dropouts are not applied; ``identity``:
    the model's dropout modules of probability 0 (their dotted names), which draw nothing."""
    for owner, fn in funcs:
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                name = call_name(node)
                src = dotted_name(node.func)
                if name in RANDOM_FUNCS and not (name == "normal" and "init" in src) and \
                        not (eval_mode and _off_in_eval(node)) and not _zero_dropout(node, identity) and \
                        not any(kw.arg == "training" and isinstance(kw.value, ast.Constant) and kw.value.value is False
                                for kw in node.keywords):
                    return f"{owner} draws random numbers ({src}, line {node.lineno})"
                if src.startswith(("random.", "np.random.", "numpy.random.")):
                    return f"{owner} draws random numbers ({src}, line {node.lineno})"
                if isinstance(node.func, ast.Attribute) and name.endswith("_") and not name.endswith("__") \
                        and _rooted_at_self(node.func.value):
                    return f"{owner} updates module state in place ({src}, line {node.lineno})"
                if src.startswith(("nn.init.", "torch.nn.init.")):
                    return f"{owner} re-initialises a tensor ({src}, line {node.lineno})"
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, (ast.Attribute, ast.Subscript)) and _rooted_at_self(sub) and \
                            fn.name != "__init__":
                        return f"{owner} assigns {dotted_name(sub)} (line {node.lineno}): that is module state"
        live = set(inputs) if fn.name == "forward" else set()
        for stmt in fn.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in live:
                    return f"{owner} writes into its input {node.target.id} in place (line {node.lineno})"
                if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) and \
                        isinstance(node.target.value, ast.Name) and node.target.value.id in live:
                    return f"{owner} writes into its input {node.target.value.id} in place (line {node.lineno})"
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in live:
                            return f"{owner} writes into its input {t.value.id} in place (line {node.lineno})"
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        isinstance(node.func.value, ast.Name) and node.func.value.id in live and \
                        node.func.attr.endswith("_") and not node.func.attr.endswith("__"):
                    return f"{owner} writes into its input {node.func.value.id} in place ({dotted_name(node.func)}, " \
                           f"line {node.lineno})"
                if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) and \
                        node.args[0].id in live and any(kw.arg == "inplace" and isinstance(kw.value, ast.Constant)
                                                        and kw.value.value is True for kw in node.keywords):
                    return f"{owner} writes into its input {node.args[0].id} in place ({dotted_name(node.func)}, " \
                           f"line {node.lineno})"
            for node in ast.walk(stmt):
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                        for sub in ast.walk(t):
                            if isinstance(sub, ast.Name) and not isinstance(node, ast.AugAssign):
                                live.discard(sub.id)
    return None


def _rooted_at_self(node: ast.AST) -> bool:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "self"


def self_chain(node: ast.AST) -> list[str] | None:
    """``self.a.b`` -> ["a", "b"]; None if the expression is not an attribute chain on self."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "self" and names:
        return names[::-1]
    return None


class Substitute(ast.NodeTransformer):
    """Names replaced by the expressions given (as text)."""

    def __init__(self, values: dict[str, str]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.values:
            return ast.copy_location(ast.parse(f"({self.values[node.id]})", mode="eval").body, node)
        return node


def free_names(nodes: Iterable[ast.AST]) -> set[str]:
    loaded, stored = set(), set()
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name):
                (loaded if isinstance(sub.ctx, ast.Load) else stored).add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.Lambda)):
                args = sub.args
                stored.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
    return loaded - stored


def import_lines(tree: ast.Module) -> list[str]:
    return [ast.unparse(s) for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]


def without_unused_imports(text: str, keep: Iterable[str] = ("torch",)) -> str:
    """``text`` (a module's source) less the names its top-level imports bind that nothing else in it reads (a test's
    import of the kernel it checks, or of a library only the kernel needs: a reference that imports them needs them
    installed where it runs), but for ``keep`` and ``__future__``'s."""
    tree = ast.parse(text)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    lines = text.splitlines(keepends=True)
    for st in reversed(tree.body):
        if not isinstance(st, (ast.Import, ast.ImportFrom)) or (isinstance(st, ast.ImportFrom)
                                                                  and st.module == "__future__"):
            continue
        names = [a for a in st.names if (a.asname or a.name).split(".")[0] in {*used, *keep} or a.name == "*"]
        if len(names) == len(st.names):
            continue
        fewer = copy.copy(st)
        fewer.names = names
        lines[st.lineno - 1:st.end_lineno] = [ast.unparse(fewer) + "\n"] if names else []
    return "".join(lines)


def bound_by_imports(lines: list[str]) -> set[str]:
    names = set()
    for line in lines:
        for node in ast.parse(line).body:
            for a in node.names:
                names.add((a.asname or a.name).split(".")[0])
    return names


def module_defs(tree: ast.Module, names: set[str], skip: set[str]) -> list[ast.stmt]:
    """Module-level functions and assignments that ``names`` need, transitively, in file order."""
    defs: dict[str, ast.stmt] = {}
    for s in tree.body:
        if isinstance(s, (ast.FunctionDef, ast.ClassDef)) and s.name not in skip:
            defs[s.name] = s
        elif isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) and \
                s.targets[0].id not in skip:
            defs[s.targets[0].id] = s
    need: set[str] = set()
    todo = [n for n in names if n in defs]
    while todo:
        n = todo.pop()
        if n in need:
            continue
        need.add(n)
        todo += [m for m in free_names([defs[n]]) if m in defs and m not in need]
    return [s for s in tree.body if any(s is defs.get(n) for n in need)]


def join_statements(text: str, stmts: list[ast.stmt]) -> str:
    """Module-level statements as written (a function's decorators too): functions and classes two blank
    lines apart."""
    out = ""
    lines = text.splitlines()
    for i, st in enumerate(stmts):
        src = ast.get_source_segment(text, st) or ast.unparse(st)
        decorators = getattr(st, "decorator_list", [])
        if decorators and src:   # the segment starts at ``def``: its decorators as written before it
            src = "\n".join(lines[min(d.lineno for d in decorators) - 1 : st.lineno - 1]) + "\n" + src
        block = isinstance(st, (ast.FunctionDef, ast.ClassDef))
        prev_block = i > 0 and isinstance(stmts[i - 1], (ast.FunctionDef, ast.ClassDef))
        out += ("" if i == 0 else "\n\n\n" if block or prev_block else "\n") + src
    return out


def init_from_expr(expr: ast.AST, int_names: set[str]) -> tuple[dict, str | None]:
    """How a tensor expression draws its values, as a signature init, and a note where that is
    a guess: ``torch.randn(...) * 0.02`` -> normal with std 0.02; ``torch.rand(...) * 2 - 1`` ->
    uniform(-1, 1); ``torch.randint(0, n, ...)`` -> randint with high n."""
    a, b = 1.0, 0.0                       # value = a * inner + b
    node = expr
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in PASS_METHODS | set(DTYPE_METHODS):
            node = node.func.value
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.Div)):
            k, inner = number_of(node.right), node.left
            if k is None and isinstance(node.op, (ast.Mult, ast.Add)):
                k, inner = number_of(node.left), node.right
            if k is None or (isinstance(node.op, ast.Div) and k == 0):
                break
            if isinstance(node.op, ast.Mult):
                a *= k
            elif isinstance(node.op, ast.Div):
                a /= k
            elif isinstance(node.op, ast.Add):
                b += a * k
            else:
                b -= a * k
            node = inner
            continue
        break
    src = dotted_name(expr)
    name = call_name(node) if isinstance(node, ast.Call) else ""
    note = None
    if name in ("randn", "randn_like"):
        init: dict[str, Any] = {"kind": "normal"}
        if b:
            init["mean"] = b
        if abs(a) != 1.0:
            init["std"] = abs(a)
    elif name in ("rand", "rand_like"):
        lo, hi = sorted((b, a + b))
        init = {"kind": "uniform", "low": lo, "high": hi}
    elif name == "randint":
        args = list(node.args)
        kw = {k.arg: k.value for k in node.keywords}
        if "high" in kw:
            low, high = kw.get("low", ast.Constant(0)), kw["high"]
        elif len(args) >= 3 or (len(args) == 2 and not isinstance(args[1], (ast.Tuple, ast.List))):
            low, high = args[0], args[1]
        else:
            low, high = ast.Constant(0), args[0] if args else None
        init = {"kind": "randint"}
        for key, bound in (("low", low), ("high", high)):
            if bound is None:
                continue
            value = number_of(bound)
            text = dotted_name(bound)
            if value is not None:
                init[key] = int(value)
            elif formula.names_in(text) <= int_names:
                init[key] = text
            else:
                note = f"`{src}`: its bounds name values that are not the problem's constants"
        if "high" not in init:
            init["high"] = 16
            note = note or f"`{src}`: its upper bound could not be read; drawn below 16"
        if a != 1.0:
            init["scale"] = a
        if b:
            init["offset"] = b
    elif name in ("ones", "ones_like"):
        init, note = {"kind": "ones_plus_noise"}, f"made by `{src}` (all ones): drawn 1 + normal(0, 0.1)"
    elif name in ("zeros", "zeros_like", "empty", "empty_like"):
        init, note = {"kind": "normal", "std": 0.1}, f"made by `{src}` (zeros or uninitialised): drawn " \
                                                     "normal(0, 0.1) so that a kernel that ignores it fails"
    elif name in ("full", "full_like"):
        v = number_of(node.args[1]) if len(node.args) > 1 else None
        v = 1.0 if v is None else v
        init, note = {"kind": "normal", "mean": v, "std": max(abs(v) * 0.1, 0.01)}, \
            f"made by `{src}` (a constant): drawn around it"
    else:
        init, note = {"kind": "normal"}, f"made by `{src}`, which the importer does not read: drawn normal(0, 1)"
    return init, note


def whole_numbers_as_uniform(init: dict) -> dict:
    """A randint init as a uniform one over the values it draws: ``randint(low, high)`` draws
    whole numbers from low to high - 1 (its high is never drawn), so the uniform range ends at
    high - 1, and the draws keep their mean (``randint(-2, 3)`` is centred on 0, a uniform
    draw over [-2, 3) on 0.5). Its scale and offset apply after, as they do to the integers."""
    high = init["high"]
    high = high - 1 if isinstance(high, int) else f"({high}) - 1"
    return {**init, "kind": "uniform", "low": init.get("low", 0), "high": high}


def number_of(node: ast.AST) -> float | None:
    try:
        v = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return float(v) if type(v) in (int, float) else None


class Untranslatable(ArenaException):
    pass

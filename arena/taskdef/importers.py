"""Task folders drafted from problems written for other harnesses (``arena tasks import``).

``import_kernelbench``: a KernelBench-style problem file (``class Model(nn.Module)``, module
constants, ``get_inputs()``, ``get_init_inputs()``) becomes a torch2hip task: the reference is
``Model.forward`` written as a function of its tensors, the model's parameters and buffers
(inputs of the signature, drawn like their init) and the problem's constants (scalars and
config parameters); the seen config is the problem's own.

``import_aka``: an AgentKernelArena-style task folder (a YAML naming the kernel source, the
source, a test script) becomes a triton2triton or hip2hip task: the kernel is kept as written
and a thin entry with the task's ABI is added to it; the reference, the signature and the
configs come from what the folder's test computes in torch, or from a PyTorch module file
beside it.

How the numbers become formulas: the problem is run again (on the meta device: no memory,
no arithmetic) with each constant doubled and tripled, and a dimension (or a module
attribute, or the FLOP count) that follows one constant linearly, or several as a product,
is written over their names; anything else stays a number and is listed. Every config the
importer drafts is run the same way and kept only where the original accepts it.

What is inferred is written; what is guessed is marked DRAFT in the files and listed; what
cannot be inferred is listed, never guessed. Both importers end with ``validate_task_dir``
(what ``arena tasks validate`` runs) and a numbered list of what the author must still decide.
"""

from __future__ import annotations

import ast
import copy
import json
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterable

import torch
import yaml

from arena.errors import ArenaError, ArenaException
from arena.taskdef import formula
from arena.taskdef.loader import CATEGORIES, DEFAULT_TASKS_DIR, SCHEMA_DIR, validate_task_dir
from arena.taskdef.shapes import DTYPE_BYTES

DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
               torch.float8_e4m3fn: "float8_e4m3fn", torch.float8_e5m2: "float8_e5m2", torch.int8: "int8",
               torch.uint8: "uint8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64",
               torch.bool: "bool"}
SMOKE_ELEMENTS = 2**14          # a smoke config moves at most about this many elements per tensor set
MIN_VARIED = 8                  # constants below this (kernel sizes, strides, groups) are kept in drafts


class ImportStop(ArenaError):
    """The problem cannot become a task as it is (one line naming the file and what is wrong)."""


@dataclass
class ImportResult:
    folder: Path
    source: Path
    problems: list[ArenaError]
    decisions: list[str]
    checks: list[str] = field(default_factory=list)

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


class _NoValue(ArenaException):
    pass


class Fitter:
    """Formulas over named parameters for values a probe computes. ``probe(params)`` runs the
    problem with those parameter values (it may raise: that parameter set is not valid);
    each int parameter is doubled and tripled, each float one doubled, one at a time."""

    def __init__(self, base: dict[str, Any], probe: Callable[[dict[str, Any]], Any]):
        self.base = dict(base)
        self.probe = probe
        self._cache: dict[tuple, Any] = {}
        self.ints = [k for k, v in base.items() if type(v) is int and v >= 1]
        self.floats = [k for k, v in base.items() if type(v) is float and v != 0.0]
        self.used: set[str] = set()
        self.inexact: list[str] = []

    def run(self, overrides: dict[str, Any] | None = None) -> Any:
        key = tuple(sorted((overrides or {}).items()))
        if key not in self._cache:
            try:
                self._cache[key] = self.probe({**self.base, **(overrides or {})})
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
            return v0
        text = None
        if len(affecting) == 1:
            text = self._linear(affecting[0], get, v0)
        if text is None:
            text = self._monomial(affecting, get, v0)
        if text is None and len(affecting) > 1:
            text = self._affine(affecting, get, v0)
        if text is None:
            if what:
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
        term = c if a == 1 else f"{a.numerator} * {c}" if a.denominator == 1 else f"{c} // {a.denominator}"
        return term + (f" + {b}" if b > 0 else f" - {-b}" if b < 0 else "")

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

    def _monomial(self, names: list[str], get: Callable, v0: float) -> str | None:
        if v0 == 0:
            return None
        exps = {}
        for c in names:
            try:
                r = Fraction(self._at(c, 2, get)) / Fraction(v0)
            except (_NoValue, ValueError, TypeError):
                return None
            e = round(math.log2(r)) if r > 0 else 0
            if e < 1 or Fraction(2) ** e != r:
                return None
            try:
                if Fraction(self._at(c, 3, get)) != Fraction(v0) * 3 ** e:
                    return None
            except _NoValue:
                pass
            exps[c] = e
        prod = math.prod(self.base[c] ** e for c, e in exps.items())
        k = Fraction(v0) / prod
        factors = " * ".join(c for c, e in exps.items() for _ in range(e))
        if k == 1:
            return factors
        if k.denominator == 1:
            return f"{k.numerator} * {factors}"
        if k.numerator == 1:
            return f"{factors} // {k.denominator}"
        return None

    def number_formula(self, get: Callable[[Any], Any]) -> tuple[str | int, bool]:
        """A product formula for a count (FLOPs); (the number, False) when none fits."""
        v0 = self._get(get, self.run())
        if v0 == 0:
            return 0, True
        affecting = self._affecting(get, v0)
        if not affecting:
            return int(v0), True
        text = self._monomial(affecting, get, v0)
        if text is None:
            return int(v0), False
        self.used.update(formula.names_in(text))
        return text, True

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
        raise _Untranslatable(f"{what} is a {type(v0).__name__}")


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
              f"entry: {d.entry}", "signature:", "  inputs:"]
    lines += [f"    - {_flow(i)}" for i in d.inputs]
    lines += ["  outputs:"] + [f"    - {_flow(o)}" for o in d.outputs] if d.outputs else ["  outputs: []"]
    if d.scalars:
        lines += ["  scalars:"] + [f"    - {_flow(s)}" for s in d.scalars]
    lines += ["roofline:" + _comment("roofline", d)] + [f"  {k}: {_scalar_yaml(v)}" for k, v in d.roofline.items()]
    lines += ["shape_space:" + _comment("shape_space", d) if d.shape_space else "shape_space: {}" +
              _comment("shape_space", d)]
    lines += [f"  {k}: {_flow(v) if isinstance(v, dict) else _scalar_yaml(v)}" for k, v in d.shape_space.items()]
    lines.append(f"forbidden: {_flow(d.forbidden)}{_comment('forbidden', d)}")
    return "\n".join(lines) + "\n"


def configs_yaml(items: list[dict], header: str) -> str:
    lines = [f"# {ln}" for ln in header.splitlines()]
    if not items:
        return "\n".join(lines + ["[]   # DRAFT: none could be drafted; write them"]) + "\n"
    for item in items:
        note = item.get("#")
        body = {k: v for k, v in item.items() if k != "#"}
        lines.append(f"- {_flow(body)}" + (f"   # {note}" if note else ""))
    return "\n".join(lines) + "\n"


def _write(d: Draft, root: Path) -> Path:
    folder = root / d.category / d.name
    if folder.exists():
        raise ArenaError("already exists: remove it or choose another name with --id", path=folder)
    (folder / "configs").mkdir(parents=True)
    (folder / "task.yaml").write_text(task_yaml(d))
    (folder / "reference.py").write_text(d.reference)
    (folder / "configs" / "seen.yaml").write_text(configs_yaml(
        d.seen, "Seen configs. Entries marked DRAFT were drafted by the importer (run through the original where\n"
                "it could be run); the rules ask for >= 3 'nice' production shapes inside the timing window."))
    (folder / "configs" / "heldout.yaml").write_text(configs_yaml(
        d.heldout, "DRAFT held-out configs (run through the original where it could be run): the rules ask for\n"
                   ">= 4 that differ in kind (odd or prime, not a multiple of 8, another aspect ratio, scale-up,\n"
                   "scale-down)."))
    (folder / "configs" / "smoke.yaml").write_text(configs_yaml(
        d.smoke, "Tiny configs for the CPU backend (drafted by the importer)."))
    for name, text in d.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _finish(d: Draft, root: Path | None, source: Path,
            self_check: Callable[[Path], tuple[list[str], list[str]]] | None = None) -> ImportResult:
    """Write the folder, validate it as `arena tasks validate` does and, where it validates,
    run the importer's own check (what passed, and what the author must look at)."""
    root = Path(root) if root is not None else DEFAULT_TASKS_DIR
    folder = _write(d, root)
    problems = validate_task_dir(folder)
    decisions = list(d.decisions)
    checks: list[str] = []
    if not problems and self_check is not None:
        passed, found = self_check(folder)
        checks += passed
        decisions += found
    decisions.append(f"then: `arena tasks check {d.id} --device cpu`, and on a GPU `arena tasks check {d.id} "
                     "--device cuda` (timing window, degeneracy on every split)")
    return ImportResult(folder, source, problems, decisions, checks)


def _task_name(text: str) -> str:
    name = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    name = re.sub(r"^[0-9_]+", "", name)
    return name or "imported"


def _resolve_id(task_id: str | None, default_name: str, categories: Iterable[str]) -> tuple[str | None, str]:
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


def _prod(dims: list) -> str:
    parts = [str(x) if isinstance(x, int) or re.fullmatch(r"\w+", str(x)) else f"({x})" for x in dims]
    return " * ".join(parts) if parts else "1"


def _elements(tensors: list[dict], env: dict) -> int:
    return sum(math.prod(int(formula.evaluate(x, env)) for x in t["shape"]) for t in tensors)


def roofline_draft(tensors: list[dict], flops: str | int | None, base_env: dict) -> tuple[dict, list[str]]:
    """bytes: every input read and every output written once; flops: the count given (from
    PyTorch's FLOP counter, which counts matrix products and convolutions), else one per
    output element."""
    notes = []
    by_size: dict[int, list[str]] = {}
    for t in tensors:
        by_size.setdefault(DTYPE_BYTES[t["dtype"]], []).append(_prod(t["shape"]))
    nbytes = " + ".join(f"{size} * ({' + '.join(ps)})" if len(ps) > 1 else f"{size} * {ps[0]}"
                        for size, ps in sorted(by_size.items(), reverse=True)) or "0"
    if not flops:
        outs = [t for t in tensors if t.get("_output")]
        flops = " + ".join(_prod(t["shape"]) for t in outs) or "0"
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


def draft_configs(base: dict[str, int], vary: list[str], valid: Callable[[dict], bool],
                  size: Callable[[dict], int], seen_name: str) -> tuple[list[dict], list[dict], list[dict], list[str]]:
    """Seen (the base config and drafts around it), held-out and smoke drafts, each kept only
    where ``valid`` accepts it; notes on what could not be drafted."""
    notes = []
    seen = [{"name": seen_name, **base}]
    big = sorted(vary, key=lambda k: -base[k])
    tried: list[tuple[str, dict, str]] = []
    if big:
        top = big[0]
        tried += [("draft-x2", {top: base[top] * 2}, f"{top} doubled"),
                  ("draft-half", {top: max(1, base[top] // 2)}, f"{top} halved"),
                  ("draft-x4", {top: base[top] * 4}, f"{top} x4")]
    for name, over, why in tried:
        cfg = {**base, **over}
        if len(seen) < 3 and cfg not in [{k: v for k, v in s.items() if k != "name"} for s in seen] and valid(cfg):
            seen.append({"name": name, **cfg, "#": f"DRAFT: {why}"})
    held: list[dict] = []
    kinds: list[tuple[str, dict, str]] = []
    if big:
        top = big[0]
        kinds.append(("draft-odd", {k: _odd(base[k]) for k in vary}, "every size odd, not a power of two"))
        v = base[top]
        kinds.append(("draft-not-mult-8", {top: v - v % 8 + 4 if v >= 8 else v + 1}, f"{top} not a multiple of 8"))
        if v > 3:
            kinds.append(("draft-prime", {top: _prime_below(v)}, f"{top} prime"))
        if len(big) >= 2:
            a, b = big[0], big[-1]
            kinds.append(("draft-aspect", {a: max(1, base[a] // 4), b: base[b] * 4}, f"{a} / 4, {b} x 4"))
        kinds.append(("draft-scale-up", {top: v * 2 + 2}, f"{top} scaled up"))
        kinds.append(("draft-scale-down", {top: max(1, v // 3 + 1)}, f"{top} scaled down"))
    seen_params = [{k: v for k, v in s.items() if k not in ("name", "#")} for s in seen]
    for name, over, why in kinds:
        cfg = {**base, **over}
        if cfg in seen_params or cfg in [{k: v for k, v in h.items() if k not in ("name", "#")} for h in held]:
            continue
        if valid(cfg):
            held.append({"name": name, **cfg, "#": f"DRAFT: {why}"})
    if not vary:
        notes.append("no constant of the problem is a size (>= 8) the importer could vary: the seen and held-out "
                     "drafts could not be made; write them")
    # smoke: halve the largest sizes until the tensors are tiny
    smoke = dict(base)
    frozen: set[str] = set()
    for _ in range(200):
        if size(smoke) <= SMOKE_ELEMENTS:
            break
        cands = [k for k in sorted(smoke, key=lambda k: -smoke[k]) if k not in frozen and smoke[k] > 4]
        if not cands:
            break
        k = cands[0]
        trial = {**smoke, k: max(4, smoke[k] // 2)}
        if valid(trial):
            smoke = trial
        else:
            frozen.add(k)
    if size(smoke) > SMOKE_ELEMENTS:
        notes.append(f"the smoke config still has {size(smoke)} elements (the importer could not shrink it "
                     "further and keep the original valid): make it smaller for the CPU backend")
    return seen, held, [{"name": "smoke", **smoke, "#": "DRAFT: sizes halved from the seen config"}], notes


def shape_space_draft(base: dict[str, int], vary: list[str]) -> dict:
    space: dict[str, Any] = {}
    for k, v in base.items():
        if k in vary:
            space[k] = {"min": max(1, v // 8), "max": v * 4}
        else:
            space[k] = {"choices": [v]}
    return space


def _supports(key: str) -> bool:
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


def _parse(path: Path) -> tuple[str, ast.Module]:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportStop(f"cannot read the file: {exc}", path=path) from None
    try:
        return text, ast.parse(text, str(path))
    except SyntaxError as exc:
        raise ImportStop(f"not valid Python (line {exc.lineno}): {exc.msg}", path=path) from None


def _call_name(node: ast.AST) -> str:
    """The last name of a call's function: ``torch.nn.functional.relu`` -> ``relu``."""
    f = node.func if isinstance(node, ast.Call) else node
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return ""


def _literal_constants(tree: ast.Module) -> dict[str, int | float]:
    """Module-level ``NAME = <int or float literal>`` (one target): the problem's constants."""
    out: dict[str, int | float] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target.id, stmt.value
        else:
            continue
        try:
            v = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError):
            continue
        if type(v) in (int, float):
            out[target] = v
    return out


def _with_constants(tree: ast.Module, values: dict[str, Any]) -> ast.Module:
    t = copy.deepcopy(tree)
    for stmt in t.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else \
            stmt.target if isinstance(stmt, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id in values and stmt.value is not None:
            stmt.value = ast.copy_location(ast.Constant(values[target.id]), stmt.value)
    return ast.fix_missing_locations(t)


def _impure(funcs: Iterable[tuple[str, ast.FunctionDef]], inputs: Iterable[str] = ()) -> str | None:
    """What makes these functions impure, naming the line: random numbers, writes to
    ``self`` (module state), in-place writes into an input that was not rebound first."""
    for owner, fn in funcs:
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                name = _call_name(node)
                src = _dotted(node.func)
                if name in RANDOM_FUNCS and not (name == "normal" and "init" in src) and \
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
                        return f"{owner} assigns {_dotted(sub)} (line {node.lineno}): that is module state"
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
                    return f"{owner} writes into its input {node.func.value.id} in place ({_dotted(node.func)}, " \
                           f"line {node.lineno})"
                if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) and \
                        node.args[0].id in live and any(kw.arg == "inplace" and isinstance(kw.value, ast.Constant)
                                                        and kw.value.value is True for kw in node.keywords):
                    return f"{owner} writes into its input {node.args[0].id} in place ({_dotted(node.func)}, " \
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


def _self_chain(node: ast.AST) -> list[str] | None:
    """``self.a.b`` -> ["a", "b"]; None if the expression is not an attribute chain on self."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "self" and names:
        return names[::-1]
    return None


def _free_names(nodes: Iterable[ast.AST]) -> set[str]:
    loaded, stored = set(), set()
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name):
                (loaded if isinstance(sub.ctx, ast.Load) else stored).add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.Lambda)):
                args = sub.args
                stored.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
    return loaded - stored


def _imports(tree: ast.Module) -> list[str]:
    return [ast.unparse(s) for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]


def _bound_by_imports(lines: list[str]) -> set[str]:
    names = set()
    for line in lines:
        for node in ast.parse(line).body:
            for a in node.names:
                names.add((a.asname or a.name).split(".")[0])
    return names


def _module_defs(tree: ast.Module, names: set[str], skip: set[str]) -> list[ast.stmt]:
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
        todo += [m for m in _free_names([defs[n]]) if m in defs and m not in need]
    return [s for s in tree.body if any(s is defs.get(n) for n in need)]


def _join_statements(text: str, stmts: list[ast.stmt]) -> str:
    """Module-level statements as written: functions and classes two blank lines apart."""
    out = ""
    for i, st in enumerate(stmts):
        src = ast.get_source_segment(text, st) or ast.unparse(st)
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
            k, inner = _number(node.right), node.left
            if k is None and isinstance(node.op, (ast.Mult, ast.Add)):
                k, inner = _number(node.left), node.right
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
    src = _dotted(expr)
    name = _call_name(node) if isinstance(node, ast.Call) else ""
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
            value = _number(bound)
            text = _dotted(bound)
            if value is not None:
                init[key] = int(value)
            elif formula.names_in(text) <= int_names:
                init[key] = text
            else:
                note = f"`{src}`: its bounds name values that are not the problem's constants"
        if "high" not in init:
            init["high"] = 16
            note = note or f"`{src}`: its upper bound could not be read; drawn below 16"
        if (a, b) != (1.0, 0.0):
            note = f"`{src}`: the arithmetic around randint is left out"
    elif name in ("ones", "ones_like"):
        init, note = {"kind": "ones_plus_noise"}, f"made by `{src}` (all ones): drawn 1 + normal(0, 0.1)"
    elif name in ("zeros", "zeros_like", "empty", "empty_like"):
        init, note = {"kind": "normal", "std": 0.1}, f"made by `{src}` (zeros or uninitialised): drawn " \
                                                     "normal(0, 0.1) so that a kernel that ignores it fails"
    elif name in ("full", "full_like"):
        v = _number(node.args[1]) if len(node.args) > 1 else None
        v = 1.0 if v is None else v
        init, note = {"kind": "normal", "mean": v, "std": max(abs(v) * 0.1, 0.01)}, \
            f"made by `{src}` (a constant): drawn around it"
    else:
        init, note = {"kind": "normal"}, f"made by `{src}`, which the importer does not read: drawn normal(0, 1)"
    return init, note


def _number(node: ast.AST) -> float | None:
    try:
        v = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return float(v) if type(v) in (int, float) else None


# ------------------------------------------------------------------------------------------
# KernelBench: Model.forward as a function


class _Untranslatable(ArenaException):
    pass


@dataclass
class _Run:
    model: torch.nn.Module
    init_args: list
    init_kwargs: dict
    inputs: list
    output: Any
    flops: int


def _init_args(value: Any) -> tuple[list, dict]:
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(value) == 2 and isinstance(value[0], (list, tuple)) and isinstance(value[1], dict):
        return list(value[0]), dict(value[1])
    return value, {}


def _first_case(value: Any) -> tuple[list, int]:
    """get_inputs() as a list; a generator (several cases) gives its first and their count."""
    if isinstance(value, (list, tuple)):
        return list(value), 1
    cases = list(value)
    if not cases:
        raise ValueError("get_inputs() yielded nothing")
    first = cases[0]
    return (list(first) if isinstance(first, (list, tuple)) else [first]), len(cases)


class ModuleProblem:
    """A Python file with an ``nn.Module`` (``Model``, or the only module class when
    ``any_module``), ``get_inputs()`` and ``get_init_inputs()``, read and run."""

    def __init__(self, path: Path, *, any_module: bool = False):
        self.path = Path(path)
        self.text, self.tree = _parse(self.path)
        classes = {s.name: s for s in self.tree.body if isinstance(s, ast.ClassDef)}
        funcs = {s.name: s for s in self.tree.body if isinstance(s, ast.FunctionDef)}
        cls = classes.get("Model")
        if cls is None and any_module:
            modules = [c for c in classes.values() if any(isinstance(s, ast.FunctionDef) and s.name == "forward"
                                                          for s in c.body)]
            cls = modules[-1] if len(modules) >= 1 else None
        if cls is None:
            raise ImportStop("no `class Model(nn.Module)`: a KernelBench problem defines its model as class Model "
                             "with __init__ and forward", path=self.path)
        self.cls = cls
        self.forward = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
        if self.forward is None:
            raise ImportStop(f"class {cls.name} has no forward method", path=self.path)
        if "get_inputs" not in funcs:
            raise ImportStop("no get_inputs(): a KernelBench problem returns the forward's tensors from "
                             "get_inputs()", path=self.path)
        self.get_inputs = funcs["get_inputs"]
        self.has_init_inputs = "get_init_inputs" in funcs
        a = self.forward.args
        if a.vararg or a.kwarg:
            raise ImportStop(f"{cls.name}.forward takes *args or **kwargs (line {self.forward.lineno}): the importer "
                             "needs named arguments", path=self.path)
        self.params = [x.arg for x in (*a.posonlyargs, *a.args)][1:]
        defaults = list(a.defaults)
        self.defaults = dict(zip(self.params[len(self.params) - len(defaults):], defaults))
        self.constants = _literal_constants(self.tree)
        self.cases = 1

    # -- running ------------------------------------------------------------------------
    def run(self, params: dict[str, Any], device: str = "meta") -> _Run:
        from torch.utils.flop_counter import FlopCounterMode

        code = compile(_with_constants(self.tree, params), str(self.path), "exec")
        ns: dict[str, Any] = {"__name__": "arena_imported_problem", "__file__": str(self.path)}
        with torch.device(device), torch.no_grad():
            exec(code, ns)
            init = ns["get_init_inputs"]() if self.has_init_inputs else []
            args, kwargs = _init_args(init)
            model = ns[self.cls.name](*args, **kwargs)
            inputs, self.cases = _first_case(ns["get_inputs"]())
            with FlopCounterMode(display=False) as counter:
                out = model(*inputs)
        return _Run(model, args, kwargs, inputs, out, counter.get_total_flops())

    def output_tensors(self, out: Any) -> list[torch.Tensor]:
        lines = [n.lineno for n in ast.walk(self.forward) if isinstance(n, ast.Return)]
        where = f"{self.cls.name}.forward (line {lines[-1] if lines else self.forward.lineno})"
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for o in outs:
            if not isinstance(o, torch.Tensor):
                raise ImportStop(f"{where} returns a {type(o).__name__}, not a tensor: a task's outputs are tensors",
                                 path=self.path)
            if o.dtype not in DTYPE_NAMES or o.dtype == torch.bool:
                raise ImportStop(f"{where} returns a {o.dtype} tensor: outputs are float or integer tensors of the "
                                 "schema's dtypes", path=self.path)
        return outs

    def purity(self) -> None:
        """What the forward pass runs must be pure: Model.forward, the forward of every other
        module class of the file, and the file's functions they name (initialisation code,
        which draws the parameters, is not looked at)."""
        funcs = [(f"{self.cls.name}.forward", self.forward)]
        for s in self.tree.body:
            if isinstance(s, ast.ClassDef) and s is not self.cls:
                funcs += [(f"{s.name}.forward", m) for m in s.body if isinstance(m, ast.FunctionDef)
                          and m.name == "forward"]
        named = _free_names([f for _, f in funcs])
        funcs += [(f"{s.name}()", s) for s in self.tree.body if isinstance(s, ast.FunctionDef) and s.name in named
                  and s.name not in ("get_inputs", "get_init_inputs")]
        problem = _impure(funcs, self.params)
        if problem:
            raise ImportStop(f"{problem}: a reference must be a pure function of its inputs; change the problem "
                             "(make the random tensor or the state an input) and import again", path=self.path)

    def input_inits(self, int_names: set[str]) -> list[tuple[dict, str | None] | None]:
        """Per element of get_inputs()'s list: its init, read from the expression that makes it."""
        ret = next((n for n in ast.walk(self.get_inputs) if isinstance(n, (ast.Return, ast.Yield))), None)
        value = getattr(ret, "value", None)
        local = {}
        for stmt in self.get_inputs.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                local[stmt.targets[0].id] = stmt.value
        if isinstance(value, ast.Name) and value.id in local:
            value = local[value.id]
        if not isinstance(value, (ast.List, ast.Tuple)):
            return []
        out: list = []
        for e in value.elts:
            if isinstance(e, ast.Name) and e.id in local:
                e = local[e.id]
            out.append(init_from_expr(e, int_names))
        return out


def _param_name(path: tuple[str, ...], taken: set[str]) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", "_".join(path))
    if not re.match(r"[A-Za-z_]", name):
        name = "p_" + name
    while name in taken:
        name += "_"
    return name


def _tensor_at(model: torch.nn.Module, path: tuple[str, ...]) -> torch.Tensor:
    obj: Any = model
    for p in path:
        obj = getattr(obj, p)
    return obj


NORMS = ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d", "InstanceNorm2d",
         "InstanceNorm3d", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm")
FAN_IN = ("Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Bilinear",
          "LazyLinear")
ACTIVATIONS = {  # class -> (function, attributes passed after the input)
    "ReLU": ("F.relu", ()), "ReLU6": ("F.relu6", ()), "SiLU": ("F.silu", ()), "Mish": ("F.mish", ()),
    "Sigmoid": ("torch.sigmoid", ()), "Tanh": ("torch.tanh", ()), "Hardsigmoid": ("F.hardsigmoid", ()),
    "Hardswish": ("F.hardswish", ()), "SELU": ("F.selu", ()), "Softsign": ("F.softsign", ()),
    "Tanhshrink": ("F.tanhshrink", ()), "LogSigmoid": ("F.logsigmoid", ()),
    "GELU": ("F.gelu", ("approximate=approximate",)), "LeakyReLU": ("F.leaky_relu", ("negative_slope",)),
    "ELU": ("F.elu", ("alpha",)), "CELU": ("F.celu", ("alpha",)), "Softplus": ("F.softplus", ("beta", "threshold")),
    "Softshrink": ("F.softshrink", ("lambd",)), "Hardshrink": ("F.hardshrink", ("lambd",)),
    "Hardtanh": ("F.hardtanh", ("min_val", "max_val")), "Threshold": ("F.threshold", ("threshold", "value")),
    "Softmax": ("F.softmax", ("dim",)), "LogSoftmax": ("F.log_softmax", ("dim",)), "Softmin": ("F.softmin", ("dim",)),
    "GLU": ("F.glu", ("dim",)), "PixelShuffle": ("F.pixel_shuffle", ("upscale_factor",)),
    "PixelUnshuffle": ("F.pixel_unshuffle", ("downscale_factor",)),
    "AdaptiveAvgPool1d": ("F.adaptive_avg_pool1d", ("output_size",)),
    "AdaptiveAvgPool2d": ("F.adaptive_avg_pool2d", ("output_size",)),
    "AdaptiveAvgPool3d": ("F.adaptive_avg_pool3d", ("output_size",)),
    "AdaptiveMaxPool1d": ("F.adaptive_max_pool1d", ("output_size", "return_indices")),
    "AdaptiveMaxPool2d": ("F.adaptive_max_pool2d", ("output_size", "return_indices")),
    "AdaptiveMaxPool3d": ("F.adaptive_max_pool3d", ("output_size", "return_indices")),
    "Flatten": ("torch.flatten", ("start_dim", "end_dim")),
    "Upsample": ("F.interpolate", ("size", "scale_factor", "mode", "align_corners",
                                   "recompute_scale_factor=recompute_scale_factor")),
    "CosineSimilarity": ("F.cosine_similarity", ("dim", "eps")),
    "PairwiseDistance": ("F.pairwise_distance", ("norm", "eps", "keepdim")),
    "MSELoss": ("F.mse_loss", ("reduction=reduction",)), "L1Loss": ("F.l1_loss", ("reduction=reduction",)),
    "SmoothL1Loss": ("F.smooth_l1_loss", ("reduction=reduction", "beta=beta")),
    "HuberLoss": ("F.huber_loss", ("reduction=reduction", "delta=delta")),
    "KLDivLoss": ("F.kl_div", ("reduction=reduction", "log_target=log_target")),
    "ZeroPad1d": ("F.pad", ("padding",)), "ZeroPad2d": ("F.pad", ("padding",)), "ZeroPad3d": ("F.pad", ("padding",)),
    "ConstantPad1d": ("F.pad", ("padding", "'constant'", "value")),
    "ConstantPad2d": ("F.pad", ("padding", "'constant'", "value")),
    "ConstantPad3d": ("F.pad", ("padding", "'constant'", "value")),
    "ReflectionPad1d": ("F.pad", ("padding", "'reflect'")), "ReflectionPad2d": ("F.pad", ("padding", "'reflect'")),
    "ReplicationPad1d": ("F.pad", ("padding", "'replicate'")),
    "ReplicationPad2d": ("F.pad", ("padding", "'replicate'")),
    "ReplicationPad3d": ("F.pad", ("padding", "'replicate'")),
}
IDENTITY = ("Identity", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout")


_THROUGH_TENSOR = object()


class _Translator(ast.NodeTransformer):
    """Model.forward's body with ``self`` gone: submodule calls as functional calls, parameters
    and buffers as names, plain attributes as formulas over the constants."""

    def __init__(self, model: torch.nn.Module, fitter: Fitter, names: dict[tuple[str, ...], str], problem_path: Path):
        self.model = model
        self.fitter = fitter
        self.names = names               # tensor path -> signature name
        self.used: list[tuple[str, ...]] = []
        self.notes: list[str] = []
        self.calls: list[str] = []
        self.path = problem_path

    # -- helpers --------------------------------------------------------------------------
    def tensor(self, path: tuple[str, ...]) -> str:
        if path not in self.used:
            self.used.append(path)
        return self.names[path]

    def attr(self, path: tuple[str, ...], what: str) -> str:
        return self.fitter.render(lambda r: _tensor_at(r.model, path), what)

    def _expr(self, text: str) -> ast.expr:
        return ast.parse(text, mode="eval").body

    # -- visiting -------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> ast.AST:
        chain = _self_chain(node.func)
        if chain is not None:
            obj = self._resolve(chain)
            if obj is _THROUGH_TENSOR:
                return self.generic_visit(node)
            if isinstance(obj, torch.nn.Module):
                if any(kw.arg is None for kw in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
                    raise _Untranslatable(f"self.{'.'.join(chain)} is called with * or ** arguments")
                args = [ast.unparse(self.visit(a)) for a in node.args]
                kwargs = {kw.arg: ast.unparse(self.visit(kw.value)) for kw in node.keywords}
                return ast.copy_location(self._expr(self.module_call(tuple(chain), obj, args, kwargs)), node)
            if callable(obj) and not isinstance(obj, torch.Tensor):
                raise _Untranslatable(f"forward calls the method self.{'.'.join(chain)}")
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        chain = _self_chain(node)
        if chain is None:
            return self.generic_visit(node)
        obj: Any = self.model
        for i, name in enumerate(chain):
            if not isinstance(obj, torch.nn.Module):
                break
            path = tuple(chain[: i + 1])
            if name in obj._parameters or name in obj._buffers:
                if getattr(obj, name) is None:
                    replacement: ast.expr = ast.Constant(None)
                else:
                    replacement = ast.Name(self.tensor(path), ast.Load())
                return ast.copy_location(self._rest(replacement, chain[i + 1:]), node)
            if name in obj._modules:
                obj = obj._modules[name]
                continue
            value = getattr(obj, name, None)
            if callable(value):
                raise _Untranslatable(f"forward uses the method self.{'.'.join(path)}")
            text = self.attr(path, f"self.{'.'.join(path)}")
            return ast.copy_location(self._rest(self._expr(text), chain[i + 1:]), node)
        raise _Untranslatable(f"forward uses the submodule self.{'.'.join(chain)} other than by calling it")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == "self":
            raise _Untranslatable(f"forward uses self itself (line {node.lineno})")
        return node

    def _rest(self, base: ast.expr, names: list[str]) -> ast.expr:
        for n in names:
            base = ast.Attribute(base, n, ast.Load())
        return base

    def _resolve(self, chain: list[str]) -> Any:
        """What ``self.<chain>`` is, walking modules only (``_THROUGH_TENSOR`` once the chain
        passes a tensor or a plain value: ``self.linear.weight.t``)."""
        obj: Any = self.model
        for n in chain:
            if not isinstance(obj, torch.nn.Module):
                return _THROUGH_TENSOR
            obj = getattr(obj, n, None)
        return obj

    # -- submodules ------------------------------------------------------------------------
    def module_call(self, path: tuple[str, ...], m: torch.nn.Module, args: list[str], kwargs: dict[str, str]) -> str:
        kind = type(m).__name__
        where = f"self.{'.'.join(path)} ({kind})"
        if type(m).__module__.split(".")[0] != "torch":
            raise _Untranslatable(f"{where} is a module of the problem's own")

        def a(attr: str) -> str:
            return self.attr((*path, attr), f"{where}.{attr}")

        def p(name: str) -> str:
            return "None" if getattr(m, name, None) is None else self.tensor((*path, name))

        self.calls.append(kind)
        if kind == "Sequential":
            if len(args) != 1 or kwargs:
                raise _Untranslatable(f"{where} is called with {len(args)} arguments")
            x = args[0]
            for child_name, child in m._modules.items():
                x = self.module_call((*path, child_name), child, [x], {})
            return x
        if kwargs and kind not in ("MultiheadAttention",):
            raise _Untranslatable(f"{where} is called with keyword arguments")
        if kind not in ("Bilinear", "CosineSimilarity", "PairwiseDistance", "MSELoss", "L1Loss", "SmoothL1Loss",
                        "HuberLoss", "KLDivLoss", "CrossEntropyLoss", "BCEWithLogitsLoss") and len(args) != 1:
            raise _Untranslatable(f"{where} is called with {len(args)} arguments")
        x = args[0] if args else ""
        training = self.model.training and m.training
        if kind in IDENTITY:
            if kind != "Identity" and training and m.p > 0:
                raise ImportStop(f"the model's forward calls {where} with p={m.p} in training mode: random numbers; "
                                 "a reference must be a pure function of its inputs (set p=0 or drop it)",
                                 path=self.path)
            return x
        if kind == "RReLU":
            if training:
                raise ImportStop(f"the model's forward calls {where} in training mode: random slopes", path=self.path)
            return f"F.rrelu({x}, {a('lower')}, {a('upper')}, False)"
        if kind == "Linear":
            return f"F.linear({x}, {p('weight')}, {p('bias')})"
        if kind == "Bilinear":
            return f"F.bilinear({args[0]}, {args[1]}, {p('weight')}, {p('bias')})"
        m_conv = re.fullmatch(r"Conv([123])d", kind)
        if m_conv:
            if m.padding_mode != "zeros":
                raise _Untranslatable(f"{where} pads with {m.padding_mode!r}")
            return (f"F.conv{m_conv.group(1)}d({x}, {p('weight')}, {p('bias')}, stride={a('stride')}, "
                    f"padding={a('padding')}, dilation={a('dilation')}, groups={a('groups')})")
        m_conv = re.fullmatch(r"ConvTranspose([123])d", kind)
        if m_conv:
            return (f"F.conv_transpose{m_conv.group(1)}d({x}, {p('weight')}, {p('bias')}, stride={a('stride')}, "
                    f"padding={a('padding')}, output_padding={a('output_padding')}, groups={a('groups')}, "
                    f"dilation={a('dilation')})")
        if kind in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"):
            if training or m.running_mean is None:
                if m.running_mean is not None:
                    self.notes.append(
                        f"{where} is in training mode: the reference normalises with the batch's "
                        "statistics, as the model's forward does, and leaves out its update of the running "
                        "statistics (state, not an output); decide whether the task should be inference-"
                        "mode BatchNorm (running statistics as inputs) instead"
                    )
                return f"F.batch_norm({x}, None, None, {p('weight')}, {p('bias')}, True, 0.0, {a('eps')})"
            return (
                f"F.batch_norm({x}, {p('running_mean')}, {p('running_var')}, {p('weight')}, {p('bias')}, False, "
                f"0.0, {a('eps')})"
            )
        if kind in ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"):
            if training or not m.track_running_stats:
                return f"F.instance_norm({x}, None, None, {p('weight')}, {p('bias')}, True, 0.0, {a('eps')})"
            return (
                f"F.instance_norm({x}, {p('running_mean')}, {p('running_var')}, {p('weight')}, {p('bias')}, "
                f"False, 0.0, {a('eps')})"
            )
        if kind == "LayerNorm":
            return f"F.layer_norm({x}, {a('normalized_shape')}, {p('weight')}, {p('bias')}, {a('eps')})"
        if kind == "GroupNorm":
            return f"F.group_norm({x}, {a('num_groups')}, {p('weight')}, {p('bias')}, {a('eps')})"
        if kind == "RMSNorm":
            return f"F.rms_norm({x}, {a('normalized_shape')}, {p('weight')}, {a('eps')})"
        if kind == "LocalResponseNorm":
            return f"F.local_response_norm({x}, {a('size')}, {a('alpha')}, {a('beta')}, {a('k')})"
        if kind == "Embedding":
            if m.max_norm is not None:
                raise _Untranslatable(f"{where} has max_norm: it renormalises its weight in place")
            return f"F.embedding({x}, {p('weight')}, {a('padding_idx')})"
        if kind == "PReLU":
            return f"F.prelu({x}, {p('weight')})"
        m_pool = re.fullmatch(r"(Max|Avg)Pool([123])d", kind)
        if m_pool:
            n = m_pool.group(2)
            if m_pool.group(1) == "Max":
                return (
                    f"F.max_pool{n}d({x}, {a('kernel_size')}, {a('stride')}, {a('padding')}, {a('dilation')}, "
                    f"ceil_mode={a('ceil_mode')}, return_indices={a('return_indices')})"
                )
            extra = f", divisor_override={a('divisor_override')}" if n != "1" else ""
            return (
                f"F.avg_pool{n}d({x}, {a('kernel_size')}, {a('stride')}, {a('padding')}, "
                f"ceil_mode={a('ceil_mode')}, count_include_pad={a('count_include_pad')}{extra})"
            )
        if kind == "CrossEntropyLoss":
            return (
                f"F.cross_entropy({args[0]}, {args[1]}, {p('weight')}, ignore_index={a('ignore_index')}, "
                f"reduction={a('reduction')}, label_smoothing={a('label_smoothing')})"
            )
        if kind == "BCEWithLogitsLoss":
            return (
                f"F.binary_cross_entropy_with_logits({args[0]}, {args[1]}, {p('weight')}, "
                f"reduction={a('reduction')}, pos_weight={p('pos_weight')})"
            )
        if kind in ACTIVATIONS:
            fn, attrs = ACTIVATIONS[kind]
            parts = list(args)
            for spec in attrs:
                if spec.startswith("'"):
                    parts.append(spec)
                elif "=" in spec:
                    key, attr = spec.split("=")
                    parts.append(f"{key}={a(attr)}")
                else:
                    parts.append(a(spec))
            return f"{fn}({', '.join(parts)})"
        raise _Untranslatable(f"{where} is not one of the modules the importer writes as functional calls")


def _init_for_param(
    model: torch.nn.Module,
    path: tuple[str, ...],
    shape_of: Callable[[tuple[str, ...]], list],
    problem: ModuleProblem,
    int_names: set[str],
) -> tuple[dict, str | None]:
    """How PyTorch initialises one of the model's tensors, as a signature init: a Linear's or a
    convolution's weight and bias uniform in +-1/sqrt(fan_in), a norm's weight near 1; a
    tensor the model makes itself, as its expression in __init__ says."""
    owner = model.get_submodule(".".join(path[:-1])) if len(path) > 1 else model
    kind, leaf = type(owner).__name__, path[-1]
    if owner is model:
        init_fn = next((s for s in problem.cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        for node in ast.walk(init_fn) if init_fn else []:
            expr = None
            if isinstance(node, ast.Assign) and any(_self_chain(t) == [leaf] for t in node.targets):
                expr = node.value
                if isinstance(expr, ast.Call) and _call_name(expr) in ("Parameter", "Buffer") and expr.args:
                    expr = expr.args[0]
            elif (
                isinstance(node, ast.Call)
                and _call_name(node) in ("register_buffer", "register_parameter")
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == leaf
            ):
                expr = node.args[1]
                if isinstance(expr, ast.Call) and _call_name(expr) == "Parameter" and expr.args:
                    expr = expr.args[0]
            if expr is not None:
                return init_from_expr(expr, int_names)
        return {"kind": "normal"}, "its initialisation could not be read: drawn normal(0, 1)"
    if kind in FAN_IN and leaf in ("weight", "bias"):
        wshape = shape_of((*path[:-1], "weight"))
        fan = wshape[1:2] if kind == "Bilinear" else wshape[1:]
        bound = f"1 / sqrt({_prod(fan)})"
        return {"kind": "uniform", "low": f"-{bound}", "high": bound}, None
    if kind in NORMS:
        if leaf == "weight":
            return {"kind": "ones_plus_noise"}, None
        if leaf == "bias":
            return {
                "kind": "normal",
                "std": 0.1,
            }, "initialised to zeros by PyTorch: drawn normal(0, 0.1) so that a kernel that ignores it fails"
        if leaf == "running_mean":
            return {"kind": "normal", "std": 0.1}, "a running mean (zeros at initialisation): drawn normal(0, 0.1)"
        if leaf == "running_var":
            return {
                "kind": "uniform",
                "low": 0.5,
                "high": 1.5,
            }, "a running variance (ones at initialisation): drawn uniform(0.5, 1.5)"
    if kind == "Embedding":
        return {"kind": "normal"}, None
    if kind == "PReLU":
        return {
            "kind": "uniform",
            "low": 0.1,
            "high": 0.4,
        }, "PReLU's slope (0.25 at initialisation): drawn uniform(0.1, 0.4)"
    return {"kind": "normal"}, f"a {kind}.{leaf}: its initialisation is not known to the importer; drawn normal(0, 1)"


def import_kernelbench(path: Path | str, root: Path | str | None = None, task_id: str | None = None) -> ImportResult:
    """A KernelBench-style problem file -> a torch2hip task folder under ``root`` (default:
    the repository's tasks/)."""
    path = Path(path)
    if not path.is_file():
        raise ImportStop("file not found", path=path)
    _, name = _resolve_id(task_id, path.stem, ("torch2hip",))
    problem = ModuleProblem(path)
    built = build_module_task(problem, name)
    d = built.draft
    d.category = "torch2hip"
    d.origin = f"the KernelBench-style problem {path.name}"
    return _finish(d, Path(root) if root else None, path, built.self_check)


@dataclass
class ModuleTask:
    draft: Draft
    self_check: Callable[[Path], list[str]]


def build_module_task(problem: ModuleProblem, name: str, category: str = "torch2hip") -> ModuleTask:
    """The signature, reference, configs and roofline of a task made from a module problem
    (shared by the kernelbench importer and the aka importer's PyTorch module files)."""
    path = problem.path
    problem.purity()
    consts = problem.constants
    device = "meta"
    try:
        base = problem.run(consts, "meta")
        problem.output_tensors(base.output)
    except ImportStop:
        raise
    except Exception as first:  # noqa: BLE001 - retried on the CPU, then reported in one line
        try:
            device = "cpu"
            base = problem.run(consts, "cpu")
        except Exception as exc:  # noqa: BLE001
            first_line = str(exc).splitlines()[0] if str(exc) else ""
            raise ImportStop(
                f"running the problem failed ({type(exc).__name__}: {first_line}; on the meta device: "
                f"{type(first).__name__})",
                path=path,
            ) from None
    outs = problem.output_tensors(base.output)
    fitter = Fitter(consts, lambda params: problem.run(params, device))
    fitter._cache[()] = base
    decisions: list[str] = []
    if device == "cpu":
        decisions.append("the forward does not run on the meta device, so every probe ran on the CPU at full size")
    if problem.cases > 1:
        decisions.append(
            f"get_inputs() yields {problem.cases} cases: the first is the seen config; add the others "
            "(their shapes are in the problem) as configs if they matter"
        )

    int_names = {k for k, v in consts.items() if type(v) is int}
    taken = set(problem.params) | set(consts)
    inputs: list[dict] = []
    getters: list[tuple[dict, Callable[[_Run], Any]]] = []
    prelude: list[str] = []
    inits = problem.input_inits(int_names)
    n_given = len(base.inputs)
    if n_given > len(problem.params):
        raise ImportStop(
            f"get_inputs() gives {n_given} values but {problem.cls.name}.forward takes {len(problem.params)}", path=path
        )
    missing = [p for p in problem.params[n_given:] if p not in problem.defaults]
    if missing:
        raise ImportStop(f"get_inputs() gives no value for forward's {', '.join(missing)}", path=path)

    def dims_of(get: Callable[[_Run], torch.Tensor], what: str, ndim: int) -> list:
        return [fitter.int_formula(lambda r, i=i: get(r).shape[i], f"dimension {i} of {what}") for i in range(ndim)]

    for i, (pname, value) in enumerate(zip(problem.params, base.inputs)):
        if isinstance(value, torch.Tensor):
            if value.dtype not in DTYPE_NAMES:
                raise ImportStop(
                    f"get_inputs() element {i} ({pname}) is {value.dtype}: the schema's dtypes are "
                    f"{', '.join(DTYPE_NAMES.values())}",
                    path=path,
                )
            def getter(r: Any, i: int = i) -> Any:
                return r.inputs[i]

            spec = {"name": pname, "dtype": DTYPE_NAMES[value.dtype], "shape": dims_of(getter, pname, value.dim())}
            init, note = (
                inits[i]
                if i < len(inits) and inits[i]
                else ({"kind": "normal"}, "its expression in get_inputs() could not be read")
            )
            if value.dtype == torch.bool:
                init, note = {"kind": "bernoulli"}, None
            elif (
                value.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
                and init["kind"] != "randint"
            ):
                init, note = (
                    {"kind": "randint", "low": 0, "high": 16},
                    "an integer input not made by randint: drawn in [0, 16)",
                )
            if init != {"kind": "normal"}:
                spec["init"] = init
            if note:
                decisions.append(f"input {pname}: {note}")
            inputs.append(spec)
            getters.append((spec, getter))
        else:
            prelude.append(f"{pname} = {fitter.render(lambda r, i=i: r.inputs[i], f'forward argument {pname}')}")
    for pname in problem.params[n_given:]:
        prelude.append(f"{pname} = {ast.unparse(problem.defaults[pname])}")

    # parameters and buffers: signature names for every tensor of the model
    names: dict[tuple[str, ...], str] = {}
    tensors = [(tuple(n.split(".")), t, "parameter") for n, t in base.model.named_parameters()]
    tensors += [(tuple(n.split(".")), t, "buffer") for n, t in base.model.named_buffers()]
    for pth, _t, _ in tensors:
        names[pth] = _param_name(pth, taken)
        taken.add(names[pth])

    translator = _Translator(base.model, fitter, names, path)
    fallback_reason = None
    try:
        fwd = copy.deepcopy(problem.forward)
        body = [translator.visit(s) for s in fwd.body]
        body = [ast.fix_missing_locations(s) for s in body]
        used_paths = list(translator.used)
    except _Untranslatable as exc:
        fallback_reason = str(exc)
        body = []
        used_paths = [
            p
            for p, t, kind in tensors
            if not (
                p[-1] == "num_batches_tracked" or (p[-1] in ("running_mean", "running_var") and base.model.training)
            )
        ]
    decisions += translator.notes if not fallback_reason else []

    params_specs: list[dict] = []
    shapes: dict[tuple[str, ...], list] = {}

    def shape_of(pth: tuple[str, ...]) -> list:
        if pth not in shapes:
            shapes[pth] = dims_of(
                lambda r: _tensor_at(r.model, pth), f"self.{'.'.join(pth)}", _tensor_at(base.model, pth).dim()
            )
        return shapes[pth]

    for pth in used_paths:
        t = _tensor_at(base.model, pth)
        if t.dtype not in DTYPE_NAMES:
            raise ImportStop(f"self.{'.'.join(pth)} is {t.dtype}: not a dtype of the schema", path=path)
        def getter(r: Any, pth: Any = pth) -> Any:
            return _tensor_at(r.model, pth)

        shape = shape_of(pth)
        init, note = _init_for_param(base.model, pth, shape_of, problem, int_names)
        if note:
            decisions.append(f"input {names[pth]} (self.{'.'.join(pth)}): {note}")
        spec = {"name": names[pth], "dtype": DTYPE_NAMES[t.dtype], "shape": shape}
        if init != {"kind": "normal"}:
            spec["init"] = init
        params_specs.append(spec)
        getters.append((spec, getter))
    unused = [".".join(p) for p, t, kind in tensors if p not in used_paths and kind == "parameter"]
    if unused:
        decisions.append(
            f"the model's parameter{'s' if len(unused) > 1 else ''} {', '.join(unused)} "
            f"{'are' if len(unused) > 1 else 'is'} not used by forward: left out of the signature"
        )

    out_names = ["out"] if len(outs) == 1 else [f"out{i}" for i in range(len(outs))]
    out_names = [n if n not in taken else n + "_" for n in out_names]
    outputs = []
    for i, (oname, o) in enumerate(zip(out_names, outs)):
        n_outs = len(outs)
        getter = lambda r, i=i, n=n_outs: (  # noqa: E731 - a formula's getter, as the fitter reads it
            r.output if n == 1 and not isinstance(r.output, (tuple, list)) else r.output[i]
        )
        spec = {"name": oname, "dtype": DTYPE_NAMES[o.dtype], "shape": dims_of(getter, f"output {oname}", o.dim())}
        outputs.append(spec)
        getters.append((spec, getter))

    flops, flops_ok = fitter.number_formula(lambda r: r.flops)
    if not flops_ok:
        decisions.append(
            f"roofline.flops is the count of the seen config ({flops}): the counter's total does not "
            "follow the constants as a product; write it as a formula"
        )

    # the reference's text
    all_inputs = inputs + params_specs
    reference_args = [s["name"] for s in all_inputs]
    ref_lines = []
    if fallback_reason is None:
        body_text = "\n".join(ast.unparse(s) for s in body)
        free = _free_names(body) | _free_names([ast.parse(p) for p in prelude])
    else:
        init_args = [
            fitter.render(lambda r, i=i: r.init_args[i], f"get_init_inputs()[{i}]") for i in range(len(base.init_args))
        ]
        init_args += [
            f"{k}={fitter.render(lambda r, k=k: r.init_kwargs[k], f'get_init_inputs() {k}')}" for k in base.init_kwargs
        ]
        first_float = next(
            (s["name"] for s in all_inputs if s["dtype"].startswith(("float", "bfloat"))),
            all_inputs[0]["name"] if all_inputs else None,
        )
        mapping = ", ".join(f"{'.'.join(p)!r}: {names[p]}" for p in used_paths)
        fwd_args = ", ".join(problem.params)
        body_text = "\n".join(
            [
                "with torch.device('meta'):",
                f"    model = {problem.cls.name}({', '.join(init_args)})",
                f"model = model.to_empty(device={first_float}.device).to({first_float}.dtype)" if first_float else "",
                f"return torch.func.functional_call(model, {{{mapping}}}, "
                f"({fwd_args}{',' if len(problem.params) == 1 else ''}))",
            ]
        )
        free = (
            _free_names([ast.parse(body_text.replace("return ", "_ = "))])
            | _free_names([ast.parse(p) for p in prelude])
            | {problem.cls.name}
        )
        decisions.append(
            f"the reference calls the problem's {problem.cls.name} through torch.func.functional_call "
            f"because {fallback_reason}: it builds the model on every call (a slower eager baseline); "
            "write forward as plain torch calls if you can"
        )
    decisions += fitter.inexact
    floats_used = sorted(n for n in free if n in consts and type(consts[n]) is float)
    ints_in_body = {n for n in free if n in int_names}
    used_ints = [k for k in consts if k in (fitter.used | ints_in_body) and k in int_names]
    used_floats = [k for k in consts if k in (set(fitter.used) | set(floats_used)) and type(consts[k]) is float]
    scalars = [{"name": k, "type": "int64"} for k in used_ints] + [
        {"name": k, "type": "float32", "value": consts[k]} for k in used_floats
    ]
    imports = _imports(problem.tree)
    skip = {"get_inputs", "get_init_inputs", *consts}
    if fallback_reason is None:
        skip.add(problem.cls.name)
        helpers = _module_defs(problem.tree, free, skip)
    else:
        # the problem as written, less get_inputs and get_init_inputs (its constants stay: module code may read
        # them; inside reference() the scalars of the same names shadow them)
        helpers = [
            s
            for s in problem.tree.body
            if not isinstance(s, (ast.Import, ast.ImportFrom))
            and not (isinstance(s, ast.FunctionDef) and s.name in ("get_inputs", "get_init_inputs"))
        ]
    bound = _bound_by_imports(imports)
    header = [i for i in imports]
    if "torch" not in bound:
        header.append("import torch")
    if "F" not in bound:
        header.append("import torch.nn.functional as F")
    helper_text = _join_statements(problem.text, helpers)
    signature = ", ".join(reference_args + [s["name"] for s in scalars])
    doc = (
        f'    """{problem.cls.name}.forward of {path.name} as a function: its tensors, the model\'s parameters and '
        f'buffers, then the problem\'s\n    constants (written by `arena tasks import`; read it)."""'
    )
    ref_lines = [
        f'"""Reference of {category}/{name}: {problem.cls.name}.forward of {path.name} '
        '(imported; check it against the original)."""',
        *header,
        "",
    ]
    if helper_text:
        ref_lines += ["", helper_text, ""]
    ref_lines += ["", f"def reference({signature}):", doc]
    ref_lines += [f"    {ln}" for ln in prelude]
    ref_lines += [f"    {ln}" if ln else "" for ln in body_text.splitlines() if ln is not None]
    reference = "\n".join(ref_lines).rstrip() + "\n"

    # configs
    params = {k: consts[k] for k in used_ints}
    env_floats = {k: consts[k] for k in used_floats}
    tensors_specs = inputs + params_specs + [{**o, "_output": True} for o in outputs]

    def valid(cfg: dict) -> bool:
        try:
            r = problem.run({**consts, **cfg}, device)
            env = {**cfg, **env_floats}
            for spec, get in getters:
                want = tuple(int(formula.evaluate(x, env)) for x in spec["shape"])
                if tuple(get(r).shape) != want:
                    return False
            return True
        except Exception:  # noqa: BLE001 - the original does not accept this config
            return False

    def size(cfg: dict) -> int:
        try:
            return _elements(tensors_specs, {**cfg, **env_floats})
        except formula.FormulaError:
            return 10**18

    reinit = [
        f"{_dotted(n.func)} (line {n.lineno})"
        for n in ast.walk(problem.tree)
        if isinstance(n, ast.Call) and _dotted(n.func).startswith(("nn.init.", "torch.nn.init.", "init."))
    ]
    if reinit:
        decisions.append(
            f"the problem re-initialises tensors ({', '.join(reinit[:3])}): the inits in task.yaml follow "
            "PyTorch's defaults for each module type; make them draw as the problem does"
        )

    def count(r: _Run) -> int:
        return len(list(r.model.named_parameters())) + len(list(r.model.named_buffers()))

    structural = [
        k
        for k in used_ints
        if fitter.run({k: consts[k] * 2}) is not None and count(fitter.run({k: consts[k] * 2})) != count(base)
    ]
    if structural:
        decisions.append(
            f"the number of the model's tensors changes with {', '.join(structural)}: the signature has "
            f"the tensors of the seen value, so {', '.join(structural)} must stay fixed (shape_space "
            "choices)"
        )
    vary = [k for k in used_ints if params[k] >= MIN_VARIED and k not in structural]
    seen, held, smoke, notes = draft_configs(params, vary, valid, size, "problem")
    decisions += notes
    if len(held) < 4:
        decisions.append(f"only {len(held)} held-out drafts were accepted by the original: write at least 4")
    roofline, rnotes = roofline_draft(tensors_specs, flops, {**params, **env_floats})
    decisions += rnotes
    space = shape_space_draft(params, vary)
    fixed = [k for k in params if k not in vary]
    decisions.insert(
        0,
        "configs/seen.yaml has the problem's own shapes first; the rest of seen.yaml and all of "
        "heldout.yaml are drafts (each checked against the original model): make the seen configs "
        "production shapes inside the timing window (>= 20 us on an H100) and the held-out ones "
        "differ in kind",
    )
    decisions.insert(
        1,
        "shape_space is a draft ([value / 8, 4 * value] for sizes"
        + (f"; {', '.join(fixed)} fixed" if fixed else "")
        + "): add the constraints the model needs (divisibility, sizes that must agree), which the "
        "importer cannot know",
    )
    decisions.insert(
        2,
        "title, description, tags, difficulty, roofline (bound and formulas) and forbidden are "
        "drafts: say what the kernel computes, in what precision, and which library calls a candidate "
        "may not make",
    )
    title = _title_from(problem)
    description = _description_from(problem, path)
    kinds = sorted(set(translator.calls))
    ops = sorted(
        {
            m.group(0)
            for m in re.finditer(r"\b(?:F|torch)\.[a-z_0-9.]+", body_text)
            if m.group(0) not in ("torch.device", "torch.func.functional_call")
        }
    )
    forbidden = sorted({o.replace("F.", "torch.nn.functional.") for o in ops})
    d = Draft(
        category=category,
        name=name,
        title=title,
        description=description,
        entry=name,
        inputs=inputs + params_specs,
        outputs=outputs,
        scalars=scalars,
        roofline=roofline,
        shape_space=space,
        reference=reference,
        tags=["imported", "kernelbench"],
        difficulty=1 if len(kinds) + len(ops) <= 1 else 2,
        forbidden=forbidden,
        seen=seen,
        heldout=held,
        smoke=smoke,
        decisions=decisions,
        notes={
            "title": "say what the task is",
            "description": "what the kernel computes, precisely",
            "tags": "families of the coverage table",
            "difficulty": "1 single op, 2 fused, 3 model block",
            "roofline": "bytes: every tensor once; flops: PyTorch's counter",
            "shape_space": "ranges around the problem's values; add constraints",
            "forbidden": "the calls the reference makes; keep those a candidate may not make",
        },
    )

    def self_check(folder: Path) -> tuple[list[str], list[str]]:
        passed, found = _module_self_check(folder, problem, names, used_paths)
        return passed, found + _space_check(folder, valid)

    return ModuleTask(d, self_check)


def _space_check(folder: Path, valid: Callable[[dict], bool], n: int = 12) -> list[str]:
    """Configs drawn from the drafted shape_space (as the random split draws them) that the
    original problem rejects: the constraint the author must add."""
    from arena.taskdef.loader import load_task
    from arena.taskdef.shapes import DrawLimits, draw_configs

    try:
        task = load_task(folder)
        drawn = draw_configs(task, n, 0, DrawLimits(max_tensor_bytes=1e15, max_roofline_bytes=1e18, max_flops=1e21))
    except ArenaError:
        return []
    bad = [dict(c.params) for c in drawn if not valid(dict(c.params))]
    if not bad:
        return []
    return [
        f"{len(bad)} of {len(drawn)} configs drawn from the draft shape_space are rejected by the original "
        f"(e.g. {bad[0]}): add a shape_space constraint"
    ]


def _title_from(problem: ModuleProblem) -> str:
    doc = ast.get_docstring(problem.cls) or ast.get_docstring(problem.tree) or ""
    first = doc.strip().splitlines()[0].strip().rstrip(".") if doc.strip() else ""
    return first[:100] if len(first) >= 3 else f"{problem.path.stem} (imported)"


def _description_from(problem: ModuleProblem, path: Path) -> str:
    doc = (ast.get_docstring(problem.cls) or ast.get_docstring(problem.tree) or "").strip()
    return (
        ((doc + "\n\n") if doc else "")
        + f"Imported from {path.name}: {problem.cls.name}.forward, with the model's parameters as inputs.\n"
        "TODO: say what the kernel computes, in what precision, and where the work is.\n"
    )


def _module_self_check(
    folder: Path, problem: ModuleProblem, names: dict[tuple[str, ...], str], used_paths: list[tuple[str, ...]]
) -> tuple[list[str], list[str]]:
    """The written reference against the original model on the smoke config, on the CPU: the
    same inputs (the harness's input maker), the model's tensors set to the signature's."""
    from arena.check.degeneracy import reference_problems
    from arena.check.inputs import make_inputs
    from arena.evaluation.sides import import_file
    from arena.taskdef.loader import load_task

    out: list[str] = []
    passed: list[str] = []
    try:
        task = load_task(folder)
        config = task.configs("smoke")[0]
        env = task.env(config)
        ins = make_inputs(task, env, 0, "cpu")
        ref = import_file(task.reference_path, f"arena_import_check_{abs(hash(str(folder)))}")
        scalars = [task.scalar_value(s, env) for s in task.scalars]
        got = ref.reference(*[t.clone() for t in ins.values()], *scalars)
        got = list(got) if isinstance(got, (tuple, list)) else [got]
        with torch.random.fork_rng():  # the model's own initialisation draws: the caller's RNG untouched
            run = problem.run({**problem.constants, **dict(config.params)}, "cpu")
        with torch.no_grad():
            for pth in used_paths:
                _tensor_at(run.model, pth).copy_(ins[names[pth]])
            args = [ins[n] if n in ins else v for n, v in zip(problem.params, run.inputs)]
            want = run.model(*args)
        want = list(want) if isinstance(want, (tuple, list)) else [want]
        worst = 0.0
        for spec, g, w in zip(task.outputs, got, want):
            if g.shape == w.shape:
                worst = max(worst, (g.float() - w.float()).abs().max().item() if g.numel() else 0.0)
            if g.shape != w.shape or not torch.allclose(g.float(), w.float(), rtol=1e-4, atol=1e-5):
                err = (
                    (g.float() - w.float()).abs().max().item()
                    if g.shape == w.shape
                    else f"shape {tuple(g.shape)} != {tuple(w.shape)}"
                )
                out.append(
                    f"the reference differs from {problem.cls.name}.forward on the smoke config (output "
                    f"{spec.name}: {err}): correct reference.py"
                )
        if not out:
            passed.append(
                f"reference.py computes what {problem.cls.name}.forward computes on the smoke config, on the "
                f"CPU (max abs difference {worst:.1e})"
            )
            bad = reference_problems(task, config, "cpu", ref)
            out += [
                f"on the smoke config: {b} (the degeneracy rules of CONTRIBUTING.md; change the init or the problem)"
                for b in bad
            ]
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the folder is written
        out.append(
            f"the importer could not compare the reference with {problem.cls.name}.forward on the smoke "
            f"config ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}): check it by hand"
        )
    return passed, out


# ------------------------------------------------------------------------------------------
# AgentKernelArena-style task folders


SOURCE_SUFFIXES = (".py", ".hip", ".cu", ".cpp", ".cc", ".cuh", ".h", ".hpp")
HARNESS_NAMES = re.compile(r"(task_runner|harness|test_|_test\.py|check|correctness|eval|bench|perf)", re.I)
COMPARE_FUNCS = {
    "allclose",
    "assert_close",
    "assert_allclose",
    "isclose",
    "equal",
    "assert_equal",
    "assert_array_almost_equal",
    "assert_array_equal",
}
WRAPPERS = PASS_METHODS | set(DTYPE_METHODS) | {"cpu", "flatten", "view", "reshape", "squeeze"}


def _strings(obj: Any, keys: tuple = ()) -> list[tuple[tuple, str]]:
    """Every string in a YAML document with the keys that lead to it."""
    out: list[tuple[tuple, str]] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _strings(v, (*keys, str(k)))
    elif isinstance(obj, list):
        for v in obj:
            out += _strings(v, keys)
    elif isinstance(obj, str):
        out.append((keys, obj))
    return out


@dataclass
class AkaFolder:
    """What an AgentKernelArena-style folder says about itself: its YAML, the kernel source(s),
    the test scripts, PyTorch module files and workload files."""

    folder: Path
    config_path: Path
    config: dict
    category: str
    sources: list[Path]
    kernels: list[str]
    harnesses: list[Path]
    modules: list[Path]
    workloads: list[Path]
    instructions: str

    @classmethod
    def read(cls, path: Path) -> "AkaFolder":
        path = Path(path)
        if path.is_file() and path.suffix not in (".yaml", ".yml"):
            raise ImportStop(
                "`arena tasks import aka` takes an AgentKernelArena task folder (or its YAML file), "
                "not a single source file",
                path=path,
            )
        if path.is_file():
            folder, candidates = path.parent, [path]
        elif path.is_dir():
            folder = path
            candidates = [path / n for n in ("config.yaml", "config.yml", "task.yaml", "task.yml")]
            candidates += sorted(p for p in path.glob("*.y*ml") if p not in candidates)
        else:
            raise ImportStop("not found", path=path)
        config_path, config = None, None
        for c in candidates:
            if not c.is_file():
                continue
            try:
                data = yaml.safe_load(c.read_text())
            except (yaml.YAMLError, OSError, UnicodeDecodeError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise ImportStop(f"not valid YAML: {first}", path=c) from None
            if isinstance(data, dict):
                config_path, config = c, data
                break
        if config is None:
            raise ImportStop(
                "no task YAML (config.yaml) here: an AgentKernelArena task folder has one naming its kernel source",
                path=folder,
            )
        strings = _strings(config)
        sources: list[Path] = []
        for keys, value in strings:
            joined = ".".join(keys).lower()
            if not re.search(r"source|target|kernel|editable|entrypoint", joined):
                continue
            for token in value.split():
                p = folder / token
                if p.suffix in SOURCE_SUFFIXES and p.is_file() and p not in sources:
                    sources.append(p)
        if not sources:
            found = sorted(
                p
                for p in folder.rglob("*")
                if p.is_file()
                and (
                    p.suffix in (".hip", ".cu")
                    or (
                        p.suffix == ".py"
                        and not HARNESS_NAMES.search(p.name)
                        and "@triton.jit" in p.read_text(errors="replace")
                    )
                )
            )
            sources = found[:1]
        if not sources:
            raise ImportStop(
                "the task YAML names no kernel source that exists here (source_file_path, "
                "target_file_path or candidate.editable), and the folder holds no .hip, .cu or Triton "
                "file",
                path=config_path,
            )
        kernels = [
            v
            for keys, v in strings
            if re.search(r"target_kernel|symbol|entrypoint", ".".join(keys).lower())
            and re.fullmatch(r"[A-Za-z_]\w*", v)
        ]
        task_type = str(config.get("task_type") or (config.get("prompt") or {}).get("task_type") or "")
        language = str((config.get("candidate") or {}).get("language") or "")
        category = (
            task_type
            if task_type in CATEGORIES
            else {"triton": "triton2triton", "hip": "hip2hip"}.get(
                language.lower(), "triton2triton" if sources[0].suffix == ".py" else "hip2hip"
            )
        )
        if category == "torch2hip":
            raise ImportStop(
                "a torch2hip task: import its PyTorch problem file with `arena tasks import kernelbench FILE` instead",
                path=config_path,
            )
        commands = [v for keys, v in strings if re.search(r"command|runner", ".".join(keys).lower())]
        harnesses: list[Path] = []
        modules: list[Path] = []
        named = [folder / t for c in commands for t in c.split() if t.endswith(".py")]
        for p in [*named, *sorted(folder.rglob("*.py"))]:
            if not p.is_file() or p in sources or p in harnesses or p in modules:
                continue
            text = p.read_text(errors="replace")
            if "def get_inputs" in text and "def forward" in text:
                modules.append(p)  # a PyTorch module problem (KernelBench-like)
            elif p in named or HARNESS_NAMES.search(p.name):
                harnesses.append(p)  # a test script: the commands' first
        modules.sort(key=lambda p: (p not in named, "func" in p.name, str(p)))
        workloads = sorted(p for p in folder.rglob("*.json") if re.search(r"workload|test_case|cases", p.name))
        instructions = str((config.get("prompt") or {}).get("instructions") or config.get("description") or "")
        return cls(
            folder, config_path, config, category, sources, kernels, harnesses, modules, workloads, instructions.strip()
        )


# -- reading a test script -------------------------------------------------------------------


@dataclass
class HTensor:
    name: str
    dtype: str
    shape: list | None
    init: dict
    note: str | None
    maker: str
    fill: float | None = None


@dataclass
class Harness:
    """What a test script does in its correctness check, as far as it can be read: the cases
    it loops over, the tensors it makes, the call into the kernel's file and the comparison."""

    path: Path
    text: str
    tree: ast.Module
    fields: list[str]
    cases: list[dict]
    tensors: dict[str, HTensor]
    call: ast.Call
    call_stmt: ast.stmt
    launcher: str
    results: list[str]
    compared: list[tuple[str, ast.expr, ast.stmt]]
    stmts: list[ast.stmt]
    consts: dict[str, Any]
    kinds: dict[str, str]  # name -> "dtype:<name>" | "device" | "int:<formula>"
    notes: list[str]
    function: str


def _flatten(stmts: Iterable[ast.stmt], loop: ast.For | None) -> list[ast.stmt]:
    """Statements in order, try/with/if bodies opened; the chosen loop's body inlined in its place."""
    out: list[ast.stmt] = []
    for s in stmts:
        if s is loop:
            out += _flatten(s.body, loop)
        elif isinstance(s, (ast.Try,)):
            out += _flatten(s.body, loop)
        elif isinstance(s, (ast.With,)):
            out += _flatten(s.body, loop)
        elif isinstance(s, ast.For) and loop is not None and any(n is loop for n in ast.walk(s)):
            out += _flatten(s.body, loop)
        else:
            out.append(s)
    return out


def _module_values(tree: ast.Module) -> dict[str, Any]:
    out = {}
    for s in tree.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            try:
                out[s.targets[0].id] = ast.literal_eval(s.value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    return out


def _fields_from_comment(text: str, line: int) -> list[str] | None:
    lines = text.splitlines()
    for ln in reversed(lines[max(0, line - 4) : line]):
        m = re.search(r"\(\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*\)", ln)
        if ln.strip().startswith("#") and m:
            return [x.strip() for x in m.group(1).split(",")]
    return None


def read_harness(path: Path, launchers: set[str]) -> tuple[Harness | None, str]:
    """The harness's correctness check, or (None, why not)."""
    try:
        text, tree = _parse(path)
    except ImportStop as exc:
        return None, str(exc)
    values = _module_values(tree)
    funcs = [s for s in ast.walk(tree) if isinstance(s, ast.FunctionDef)]

    def calls_launcher(fn: ast.AST) -> ast.Call | None:
        for n in ast.walk(fn):
            if (
                isinstance(n, ast.Call)
                and _call_name(n) in launchers
                and not isinstance(n.func, ast.Name)
                or isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id in launchers
            ):
                return n
        return None

    def compares(fn: ast.AST) -> bool:
        return any(isinstance(n, ast.Call) and _call_name(n) in COMPARE_FUNCS for n in ast.walk(fn))

    ranked = sorted(
        (f for f in funcs if calls_launcher(f) and compares(f)),
        key=lambda f: (not re.search("correct|test|check|verif", f.name), f.lineno),
    )
    if not ranked:
        return (
            None,
            f"{path.name}: no function both calls {' or '.join(sorted(launchers)) or 'the kernel'} and "
            "compares its result (allclose / assert_close)",
        )
    fn = ranked[0]
    call = calls_launcher(fn)
    loop = next((n for n in ast.walk(fn) if isinstance(n, ast.For) and any(c is call for c in ast.walk(n))), None)
    notes: list[str] = []
    fields: list[str] = []
    cases: list[dict] = []
    rebinds: dict[str, str] = {}
    if loop is not None:
        target, it = loop.target, loop.iter
        if isinstance(it, ast.Call) and _call_name(it) == "enumerate" and it.args:
            it = it.args[0]
            target = target.elts[1] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else target
        raw = values.get(it.id) if isinstance(it, ast.Name) else None
        if raw is None and isinstance(it, (ast.List, ast.Tuple)):
            try:
                raw = ast.literal_eval(it)
            except (ValueError, SyntaxError):
                raw = None
        if not isinstance(raw, (list, tuple)) or not raw:
            return (
                None,
                f"{path.name}: the loop around the kernel call (line {loop.lineno}) is over "
                f"{_dotted(loop.iter)}, not a list of shapes the importer can read",
            )
        names: list[str] | None = None
        if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            names = [e.id for e in target.elts]
            cases = [dict(zip(names, item)) for item in raw]
        elif isinstance(target, ast.Name):
            var = target.id
            for s in ast.walk(loop):
                if (
                    isinstance(s, ast.Assign)
                    and isinstance(s.value, ast.Name)
                    and s.value.id == var
                    and isinstance(s.targets[0], ast.Tuple)
                ):
                    names = [e.id for e in s.targets[0].elts if isinstance(e, ast.Name)]
                elif (
                    isinstance(s, ast.Assign)
                    and isinstance(s.value, ast.Subscript)
                    and isinstance(s.value.value, ast.Name)
                    and s.value.value.id == var
                    and isinstance(s.targets[0], ast.Name)
                ):
                    key = (
                        _number(s.value.slice)
                        if not isinstance(s.value.slice, ast.Constant) or not isinstance(s.value.slice.value, str)
                        else s.value.slice.value
                    )
                    rebinds[s.targets[0].id] = key
            if rebinds and all(isinstance(item, dict) for item in raw):
                cases = [{n: item.get(k) for n, k in rebinds.items()} for item in raw]
                names = list(rebinds)
            elif rebinds and all(isinstance(item, (list, tuple)) for item in raw):
                cases = [{n: item[int(k)] for n, k in rebinds.items()} for item in raw]
                names = list(rebinds)
            elif names is not None:
                cases = [dict(zip(names, item)) for item in raw]
            elif all(isinstance(item, dict) for item in raw):
                names = list(raw[0])
                cases = [dict(item) for item in raw]
                notes.append(f"the cases of {path.name} are used through {var}[...]: read the keys as parameters")
            else:
                names = (
                    _fields_from_comment(text, getattr(it, "lineno", loop.lineno)) if isinstance(it, ast.Name) else None
                )
                if names is None or any(len(names) != len(item) for item in raw):
                    return (
                        None,
                        f"{path.name}: the loop variable {var} is used whole; the importer cannot name "
                        "the values of each case",
                    )
                cases = [dict(zip(names, item)) for item in raw]
        else:
            return None, f"{path.name}: the loop target at line {loop.lineno} is not a tuple of names"
        # int values are parameters; a value that is the same in every case is a constant
        for n in names or []:
            vals = [c.get(n) for c in cases]
            if all(type(v) is int for v in vals):
                fields.append(n)
            elif len({repr(v) for v in vals}) == 1:
                values[n] = vals[0]
            else:
                values[n] = vals[0]
                notes.append(
                    f"{n} takes the values {vals} across the cases of {path.name}, not integers: the "
                    f"importer used the first ({vals[0]!r}); decide how the task covers the others"
                )
        cases = [{k: c[k] for k in fields} for c in cases]
    stmts = _flatten(fn.body, loop)
    kinds: dict[str, str] = {}
    for n, v in values.items():
        if type(v) is int:
            kinds[n] = f"int:{v}"
    for f in fields:
        kinds[f] = f"int:{f}"
    tensors: dict[str, HTensor] = {}
    call_stmt = next(s for s in stmts if any(c is call for c in ast.walk(s)))

    def int_text(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return str(node.value)
        if isinstance(node, ast.Name) and kinds.get(node.id, "").startswith("int:"):
            return kinds[node.id][4:]
        if isinstance(node, ast.BinOp):
            a, b = int_text(node.left), int_text(node.right)
            ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
            if a is not None and b is not None and type(node.op) in ops:
                def wrap(t: str) -> str:
                    return t if re.fullmatch(r"\w+", t) else f"({t})"

                return f"{wrap(a)} {ops[type(node.op)]} {wrap(b)}"
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "shape"
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id in tensors
        ):
            t, i = tensors[node.value.value.id], _number(node.slice)
            if t.shape is not None and i is not None:
                return str(t.shape[int(i)])
        if (
            isinstance(node, ast.Call)
            and _call_name(node) == "size"
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in tensors
            and node.args
        ):
            t, i = tensors[node.func.value.id], _number(node.args[0])
            if t.shape is not None and i is not None:
                return str(t.shape[int(i)])
        return None

    def dtype_of(node: ast.AST | None) -> str | None:
        if node is None:
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
            return (
                {"float": "float32", "half": "float16", "long": "int64", "int": "int32"}.get(node.attr, node.attr)
                if node.attr in DTYPE_BYTES or node.attr in ("float", "half", "long", "int")
                else None
            )
        if isinstance(node, ast.Name) and kinds.get(node.id, "").startswith("dtype:"):
            return kinds[node.id][6:]
        return None

    def tensor_of(name: str, expr: ast.expr) -> HTensor | None:
        node, dtype = expr, None
        while (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in (PASS_METHODS | set(DTYPE_METHODS))
        ):
            if node.func.attr in DTYPE_METHODS and dtype is None:
                dtype = DTYPE_METHODS[node.func.attr]
            elif node.func.attr == "to" and dtype is None:
                dtype = dtype_of(
                    node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "dtype"), None)
                )
            node = node.func.value
        while isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.Div)):
            node = node.left if _number(node.right) is not None else node.right
        if not (isinstance(node, ast.Call) and _call_name(node) in TENSOR_MAKERS):
            return None
        maker = _call_name(node)
        kw = {k.arg: k.value for k in node.keywords}
        dtype = dtype or dtype_of(kw.get("dtype"))
        shape: list | None
        if maker.endswith("_like"):
            src = tensors.get(node.args[0].id) if node.args and isinstance(node.args[0], ast.Name) else None
            if src is None:
                return None
            shape, dtype = src.shape, dtype or src.dtype
        else:
            args = list(node.args)
            if maker == "randint":
                args = args[2:] if len(args) >= 3 else args[1:]
            elif maker == "full":
                args = args[:1]
            size = kw.get("size")
            if size is not None:
                args = [size]
            if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
                args = list(args[0].elts)
            dims = [int_text(a) for a in args]
            shape = None if any(d is None for d in dims) else [int(d) if re.fullmatch(r"-?\d+", d) else d for d in dims]
            dtype = dtype or ("int64" if maker in ("randint", "arange", "randperm") else "float32")
        init, note = init_from_expr(expr, set(fields))
        if maker == "randint" and "high" in init and isinstance(init["high"], str):
            init["high"] = int_text(ast.parse(init["high"], mode="eval").body) or init["high"]
        fill = {"zeros": 0.0, "zeros_like": 0.0, "ones": 1.0, "ones_like": 1.0}.get(maker)
        if maker in ("full", "full_like") and len(node.args) > 1:
            fill = _number(node.args[1])
        return HTensor(name, dtype or "float32", shape, init, note, maker, fill)

    for s in stmts:
        if s is call_stmt:
            break
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            name, value = s.targets[0].id, s.value
            if dtype_of(value):
                kinds[name] = f"dtype:{dtype_of(value)}"
            elif (
                isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and value.value.split(":")[0] in ("cuda", "cpu", "hip", "xpu")
            ):
                kinds[name] = "device"
            elif isinstance(value, ast.Call) and _dotted(value.func) == "torch.device":
                kinds[name] = "device"
            elif int_text(value) is not None:
                kinds[name] = f"int:{int_text(value)}"
            else:
                t = tensor_of(name, value)
                if t is not None:
                    tensors[name] = t
    results: list[str] = []
    if isinstance(call_stmt, ast.Assign):
        target = call_stmt.targets[0]
        results = (
            [target.id]
            if isinstance(target, ast.Name)
            else [e.id for e in target.elts if isinstance(e, ast.Name)]
            if isinstance(target, ast.Tuple)
            else []
        )
    passed = {a.id for a in [*call.args, *(k.value for k in call.keywords)] if isinstance(a, ast.Name)}
    after = stmts[stmts.index(call_stmt) + 1 :]
    compared: list[tuple[str, ast.expr, ast.stmt]] = []

    def kernel_side(node: ast.AST) -> str | None:
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRAPPERS:
            node = node.func.value
        if isinstance(node, ast.Name) and (node.id in results or node.id in passed):
            return node.id
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in results
            and len(results) == 1
            and _number(node.slice) is not None
        ):
            return f"{node.value.id}[{int(_number(node.slice))}]"
        return None

    for s in after:
        for n in ast.walk(s):
            if isinstance(n, ast.Call) and _call_name(n) in COMPARE_FUNCS and len(n.args) >= 2:
                a, b = n.args[0], n.args[1]
                ka, kb = kernel_side(a), kernel_side(b)
                if ka and not kb:
                    compared.append((ka, b, s))
                elif kb and not ka:
                    compared.append((kb, a, s))
    seen_keys: set[str] = set()
    compared = [c for c in compared if not (c[0] in seen_keys or seen_keys.add(c[0]))]
    if not compared:
        return None, f"{path.name}: the comparison after the kernel call does not name its result"
    return Harness(
        path,
        text,
        tree,
        fields,
        cases,
        tensors,
        call,
        call_stmt,
        _call_name(call),
        results,
        compared,
        stmts,
        values,
        kinds,
        notes,
        fn.name,
    ), ""


def _reference_from_harness(h: Harness, inputs: list[str], first_float: dict[str, str]) -> tuple[str | None, str]:
    """reference() from the statements the comparison's other side needs, or (None, why not)."""
    order = {id(s): i for i, s in enumerate(h.stmts)}
    exprs = [e for _, e, _ in h.compared]
    need = _free_names(exprs)
    chosen: list[ast.stmt] = []
    stop = set(inputs) | set(h.fields)
    prelude: list[str] = []
    module_names = {s.name for s in h.tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
    bound = _bound_by_imports(_imports(h.tree))
    last = max(order[id(s)] for _, _, s in h.compared)
    done: set[str] = set()
    todo = list(need)
    while todo:
        n = todo.pop()
        if n in done or n in stop:
            continue
        done.add(n)
        kind = h.kinds.get(n, "")
        if kind.startswith("dtype:"):
            src = first_float.get(kind[6:])
            prelude.append(f"{n} = {src}.dtype" if src else f"{n} = torch.{kind[6:]}")
            continue
        if kind == "device":
            prelude.append(f"{n} = {inputs[0]}.device" if inputs else f"{n} = 'cpu'")
            continue
        if n in h.tensors and n not in inputs:
            return None, f"the reference in {h.path.name} uses {n}, a tensor the kernel is not given"
        assigns = [
            s
            for s in h.stmts
            if order[id(s)] < last
            and s is not h.call_stmt
            and isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and n
            in {
                t.id
                for tg in (s.targets if isinstance(s, ast.Assign) else [s.target])
                for t in ast.walk(tg)
                if isinstance(t, ast.Name)
            }
        ]
        if assigns:
            for s in assigns:
                if s not in chosen:
                    chosen.append(s)
                    todo += list(_free_names([s.value] if not isinstance(s, ast.AnnAssign) else [s.value]))
            continue
        if n in h.consts and isinstance(h.consts[n], (int, float, str, bool, tuple, list)):
            prelude.append(f"{n} = {h.consts[n]!r}")
            continue
        if n in module_names or n in bound or n in dir(__builtins__) or n in ("torch", "F", "math"):
            continue
        return None, f"the reference in {h.path.name} uses {n}, which the importer cannot trace to the inputs"
    for s in chosen:
        for sub in ast.walk(s):
            if isinstance(sub, ast.Call) and _call_name(sub) == h.launcher:
                return None, f"the other side of the comparison in {h.path.name} calls the kernel's file too"
    chosen.sort(key=lambda s: order[id(s)])
    helpers = _module_defs(h.tree, _free_names(chosen + exprs), {h.function, *h.consts})
    for s in helpers:
        for sub in ast.walk(s):
            if isinstance(sub, ast.Call) and _call_name(sub) == h.launcher:
                return None, f"{getattr(s, 'name', 'a helper')} in {h.path.name} calls the kernel's file"
    ret = ", ".join(ast.unparse(e) for e in exprs)
    imports = [
        i
        for i in _imports(h.tree)
        if not re.match(
            r"(import|from) (sys|os|json|argparse|importlib|time|"
            r"subprocess|pathlib)\b",
            i,
        )
    ]
    if "torch" not in _bound_by_imports(imports):
        imports.insert(0, "import torch")
    lines = [*imports, ""]
    if helpers:
        lines += ["", _join_statements(h.text, helpers), ""]
    lines += [
        "",
        "def reference(" + ", ".join([*inputs, *h.fields]) + "):",
        f'    """What {h.path.name} ({h.function}) compares the kernel\'s result with (written by `arena tasks '
        'import`; read it)."""',
    ]
    lines += [f"    {p}" for p in sorted(set(prelude))]
    lines += [f"    {ln}" for s in chosen for ln in ast.unparse(s).splitlines()]
    lines.append(f"    return {ret}")
    return "\n".join(lines) + "\n", ""


def _reference_stub(inputs: list[str], scalars: list[str], why: str) -> str:
    return (
        "import torch\n\n\n"
        f"def reference({', '.join([*inputs, *scalars])}):\n"
        f'    """TODO(import): write the reference. {why}."""\n'
        '    raise NotImplementedError("reference.py of an imported task: not written yet")\n'
    )


# -- HIP sources --------------------------------------------------------------------------------


TORCH_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](torch|ATen|c10|pybind11|THC)/[^\n]*$", re.M)
TORCH_WORDS = re.compile(r"\b(torch::|at::|c10::|py::|TORCH_CHECK|AT_DISPATCH|PYBIND11_MODULE|TORCH_LIBRARY)")


def _cpp_blocks(text: str) -> list[tuple[int, int, int]]:
    """Top-level ``{ ... }`` blocks as (start of the declaration, '{', end after '}'),
    comments and strings skipped; the declaration starts after the previous block, ';' or
    preprocessor line."""
    out: list[tuple[int, int, int]] = []
    i, n, depth, decl, open_at = 0, len(text), 0, 0, 0
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "#" and depth == 0 and (i == 0 or text[text.rfind("\n", 0, i) + 1 : i].strip() == ""):
            j = i
            while True:
                j = text.find("\n", j)
                if j < 0 or text[j - 1] != "\\":
                    break
                j += 1
            i = n if j < 0 else j
            decl = i
            continue
        if c == "{":
            if depth == 0:
                open_at = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                end = i + 1
                if text[end : end + 1] == ";":
                    end += 1
                out.append((decl, open_at, end))
                decl = end
        elif c == ";" and depth == 0:
            decl = i + 1
        i += 1
    return out


def split_torch_extension(text: str) -> tuple[str, list[str], list[tuple[str, str]]]:
    """(the source with its PyTorch host code cut out, the cut pieces, the Python names the
    extension exports as (python name, C++ function))."""
    exports = re.findall(r"\.def\(\s*\"(\w+)\"\s*,\s*&?\s*([\w:]+)", text)
    cut: list[tuple[int, int]] = []
    for decl, brace, end in _cpp_blocks(text):
        header = text[decl:brace]
        head = re.sub(r"//[^\n]*|/\*.*?\*/", "", header, flags=re.S)
        if re.search(r"\b(namespace|struct|class|union|enum)\b", head) and not TORCH_WORDS.search(head):
            continue
        if (
            TORCH_WORDS.search(head)
            or re.search(r"PYBIND11_MODULE|TORCH_LIBRARY", head)
            or ("__global__" not in head and "__device__" not in head and TORCH_WORDS.search(text[brace:end]))
        ):
            cut.append((decl, end))
    pieces = [text[a:b].strip("\n") for a, b in cut]
    kept, pos = [], 0
    for a, b in cut:
        kept.append(text[pos:a])
        pos = b
    kept.append(text[pos:])
    body = "".join(kept)
    body = TORCH_INCLUDE.sub(lambda m: f"// (import) left out: {m.group(0).strip()}", body)
    return re.sub(r"\n{3,}", "\n\n", body).rstrip() + "\n", pieces, exports


def _cpp_params(header: str, fn: str) -> list[tuple[str, str]] | None:
    m = re.search(rf"\b{re.escape(fn.split('::')[-1])}\s*\((.*)\)\s*$", header.strip(), re.S)
    if not m:
        return None
    params, depth, cur = [], 0, ""
    for ch in m.group(1):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            params.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        params.append(cur)
    out = []
    for p in params:
        p = re.sub(r"=.*$", "", p).strip()
        m2 = re.match(r"(.*?)([A-Za-z_]\w*)$", p, re.S)
        if m2:
            out.append((" ".join(m2.group(1).split()), m2.group(2)))
    return out


def _hip_entry(entry: str, inputs: list[dict], outputs: list[dict], scalars: list[dict], body: list[str]) -> str:
    from arena.taskdef.skeleton import HIP_TYPES, SCALAR_TYPES

    params = [f"const {HIP_TYPES[i['dtype']]}* {i['name']}" for i in inputs]
    params += [f"{HIP_TYPES[o['dtype']]}* {o['name']}" for o in outputs]
    params += [f"{SCALAR_TYPES[s['type']]} {s['name']}" for s in scalars] + ["hipStream_t stream"]
    joined = ",\n    ".join(params)
    return f'extern "C" int {entry}(\n    {joined}) {{\n' + "".join(f"    {b}\n" for b in body) + "}\n"


CPP_DTYPES = {
    "float": "float32",
    "__half": "float16",
    "half": "float16",
    "__hip_bfloat16": "bfloat16",
    "hip_bfloat16": "bfloat16",
    "int8_t": "int8",
    "uint8_t": "uint8",
    "int16_t": "int16",
    "int32_t": "int32",
    "int": "int32",
    "int64_t": "int64",
    "long": "int64",
    "bool": "bool",
}
CPP_INTS = (
    "int",
    "int32_t",
    "int64_t",
    "long",
    "long long",
    "size_t",
    "unsigned",
    "unsigned int",
    "uint32_t",
    "uint64_t",
)


def host_launchers(text: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Host functions of a HIP source that take device pointers: (return type, name, params)."""
    out = []
    for decl, brace, _ in _cpp_blocks(text):
        head = re.sub(r"//[^\n]*|/\*.*?\*/", "", text[decl:brace], flags=re.S).strip()
        if re.search(r"__global__|__device__|\b(namespace|struct|class|union|enum|template)\b", head):
            continue
        m = re.search(r"([\w:<>\s\*&]*?)\b([A-Za-z_]\w*)\s*\((.*)\)\s*$", head, re.S)
        if not m:
            continue
        params = _cpp_params(head, m.group(2)) or []
        if any("*" in t for t, _ in params):
            ret = " ".join(m.group(1).replace('extern "C"', "").split())
            out.append((ret, m.group(2), params))
    return out


def _base_type(t: str) -> str:
    return " ".join(t.replace("const", " ").replace("*", " ").replace("&", " ").replace("__restrict__", " ").split())


def launcher_signature(params: list[tuple[str, str]]) -> tuple[list[dict], list[dict], list[dict]]:
    """A signature read off a launcher's parameters: const pointers are inputs, other pointers
    outputs, integers config parameters, floats scalars; shapes unknown (TODO)."""
    inputs, outputs, scalars = [], [], []
    for t, n in params:
        base = _base_type(t)
        if "*" in t:
            spec = {"name": n, "dtype": CPP_DTYPES.get(base, "float32"), "shape": [f"TODO_{n}_shape"]}
            (inputs if re.search(r"\bconst\b", t) else outputs).append(spec)
        elif base in CPP_INTS:
            scalars.append({"name": n, "type": "int64"})
        elif base in ("float", "double"):
            scalars.append({"name": n, "type": "float32", "value": "TODO"})
    return inputs, outputs, scalars


def thin_hip_entry(
    launcher: tuple[str, str, list[tuple[str, str]]], inputs: list[dict], outputs: list[dict], scalars: list[dict]
) -> tuple[list[str] | None, str]:
    """The body of an entry that calls a plain HIP launcher: pointers matched to the
    signature's tensors by constness and order, numbers by name, then by order; (None, why)
    when the counts do not agree."""
    ret, name, params = launcher
    ins = [i["name"] for i in inputs]
    outs = [o["name"] for o in outputs]
    nums = [s for s in scalars]
    args, stream = [], False
    for t, n in params:
        base = _base_type(t)
        if base == "hipStream_t":
            args.append("stream")
            stream = True
        elif "*" in t:
            pool = ins if re.search(r"\bconst\b", t) else outs
            if not pool:
                return None, f"{name}'s pointer {n} has no tensor of the signature left to take"
            args.append(f"({t.replace('__restrict__', '').strip()}){pool.pop(0)}")
        else:
            match = next((s for s in nums if s["name"] == n), None) or (nums[0] if nums else None)
            if match is None:
                return None, f"{name}'s parameter {n} has no scalar of the signature to take"
            nums.remove(match)
            args.append(f"({t.strip()}){match['name']}")
    if ins or outs:
        return None, f"{name} takes fewer pointers than the signature has tensors ({', '.join(ins + outs)} left)"
    call = f"{name}({', '.join(args)})"
    body = (
        [f"hipError_t err = (hipError_t){call};", "if (err != hipSuccess) return (int)err;"]
        if ret in ("int", "hipError_t")
        else [f"{call};"]
    )
    body.append("return (int)hipGetLastError();")
    note = (
        ""
        if stream
        else f"{name} takes no stream: its launches go to the default stream, not the harness's "
        "`stream`; add a stream parameter to it"
    )
    return body, note


# -- the importer -----------------------------------------------------------------------------


def import_aka(path: Path | str, root: Path | str | None = None, task_id: str | None = None) -> ImportResult:
    """An AgentKernelArena-style task folder -> a triton2triton or hip2hip task folder under
    ``root`` (default: the repository's tasks/), the kernel kept as written."""
    aka = AkaFolder.read(Path(path))
    category, name = _resolve_id(task_id, aka.folder.name, ("triton2triton", "hip2hip"))
    if category is not None and category != aka.category:
        raise ArenaError(f"the folder is a {aka.category} task; --id names {category}", key="--id")
    source = aka.sources[0]
    decisions: list[str] = []
    if len(aka.sources) > 1:
        decisions.append(
            "the task YAML names several source files ("
            + ", ".join(str(s.relative_to(aka.folder)) for s in aka.sources)
            + f"): only {source.relative_to(aka.folder)} was kept; a HIP task may ship headers beside its "
            "kernel (copy them), a Triton task is one file"
        )
    if aka.category == "triton2triton":
        d, check = _aka_triton(aka, source, name, decisions)
    else:
        d, check = _aka_hip(aka, source, name, decisions)
    d.origin = f"the AgentKernelArena-style folder {aka.folder.name} ({aka.config_path.name})"
    for w in aka.workloads:
        d.decisions.append(
            f"{w.relative_to(aka.folder)} describes workloads the importer does not read: compare "
            "its shapes with the configs"
        )
    return _finish(d, Path(root) if root else None, aka.folder, check)


def _launchers_py(tree: ast.Module) -> tuple[list[str], list[str]]:
    """(jit kernels, launcher functions) defined at the top of a Triton file."""
    jit, plain = [], []
    for s in tree.body:
        if isinstance(s, ast.FunctionDef):
            decorated = any(
                "jit" in _dotted(d) or "autotune" in _dotted(d) or "heuristics" in _dotted(d) for d in s.decorator_list
            )
            (jit if decorated else plain).append(s.name)
    return jit, plain


def _harness_signature(h: Harness, decisions: list[str]) -> tuple[list[dict], list[dict], list[dict], dict]:
    """Inputs, outputs and scalars from what the harness passes to the kernel and compares;
    ``roles`` maps each output to how the entry fills it."""
    passed = [a.id for a in [*h.call.args, *(k.value for k in h.call.keywords)] if isinstance(a, ast.Name)]
    compared_names = [k for k, _, _ in h.compared]
    inputs, outputs = [], []
    roles: dict[str, Any] = {}
    inout_ok = _supports("inout")
    for n in passed:
        t = h.tensors.get(n)
        if t is None:
            continue
        spec: dict[str, Any] = {
            "name": n,
            "dtype": t.dtype,
            "shape": t.shape if t.shape is not None else [f"TODO_{n}_shape"],
        }
        if t.shape is None:
            decisions.append(
                f"the shape of {n} could not be read from {h.path.name}: write it in task.yaml (TODO_{n}_shape)"
            )
        if n in compared_names and t.maker in (
            "empty",
            "empty_like",
            "zeros",
            "zeros_like",
            "ones",
            "ones_like",
            "full",
            "full_like",
        ):
            outputs.append(spec)
            roles[n] = ("arg", t.fill)
            continue
        if t.init != {"kind": "normal"}:
            spec["init"] = t.init
        if t.note:
            decisions.append(f"input {n}: {t.note}")
        if n in compared_names:
            if inout_ok:
                spec["inout"] = True
            decisions.append(
                f"{n} is given to the kernel and compared after the call: the kernel updates it in "
                "place"
                + (
                    "; it is an inout input, and the reference must update its copy in place"
                    if inout_ok
                    else "; the signature cannot say so here: decide how"
                )
            )
        inputs.append(spec)
    taken = {s["name"] for s in inputs + outputs} | set(h.fields)
    for i, key in enumerate(k for k in compared_names if k not in roles and k not in {s["name"] for s in inputs}):
        oname = key if re.fullmatch(r"[A-Za-z_]\w*", key) and key not in taken else f"out{i}"
        while oname in taken:
            oname += "_"
        taken.add(oname)
        outputs.append({"name": oname, "dtype": "float32", "shape": None, "_key": key})
        roles[oname] = ("result", key)
    scalars = [{"name": f, "type": "int64"} for f in h.fields]
    return inputs, outputs, scalars, roles


def _entry_call(
    h: Harness,
    roles: dict,
    entry: str,
    inputs: list[dict],
    outputs: list[dict],
    scalars: list[dict],
    decisions: list[str],
) -> tuple[list[str], bool]:
    """The entry's body: the launcher called as the harness calls it, its result copied into
    the outputs (or written by it into output arguments); (lines, complete)."""
    sig = {s["name"] for s in inputs + outputs + scalars}
    prelude, unknown = [], []
    first = inputs[0]["name"] if inputs else outputs[0]["name"] if outputs else None
    for n in sorted(_free_names([h.call])):
        if n in sig or n == h.launcher:
            continue
        kind = h.kinds.get(n, "")
        if kind.startswith("dtype:"):
            src = next((i["name"] for i in inputs if i["dtype"] == kind[6:]), None)
            prelude.append(f"{n} = {src}.dtype" if src else f"{n} = torch.{kind[6:]}")
        elif kind == "device" and first:
            prelude.append(f"{n} = {first}.device")
        elif kind.startswith("int:"):
            prelude.append(f"{n} = {kind[4:]}")
        elif n in h.consts and isinstance(h.consts[n], (int, float, str, bool, tuple, list)):
            prelude.append(f"{n} = {h.consts[n]!r}")
        elif (
            isinstance(h.call.func, ast.Attribute)
            and isinstance(h.call.func.value, ast.Name)
            and n == h.call.func.value.id
        ):
            continue
        else:
            unknown.append(n)
    call = copy.deepcopy(h.call)
    call.func = ast.Name(h.launcher, ast.Load())
    lines = list(prelude)
    for o in outputs:
        role = roles.get(o["name"])
        if role and role[0] == "arg" and role[1] is not None:
            lines.append(f"{o['name']}.zero_()" if role[1] == 0 else f"{o['name']}.fill_({role[1]!r})")
            decisions.append(
                f"{h.path.name} hands the kernel {o['name']} filled with {role[1]!r}; the harness hands "
                "outputs poisoned, so the entry fills it first: keep that only if the kernel needs it"
            )
    results = [(o["name"], roles[o["name"]][1]) for o in outputs if roles.get(o["name"], ("",))[0] == "result"]
    text = ast.unparse(call)
    if results:
        lines.append(f"result = {text}")
        for oname, key in results:
            if "[" in key:
                lines.append(f"{oname}.copy_(result{key[key.index('[') :]})")
            elif len(h.results) > 1:
                lines.append(f"{oname}.copy_(result[{h.results.index(key)}])")
            else:
                lines.append(f"{oname}.copy_(result)")
        decisions.append(
            f"the kernel's launcher {h.launcher} returns a tensor it allocates; the entry copies it "
            f"into the harness's output ({', '.join(o for o, _ in results)}): a candidate may write "
            "into the output directly; decide whether the starting kernel should too"
        )
    else:
        lines.append(text)
    if unknown:
        decisions.append(
            f"the kernel call in {h.path.name} uses {', '.join(unknown)}, which the importer cannot "
            "trace: the entry raises until you write its call"
        )
        return [
            f"# TODO(import): the call in {h.path.name} was: {ast.unparse(h.call)}",
            "raise NotImplementedError('entry of an imported task: not written yet')",
        ], False
    return lines, True


def _formula_probe(inputs: list[dict], fields: list[str], ref_fn: Callable | None):
    """A probe for the Fitter: the reference run on meta tensors shaped by the formulas."""
    from torch.utils.flop_counter import FlopCounterMode

    dtypes = {v: k for k, v in DTYPE_NAMES.items()}

    def probe(params: dict) -> Any:
        env = dict(params)
        ins = []
        for spec in inputs:
            shape = [int(formula.evaluate(x, env)) for x in spec["shape"]]
            if any(x < 0 for x in shape):
                raise ValueError("negative dimension")
            ins.append(torch.empty(shape, dtype=dtypes[spec["dtype"]], device="meta"))
        if ref_fn is None:
            return {"outputs": [], "flops": 0}
        with FlopCounterMode(display=False) as counter:
            out = ref_fn(*ins, *[params[f] for f in fields])
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        return {"outputs": outs, "flops": counter.get_total_flops()}

    return probe


def _load_reference_text(text: str, name: str) -> Callable | None:
    ns: dict[str, Any] = {"__name__": f"arena_import_reference_{name}"}
    try:
        exec(compile(text, f"<reference of {name}>", "exec"), ns)
    except Exception:  # noqa: BLE001 - the reference is checked after writing
        return None
    return ns.get("reference")


def _harness_task(aka: AkaFolder, h: Harness, name: str, decisions: list[str], stub_reason: str = ""):
    """Signature, reference, configs and roofline from a read harness (both categories)."""
    inputs, outputs, scalars, roles = _harness_signature(h, decisions)
    first_float: dict[str, str] = {}
    for i in inputs:
        first_float.setdefault(i["dtype"], i["name"])
    reference, why = _reference_from_harness(h, [i["name"] for i in inputs], first_float)
    if reference is None:
        decisions.append(f"reference.py is a stub: {why}; write the reference")
        reference = _reference_stub([i["name"] for i in inputs], h.fields, why)
    else:
        decisions.append(
            f"reference.py is what {h.path.name} ({h.function}) compares with, copied out of it: read "
            "it (it is called with upcast copies of the inputs: compute in the dtype given)"
        )
    ref_fn = _load_reference_text(reference, name) if "NotImplementedError" not in reference else None
    base_case = max(h.cases, key=lambda c: math.prod(c.values())) if h.cases else {}
    fitter = Fitter(base_case, _formula_probe(inputs, h.fields, ref_fn))
    run = fitter.run()
    if any(o["shape"] is None for o in outputs):
        for o in (o for o in outputs if o["shape"] is None):
            idx = [key for key, _, _ in h.compared].index(o["_key"])
            if run is not None and ref_fn is not None and idx < len(run["outputs"]):
                t = run["outputs"][idx]
                o["dtype"] = DTYPE_NAMES.get(t.dtype, "float32")
                same = next(
                    (
                        i["shape"]
                        for i in inputs
                        if i["shape"]
                        and len(i["shape"]) == t.dim()
                        and all(
                            str(fitter.int_formula(lambda r, d=d, idx=idx: r["outputs"][idx].shape[d])) == str(x)
                            for d, x in enumerate(i["shape"])
                        )
                    ),
                    None,
                )
                o["shape"] = same or [
                    fitter.int_formula(
                        lambda r, d=d, idx=idx: r["outputs"][idx].shape[d], f"dimension {d} of output {o['name']}"
                    )
                    for d in range(t.dim())
                ]
            else:
                o["shape"] = [f"TODO_{o['name']}_shape"]
                decisions.append(
                    f"the shape of output {o['name']} is not known (no reference to run): write it in task.yaml"
                )
    for o in outputs:
        o.pop("_key", None)
    decisions += fitter.inexact
    flops: str | int | None = None
    if ref_fn is not None and run is not None:
        flops, ok = fitter.number_formula(lambda r: r["flops"])
        if not ok:
            decisions.append(f"roofline.flops is the count of the largest case ({flops}): write it as a formula")

    def valid(cfg: dict) -> bool:
        try:
            return fitter.probe({**base_case, **cfg}) is not None
        except Exception:  # noqa: BLE001
            return False

    tensors = inputs + [{**o, "_output": True} for o in outputs]

    def size(cfg: dict) -> int:
        try:
            return _elements(tensors, cfg)
        except (formula.FormulaError, ValueError, TypeError):
            return 10**18

    vary = [f for f in h.fields if base_case[f] >= MIN_VARIED]
    _, held, smoke, notes = draft_configs(base_case, vary, valid, size, "largest")
    seen = [{"name": f"case{i}", **c} for i, c in enumerate(h.cases)] or [{"name": "case0"}]
    while len(seen) < 3 and h.cases:
        seen.append(
            {
                "name": f"draft-{len(seen)}",
                **{k: v * 2 for k, v in h.cases[-1].items()},
                "#": "DRAFT: the last case doubled",
            }
        )
    smoke_case = min(h.cases, key=lambda c: size(c)) if h.cases else {}
    if h.cases and size(smoke_case) <= size({k: v for k, v in smoke[0].items() if k not in ("name", "#")}):
        smoke = [{"name": "smoke", **smoke_case, "#": f"the smallest case of {h.path.name}"}]
    decisions += notes
    decisions += h.notes
    if h.cases:
        decisions.insert(
            0,
            f"configs/seen.yaml holds the {len(h.cases)} cases of {h.path.name} (test shapes, often "
            "far below the timing window of >= 20 us on an H100): replace them with production shapes; "
            "heldout.yaml holds drafts",
        )
    roofline, rnotes = roofline_draft(tensors, flops, base_case)
    decisions += rnotes
    space = shape_space_draft(base_case, vary)
    decisions.insert(
        1,
        "shape_space is a draft ([value / 8, 4 * value] around the largest case): add the constraints the kernel needs",
    )
    return inputs, outputs, scalars, roles, reference, seen, held, smoke, roofline, space, ref_fn


def _aka_triton(aka: AkaFolder, source: Path, name: str, decisions: list[str]):
    text, tree = _parse(source)
    jit, plain = _launchers_py(tree)
    if not jit:
        decisions.append(f"{source.name} defines no @triton.jit function the importer could see")
    h, why = None, "the folder has no test script"
    for hp in aka.harnesses:
        h, why = read_harness(hp, set(plain))
        if h is not None:
            break
    entry = (
        name
        if name not in {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
        else f"{name}_entry"
    )
    if h is None:
        decisions.insert(
            0,
            f"the test script could not be read ({why}): the signature, the reference, the configs "
            "and the entry are stubs to write",
        )
        inputs = [{"name": "x", "dtype": "float32", "shape": ["TODO_x_shape"]}]
        outputs = [{"name": "out", "dtype": "float32", "shape": ["TODO_out_shape"]}]
        scalars: list[dict] = []
        reference = _reference_stub(["x"], [], why)
        body = [
            "# TODO(import): call the kernel's launcher with the task's tensors",
            "raise NotImplementedError('entry of an imported task: not written yet')",
        ]
        seen, held, smoke = [{"name": "TODO"}], [], [{"name": "TODO"}]
        roofline = {"bound": "memory", "flops": "0", "bytes": "0"}
        space: dict = {}
        launcher = "?"
    else:
        (inputs, outputs, scalars, roles, reference, seen, held, smoke, roofline, space, _) = _harness_task(
            aka, h, name, decisions
        )
        body, complete = _entry_call(h, roles, entry, inputs, outputs, scalars, decisions)
        launcher = h.launcher
    params = ", ".join(s["name"] for s in inputs + outputs + scalars)
    entry_text = "\n".join(
        [
            "",
            "",
            f"# ---- entry added by `arena tasks import aka`: the task's ABI around {launcher}, called as the folder's "
            "test calls it ----",
            f"def {entry}({params}):",
            '    """Inputs, outputs, scalars in signature order; writes the outputs."""',
            *[f"    {ln}" for ln in body],
            "",
        ]
    )
    baseline = text.rstrip("\n") + "\n" + entry_text
    decisions.append(
        f"baseline.py is {source.name} as written, with the entry {entry} added at its end: check "
        "that the starting kernel is correct on every config and leaves headroom"
    )
    d = Draft(
        category="triton2triton",
        name=name,
        title=_aka_title(aka, name),
        description=_aka_description(aka, source),
        entry=entry,
        inputs=inputs,
        outputs=outputs,
        scalars=scalars,
        roofline=roofline,
        shape_space=space,
        reference=reference,
        tags=["imported", "agentkernelarena"],
        difficulty=1,
        seen=seen,
        heldout=held,
        smoke=smoke,
        files={"baseline.py": baseline},
        decisions=decisions,
        notes=_AKA_NOTES,
    )
    return d, lambda folder: _aka_self_check(folder)


_AKA_NOTES = {
    "title": "say what the task is",
    "description": "what the kernel computes, precisely",
    "tags": "families of the coverage table",
    "difficulty": "1 single op, 2 fused, 3 model block",
    "roofline": "bytes: every tensor once; flops: PyTorch's counter on the reference",
    "shape_space": "ranges around the test's shapes; add constraints",
}


def _aka_title(aka: AkaFolder, name: str) -> str:
    first = aka.instructions.splitlines()[0].strip().rstrip(".") if aka.instructions else ""
    return first[:100] if len(first) >= 3 else f"{name} (imported)"


def _aka_description(aka: AkaFolder, source: Path) -> str:
    return (
        (aka.instructions + "\n\n" if aka.instructions else "")
        + f"Imported from {aka.folder.name}: the kernel of {source.name} as written, with an entry for this ABI.\n"
        "TODO: say what the kernel computes, in what precision, and where the work is.\n"
    )


def _aka_self_check(folder: Path) -> tuple[list[str], list[str]]:
    """The reference on the smoke config: it runs and is not degenerate."""
    from arena.check.degeneracy import load_reference, reference_problems
    from arena.taskdef.loader import load_task

    try:
        task = load_task(folder)
        if "NotImplementedError" in task.reference_path.read_text():
            return [], []
        config = task.configs("smoke")[0]
        bad = reference_problems(task, config, "cpu", load_reference(task))
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the folder is written
        return [], [
            f"the reference does not run on the smoke config ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}): correct reference.py"
        ]
    return ["the reference runs on the smoke config on the CPU"], [
        f"on the smoke config: {b} (the degeneracy rules of CONTRIBUTING.md)" for b in bad
    ]


def _aka_hip(aka: AkaFolder, source: Path, name: str, decisions: list[str]):
    text = source.read_text(errors="replace")
    torch_ext = bool(TORCH_INCLUDE.search(text) or TORCH_WORDS.search(text))
    exports: list[tuple[str, str]] = []
    pieces: list[str] = []
    kept = text
    if torch_ext:
        kept, pieces, exports = split_torch_extension(text)
    launchers = {p for p, _ in exports} | set(aka.kernels)
    check = None
    module_task = None
    for mp in aka.modules:
        try:
            module_task = build_module_task(ModuleProblem(mp, any_module=True), name, "hip2hip")
            decisions.append(
                f"the signature, reference and configs come from the PyTorch module "
                f"{mp.relative_to(aka.folder)}; the reference is its forward"
            )
            break
        except ImportStop as exc:
            decisions.append(f"{mp.relative_to(aka.folder)} could not be read as a module problem ({exc.detail})")
    entry = name
    if module_task is not None:
        d = module_task.draft
        check = module_task.self_check
        inputs, outputs, scalars = d.inputs, d.outputs, d.scalars
        decisions += d.decisions
        reference, seen, held, smoke, roofline, space = (
            d.reference,
            d.seen,
            d.heldout,
            d.smoke,
            d.roofline,
            d.shape_space,
        )
    else:
        h, why = None, "the folder has no test script"
        for hp in aka.harnesses:
            h, why = read_harness(hp, launchers)
            if h is not None:
                break
        if h is not None:
            (inputs, outputs, scalars, roles, reference, seen, held, smoke, roofline, space, _) = _harness_task(
                aka, h, name, decisions
            )
            check = _aka_self_check
        else:
            found = host_launchers(kept) if not torch_ext else []
            if found:
                inputs, outputs, scalars = launcher_signature(found[0][2])
                decisions.insert(
                    0,
                    f"neither a PyTorch module file nor a readable test script ({why}): the "
                    f"signature is read off {found[0][1]}'s parameters (const pointers inputs, other "
                    "pointers outputs); write the shapes (TODO_*), the float scalars' values, the "
                    "reference and the configs",
                )
            else:
                decisions.insert(
                    0,
                    f"neither a PyTorch module file nor a readable test script ({why}): the "
                    "signature, the reference and the configs are stubs to write",
                )
                inputs = [{"name": "x", "dtype": "float32", "shape": ["TODO_x_shape"]}]
                outputs = [{"name": "out", "dtype": "float32", "shape": ["TODO_out_shape"]}]
                scalars = []
            reference = _reference_stub(
                [i["name"] for i in inputs], [s["name"] for s in scalars if s["type"] != "float32"], why
            )
            seen, held, smoke = [{"name": "TODO"}], [], [{"name": "TODO"}]
            roofline, space = {"bound": "memory", "flops": "0", "bytes": "0"}, {}
    if re.search(rf"\b{re.escape(entry)}\s*\(", kept):
        entry = f"{name}_entry"
    launch_note = ""
    if torch_ext:
        cut_names = [m.group(1) for p in pieces for m in [re.search(r"(\w+)\s*\([^()]*\)\s*\{", p)] if m]
        launch_note = (
            f"the original launched its kernels from PyTorch host code ({', '.join(cut_names) or 'cut'}), "
            "kept as comments at the end of this file: launch them here on `stream`"
        )
        body = [f"// TODO(import): {launch_note}.", "return (int)hipErrorNotSupported;"]
        decisions.insert(
            0,
            f"baseline.hip keeps the device code of {source.name} as written; its PyTorch host code "
            f"({', '.join(cut_names)}) cannot be built here and is kept as comments: write the entry "
            f"{entry}'s launches (it returns hipErrorNotSupported until then)",
        )
        leftovers = sorted(set(TORCH_WORDS.findall(kept)))
        if leftovers:
            decisions.append(
                f"the kept device code still names PyTorch ({', '.join(leftovers)}): replace those types or macros"
            )
    else:
        found = host_launchers(kept)
        body, why_not = (
            (None, "it has no host function taking device pointers")
            if not found
            else thin_hip_entry(found[0], inputs, outputs, scalars)
        )
        if body is not None:
            decisions.insert(
                0,
                f"baseline.hip is {source.name} as written with an entry {entry} added that calls "
                f"{found[0][1]} (pointers matched by constness and order, numbers by name): check "
                "the matching",
            )
            if why_not:
                decisions.append(why_not)
        else:
            body = [
                f"// TODO(import): launch the kernels above on `stream` ({why_not}).",
                "return (int)hipErrorNotSupported;",
            ]
            decisions.insert(
                0,
                f"baseline.hip is {source.name} as written with an entry {entry} added: write its "
                f"launches ({why_not}; it returns hipErrorNotSupported until then)",
            )
    if exports:
        decisions.append(
            "the extension exported " + ", ".join(f"{p} ({c})" for p, c in exports) + f"; the task's entry is {entry}"
        )
    entry_text = _hip_entry(entry, [i for i in inputs], outputs, scalars, body)
    comments = "".join("\n// " + "\n// ".join(p.splitlines()) + "\n" for p in pieces)
    baseline = (
        kept.rstrip("\n")
        + "\n\n// ---- entry added by `arena tasks import aka`: the task's ABI ----\n"
        + entry_text
        + (("\n// ---- the original PyTorch host code, for reference (not built) ----" + comments) if pieces else "")
    )
    d = Draft(
        category="hip2hip",
        name=name,
        title=_aka_title(aka, name),
        description=_aka_description(aka, source),
        entry=entry,
        inputs=inputs,
        outputs=outputs,
        scalars=scalars,
        roofline=roofline,
        shape_space=space,
        reference=reference,
        tags=["imported", "agentkernelarena"],
        difficulty=1,
        seen=seen,
        heldout=held,
        smoke=smoke,
        files={"baseline.hip": baseline},
        decisions=decisions,
        notes=_AKA_NOTES,
    )
    return d, check

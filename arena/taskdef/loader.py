"""Load task folders into immutable dataclasses, validating them against the JSON Schemas.

``load_task`` raises ``ArenaError`` naming the file and key of the first problem;
``validate_task_dir`` returns every problem of a folder (the ``arena tasks validate`` view).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from arena.errors import ArenaError, ArenaErrors
from arena.taskdef import formula

CATEGORIES = ("hip2hip", "triton2triton", "torch2hip")
SPLITS = ("seen", "heldout", "smoke")
KERNEL_ROLES = ("baseline", "solution", "specialised")
SCHEMA_DIR = Path(__file__).parent / "schema"
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TASKS_DIR = REPO_ROOT / "tasks"

# Default tolerances by the dtype of the output compared (METHODOLOGY.md).
DEFAULT_TOLERANCE: dict[str, dict[str, float]] = {
    "float32": {"atol": 1e-4, "rtol": 1e-4, "norm": 1e-5},
    "float16": {"atol": 1e-2, "rtol": 1e-2, "norm": 1e-2},
    "bfloat16": {"atol": 1e-2, "rtol": 1e-2, "norm": 1e-2},
    "float8_e4m3fn": {"atol": 1e-1, "rtol": 1e-1, "norm": 1e-1},
    "float8_e5m2": {"atol": 1e-1, "rtol": 1e-1, "norm": 1e-1},
}
INTEGER_DTYPES = ("int8", "uint8", "int16", "int32", "int64", "bool")
MIN_SEEN, MIN_HELDOUT = 3, 4


@dataclass(frozen=True)
class InputSpec:
    """An input tensor. ``inout``: the kernel updates it in place, and its updated value is
    compared like an output. ``optional``: a config may leave it out (``has_<name>: false``);
    then the kernel and the reference get None (a null pointer in HIP). ``stride``: element
    strides, one formula per dimension (0 broadcasts), for an input given as a view that is
    not contiguous; None: contiguous."""

    name: str
    dtype: str
    shape: tuple[Any, ...]
    init: Mapping[str, Any]
    inout: bool = False
    optional: bool = False
    stride: tuple[Any, ...] | None = None
    tolerance: Mapping[str, float] | None = None    # an inout input's own (``Task.tolerance_of``)

    @property
    def presence(self) -> str:
        """The config parameter that says whether an optional input is given."""
        return presence_param(self.name)


@dataclass(frozen=True)
class OutputSpec:
    """An output tensor. ``tolerance``: its own atol/rtol/norm, over its dtype's (``Task.tolerance_of``)."""

    name: str
    dtype: str
    shape: tuple[Any, ...]
    tolerance: Mapping[str, float] | None = None


@dataclass(frozen=True)
class ScalarSpec:
    name: str
    type: str          # int64 | int32 | float32 | bool
    value: Any = None  # None: taken from the config


def presence_param(name: str) -> str:
    """The config parameter that gives (true, the default) or leaves out (false) optional input ``name``."""
    return f"has_{name}"


def storage_elements(shape: Iterable[int], stride: Iterable[int] | None) -> int:
    """Elements of the memory a tensor of ``shape`` and element ``stride`` spans (from its
    first element to its last); the element count where ``stride`` is None (contiguous)."""
    shape = [int(d) for d in shape]
    if stride is None or 0 in shape:
        return math.prod(shape)
    return 1 + sum((d - 1) * int(s) for d, s in zip(shape, stride))


@dataclass(frozen=True)
class Config:
    """One shape configuration of a split: its parameters and a display name."""

    split: str
    index: int
    name: str
    params: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"split": self.split, "index": self.index, "name": self.name, "params": dict(self.params)}


@dataclass(frozen=True)
class Task:
    id: str
    category: str
    title: str
    description: str
    tags: tuple[str, ...]
    difficulty: int
    entry: str
    inputs: tuple[InputSpec, ...]
    outputs: tuple[OutputSpec, ...]
    scalars: tuple[ScalarSpec, ...]
    tolerance: Mapping[str, Mapping[str, float]]
    roofline: Mapping[str, Any]
    shape_space: Mapping[str, Any]
    forbidden: tuple[str, ...]
    timeouts: Mapping[str, float]
    path: Path
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    # -- files -------------------------------------------------------------------------
    @property
    def reference_path(self) -> Path:
        return self.path / "reference.py"

    @property
    def headers(self) -> list[Path]:
        """The headers a HIP task ships beside its kernels (``task_headers``)."""
        return task_headers(self.path) if self.language == "hip" else []

    def kernel_file(self, role: str) -> Path | None:
        """The task's baseline / solution / specialised kernel file, if it ships one."""
        for suffix in (".hip", ".py"):
            p = self.path / f"{role}{suffix}"
            if p.is_file():
                return p
        return None

    @property
    def language(self) -> str:
        """The language candidates are written in."""
        return "triton" if self.category == "triton2triton" else "hip"

    # -- configs -------------------------------------------------------------------------
    def configs(self, split: str) -> list[Config]:
        return load_configs(self.path / "configs" / f"{split}.yaml", split, self)

    @property
    def inout_inputs(self) -> tuple[InputSpec, ...]:
        """The inputs updated in place (``inout: true``), in signature order."""
        return tuple(i for i in self.inputs if i.inout)

    @property
    def compared(self) -> tuple[InputSpec | OutputSpec, ...]:
        """What is compared with the reference after a call: the outputs, then the inputs
        updated in place (their values after the call)."""
        return (*self.outputs, *self.inout_inputs)

    def env(self, config: Config) -> dict[str, Any]:
        """Names a formula may use for this config: its parameters (with ``has_<name>``, true
        unless the config says otherwise, for each optional input), then the scalars."""
        env = dict(config.params)
        for i in self.inputs:
            if i.optional:
                env.setdefault(i.presence, True)
        for s in self.scalars:
            env[s.name] = self.scalar_value(s, env)
        return env

    def present(self, spec: InputSpec | OutputSpec, env: Mapping[str, Any]) -> bool:
        """Whether a tensor is given in this config: every one but an optional input whose
        ``has_<name>`` is false."""
        return not getattr(spec, "optional", False) or bool(env.get(presence_param(spec.name), True))

    def strides(self, spec: InputSpec | OutputSpec, env: Mapping[str, Any]) -> tuple[int, ...] | None:
        """The element strides of an input declared with ``stride`` (None: contiguous)."""
        stride = getattr(spec, "stride", None)
        if stride is None:
            return None
        return self._integers(stride, env, spec.name, "stride")

    def storage_elements(self, spec: InputSpec | OutputSpec, env: Mapping[str, Any]) -> int:
        """Elements of the memory a tensor takes in this config: 0 for an absent optional
        input, the span of its strides for a strided one."""
        if not self.present(spec, env):
            return 0
        return storage_elements(self.shape(spec, env), self.strides(spec, env))

    def scalar_value(self, spec: ScalarSpec, env: Mapping[str, Any]) -> int | float:
        if spec.value is None:
            raw = env.get(spec.name)
            if raw is None:
                raise ArenaError(f"scalar {spec.name!r} has no value and the config does not set it",
                                 path=self.path / "task.yaml", key=f"signature.scalars.{spec.name}")
        else:
            raw = formula.evaluate(spec.value, env)
        if spec.type == "bool":
            return bool(raw)
        return float(raw) if spec.type == "float32" else int(raw)

    def shape(self, spec: InputSpec | OutputSpec, env: Mapping[str, Any]) -> tuple[int, ...]:
        return self._integers(spec.shape, env, spec.name, "shape")

    def _integers(self, exprs: Any, env: Mapping[str, Any], name: str, key: str) -> tuple[int, ...]:
        """A tensor's dimensions or strides in this config: each formula must give an integer."""
        out = []
        for d in exprs:
            v = formula.evaluate(d, env)
            if isinstance(v, float) and not v.is_integer():
                what = "dimension" if key == "shape" else key
                raise ArenaError(f"{what} {d!r} evaluates to {v}, not an integer",
                                 path=self.path / "task.yaml", key=f"signature.{name}.{key}")
            out.append(int(v))
        return tuple(out)

    def tolerance_for(self, dtype: str) -> dict[str, float] | None:
        """atol/rtol/norm for an output dtype; None means exact comparison."""
        if dtype in INTEGER_DTYPES:
            return None
        tol = dict(DEFAULT_TOLERANCE[dtype])
        tol.update(self.tolerance.get(dtype, {}))
        return tol

    def tolerance_of(self, spec: InputSpec | OutputSpec) -> dict[str, float] | None:
        """atol/rtol/norm a compared tensor (an output, an inout input) is held to: its dtype's
        (``tolerance_for``) with what its own ``tolerance`` in the signature sets over it (quantised
        values that may be off by one step beside their scales, in one dtype); None: exact."""
        tol = self.tolerance_for(spec.dtype)
        if tol is not None and spec.tolerance:
            tol.update(spec.tolerance)
        return tol

    def roofline_for(self, config: Config) -> tuple[float, float]:
        env = self.env(config)
        return (float(formula.evaluate(self.roofline["flops"], env)),
                float(formula.evaluate(self.roofline["bytes"], env)))


# ---------------------------------------------------------------------------------------
# Schemas and YAML


@lru_cache(maxsize=None)
def _validator(name: str):
    try:
        import jsonschema
    except ImportError as exc:  # pragma: no cover - exercised only where jsonschema is absent
        raise ArenaError("validating tasks needs the jsonschema package (pip install jsonschema)") from exc
    schema = json.loads((SCHEMA_DIR / name).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def schema_errors(data: Any, schema: str, path: Path) -> list[ArenaError]:
    """One error per problem, each naming the key: a missing required key and an unknown key
    are named themselves (``signature.inputs.0.dtype``), not the mapping that holds them."""
    errors = []
    for err in sorted(_validator(schema).iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        where = [str(p) for p in err.absolute_path]
        if err.validator == "required" and isinstance(err.instance, dict):
            missing = [k for k in err.validator_value if k not in err.instance]
            names = [m for m in missing if repr(m) in err.message] or missing[:1]
            for name in names:
                errors.append(ArenaError("required key is missing", path=path, key=".".join([*where, str(name)])))
            continue
        if err.validator == "additionalProperties" and err.validator_value is False \
                and isinstance(err.instance, dict):
            allowed = list(err.schema.get("properties", {}))
            for name in err.instance:
                if name not in allowed:
                    hint = _UNKNOWN_KEY_HINTS.get((where[-2] if len(where) > 1 else "", str(name)), "")
                    errors.append(ArenaError(f"unknown key (allowed here: {', '.join(allowed)}){hint}", path=path,
                                             key=".".join([*where, str(name)])))
            continue
        key = ".".join(where) or "(top level)"
        message = err.message if err.validator in ("enum", "const", "type", "pattern") \
            else f"{err.message} (expected: {_expected(err)})"
        errors.append(ArenaError(message, path=path, key=key))
    return errors


# unknown keys a user may well write in the wrong place: (the list holding the mapping, key) -> a hint
_UNKNOWN_KEY_HINTS = {
    ("outputs", "inout"): ": inout is for inputs (an input the kernel updates in place); every output is written",
    ("outputs", "optional"): ": optional is for inputs; every output is written",
    ("outputs", "stride"): ": outputs are contiguous; stride is for inputs",
    ("outputs", "init"): ": outputs are allocated and poisoned by the harness; init is for inputs",
}


def _expected(err) -> str:
    if err.validator in ("minItems", "minimum", "maximum", "exclusiveMinimum", "minLength", "minProperties"):
        return f"{err.validator} {err.validator_value!r}"
    return err.validator


class _YamlLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's safe loader where PyYAML was built with it (the same documents, ten times
    faster), refusing a key a mapping holds twice (YAML leaves it to the loader, and PyYAML's
    keeps the last one: a second ``seen:`` silently replaced the first)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:          # an unhashable key: the constructor says so itself
                break
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"the key {key!r} appears twice (first on line {first.start_mark.line + 1})", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


_YAML_LOADER = _YamlLoader


HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".cuh")


def task_headers(folder: Path) -> list[Path]:
    """Headers in a task's folder: a HIP task's kernels may include them (``#include "x.h"``);
    every build of a candidate for the task has them beside the candidate's file."""
    return sorted(p for p in Path(folder).iterdir() if p.is_file() and p.suffix in HEADER_SUFFIXES)


def read_yaml(path: Path) -> Any:
    if not path.is_file():
        raise ArenaError("file not found", path=path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ArenaError(f"cannot read the file: {exc}", path=path) from None
    try:
        return yaml.load(text, Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ArenaError(f"not valid YAML{where}: {getattr(exc, 'problem', exc)}", path=path) from None


# ---------------------------------------------------------------------------------------
# Loading


def _init_spec(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {"kind": "normal"}
    if isinstance(raw, str):
        return {"kind": raw}
    return dict(raw)


def _own_tolerance(spec: Mapping[str, Any]) -> dict[str, float] | None:
    """A signature tensor's own ``tolerance`` less its reason."""
    own = spec.get("tolerance")
    return {k: float(v) for k, v in own.items() if k != "reason"} if own else None


def _build_task(data: Mapping[str, Any], path: Path) -> Task:
    sig = data["signature"]
    return Task(
        id=data["id"],
        category=data["category"],
        title=data["title"],
        description=data["description"],
        tags=tuple(data.get("tags", ())),
        difficulty=int(data["difficulty"]),
        entry=data["entry"],
        inputs=tuple(InputSpec(i["name"], i["dtype"], tuple(i["shape"]), _init_spec(i.get("init")),
                               inout=bool(i.get("inout", False)), optional=bool(i.get("optional", False)),
                               stride=tuple(i["stride"]) if i.get("stride") is not None else None,
                               tolerance=_own_tolerance(i))
                     for i in sig["inputs"]),
        outputs=tuple(OutputSpec(o["name"], o["dtype"], tuple(o["shape"]), _own_tolerance(o))
                      for o in sig.get("outputs") or ()),
        scalars=tuple(ScalarSpec(s["name"], s["type"], s.get("value")) for s in sig.get("scalars", ())),
        tolerance={k: v for k, v in (data.get("tolerance") or {}).items() if k != "reason"},
        roofline=dict(data["roofline"]),
        shape_space=dict(data["shape_space"]),
        forbidden=tuple(data.get("forbidden", ())),
        timeouts=dict(data.get("timeouts", {})),
        path=path,
        raw=data,
    )


def load_task(path: Path | str, *, validate: bool = True) -> Task:
    """Load one task folder (or its task.yaml). Raises ArenaErrors (every problem of the folder;
    it reads as the first). ``validate=False`` skips every check; a task.yaml it cannot read
    into a Task still raises ArenaErrors with what its schema says is wrong."""
    path = Path(path)
    if path.name == "task.yaml":
        path = path.parent
    path = path.resolve()
    if validate:
        errors = validate_task_dir(path)
        if errors:
            raise ArenaErrors(errors)
    data = read_yaml(path / "task.yaml")
    try:
        return _build_task(data, path)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        # unvalidated and malformed: what the schema says is wrong, never a KeyError (the schema
        # is checked only here, off the fast path: the trusted process loads every task this way)
        errors = schema_errors(data, "task.schema.json", path / "task.yaml")
        if errors:
            raise ArenaErrors(errors) from None
        raise


def load_configs(path: Path, split: str, task: Task | None = None) -> list[Config]:
    data = read_yaml(path)
    errors = schema_errors(data, "configs.schema.json", path)
    if errors:
        raise ArenaErrors(errors)
    configs = []
    for i, item in enumerate(data):
        params = {k: v for k, v in item.items() if k != "name"}
        name = str(item.get("name") or "-".join(f"{k}{v}" for k, v in params.items()))
        configs.append(Config(split, i, name, params))
    if task is not None:
        for c in configs:
            for err in _config_errors(task, c, path):
                raise err
    return configs


def _is_flag(value: Any) -> bool:
    """A config value that may stand for true or false: a YAML boolean, 0 or 1."""
    return isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))


def _presence_problem(task: Task, name: str) -> str | None:
    """What is wrong with a parameter ``has_<x>`` (a config's or the shape space's): it gives
    or leaves out optional input x, so x must be one."""
    if not name.startswith("has_"):
        return None
    spec = next((i for i in task.inputs if i.presence == name), None)
    if spec is None:
        return f"{name}: no input is named {name[4:]!r} (has_<name> gives or leaves out optional input <name>)"
    if not spec.optional:
        return f"{name} leaves out input {spec.name!r}, which is not optional (add optional: true to it in task.yaml)"
    return None


def _config_errors(task: Task, config: Config, path: Path) -> list[ArenaError]:
    key = f"[{config.index}] ({config.name})"
    errors: list[ArenaError] = []
    for name, value in config.params.items():
        problem = _presence_problem(task, name)
        if problem is None and name.startswith("has_") and not _is_flag(value):
            problem = f"{name} is {value!r}: true or false (1 or 0)"
        if problem is not None:
            errors.append(ArenaError(problem, path=path, key=f"{key} {name}"))
    for sc in task.scalars:
        if sc.type == "bool" and sc.value is None and sc.name in config.params and \
                not _is_flag(config.params[sc.name]):
            errors.append(ArenaError(f"bool scalar {sc.name} is {config.params[sc.name]!r}: true or false (1 or 0)",
                                     path=path, key=f"{key} {sc.name}"))
    if errors:
        return errors
    try:
        env = task.env(config)
        for spec in (*task.inputs, *task.outputs):
            if not task.present(spec, env):
                continue
            dims = task.shape(spec, env)
            if any(d < 0 for d in dims):
                errors.append(ArenaError(f"shape of {spec.name!r} is {dims}: negative dimension",
                                         path=path, key=key))
            strides = task.strides(spec, env)
            if strides is not None and any(s < 0 for s in strides):
                errors.append(ArenaError(f"stride of {spec.name!r} is {strides}: negative stride",
                                         path=path, key=key))
        task.roofline_for(config)
        for spec in task.inputs:
            for bound in ("low", "high"):
                if bound in spec.init:
                    formula.evaluate(spec.init[bound], env)
    except formula.FormulaError as exc:
        errors.append(ArenaError(str(exc), path=path, key=key))
    except ArenaError as exc:
        errors.append(ArenaError(exc.detail, path=path, key=f"{key} {exc.key or ''}".strip()))
    return errors


# what `arena tasks new` writes where the author must say what the task is (arena.taskdef.skeleton): a task
# that still holds one is refused by the validator, at its key
PLACEHOLDERS = {"title": "TODO: one line", "description": "TODO: what the kernel computes", "tags": "todo",
                "reference.py": "TODO: the PyTorch reference"}


def _placeholders_left(task: Task, yml: Path) -> list[ArenaError]:
    """`arena tasks new`'s placeholders (``PLACEHOLDERS``) still in the task: each one's error,
    at its key."""
    found: dict[str, Any] = {"title": task.title, "description": task.description, "tags": task.tags}
    if task.reference_path.is_file():
        found["reference.py"] = task.reference_path.read_text(errors="replace")
    errors = []
    for key, mark in PLACEHOLDERS.items():
        if mark in found.get(key, ""):
            where = {"path": task.reference_path} if key == "reference.py" else {"path": yml, "key": key}
            errors.append(ArenaError(f"still the skeleton's placeholder ({mark!r}): say what the task is", **where))
    return errors


def validate_task_dir(path: Path | str) -> list[ArenaError]:
    """Every problem of one task folder: schema, names, files, configs, formulas."""
    path = Path(path).resolve()
    yml = path / "task.yaml"
    try:
        data = read_yaml(yml)
    except ArenaError as exc:
        return [exc]
    errors = schema_errors(data, "task.schema.json", yml)
    if errors:
        return errors
    task = _build_task(data, path)
    folder_id = f"{path.parent.name}/{path.name}"
    if task.id != folder_id:
        errors.append(ArenaError(f"id {task.id!r} does not match the folder {folder_id!r}", path=yml, key="id"))
    if task.category != path.parent.name:
        errors.append(ArenaError(f"category {task.category!r} does not match the folder {path.parent.name!r}",
                                 path=yml, key="category"))
    errors.extend(_placeholders_left(task, yml))
    names = [s.name for s in (*task.inputs, *task.outputs, *task.scalars)]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        errors.append(ArenaError(f"names used twice: {', '.join(dupes)}", path=yml, key="signature"))
    if not task.compared:
        errors.append(ArenaError("no outputs and no input with inout: true: a kernel must produce something",
                                 path=yml, key="signature.outputs"))
    errors.extend(_input_form_errors(task, yml))
    for spec in (*task.inputs, *task.outputs):
        where = f"signature.{'inputs' if isinstance(spec, InputSpec) else 'outputs'}.{spec.name}.tolerance"
        if spec.tolerance is None:
            continue
        if isinstance(spec, InputSpec) and not spec.inout:
            errors.append(ArenaError("a tolerance is for what is compared: an output, or an input with inout: true",
                                     path=yml, key=where))
        elif not spec.tolerance:
            errors.append(ArenaError("sets none of atol, rtol, norm", path=yml, key=where))
        elif spec.dtype in INTEGER_DTYPES:
            errors.append(ArenaError(f"{spec.dtype} is compared exactly: an integer {spec.name!r} takes no tolerance",
                                     path=yml, key=where))
    if not task.reference_path.is_file():
        errors.append(ArenaError("reference.py is missing", path=path / "reference.py"))
    elif any(i.init["kind"] == "custom" for i in task.inputs) and \
            "def make_inputs" not in task.reference_path.read_text(errors="replace"):
        errors.append(ArenaError("an input has init: custom but reference.py defines no make_inputs",
                                 path=task.reference_path, key="make_inputs"))
    expected_language = {"hip2hip": ".hip", "triton2triton": ".py", "torch2hip": ".hip"}[task.category]
    baseline = task.kernel_file("baseline")
    if task.category == "torch2hip":
        if baseline is not None:
            errors.append(ArenaError("torch2hip tasks have no baseline file: the eager reference is the baseline",
                                     path=baseline))
    elif baseline is None:
        errors.append(ArenaError(f"the starting kernel baseline{expected_language} is missing", path=path))
    for role in KERNEL_ROLES:
        f = task.kernel_file(role)
        if f is not None and f.suffix != expected_language:
            errors.append(ArenaError(f"{task.category} kernels are {expected_language} files", path=f))
    for spec in task.inputs:
        init = spec.init
        if init["kind"] == "randint" and "high" not in init:
            errors.append(ArenaError("randint needs high", path=yml, key=f"signature.inputs.{spec.name}.init"))
        if init["kind"] in ("randint",) and spec.dtype not in (*INTEGER_DTYPES, "float32", "float16", "bfloat16"):
            errors.append(ArenaError("randint is for integer inputs and float inputs of integer values (float32, "
                                     "float16, bfloat16)", path=yml, key=f"signature.inputs.{spec.name}.init"))
        if init["kind"] == "bernoulli" and spec.dtype != "bool":
            errors.append(ArenaError("bernoulli is for bool inputs", path=yml,
                                     key=f"signature.inputs.{spec.name}.init"))
    space_params = [k for k in task.shape_space if k != "constraint"]
    known = set(space_params) | {sc.name for sc in task.scalars} | {i.presence for i in task.inputs if i.optional}
    formulas = [(f"signature.{'inputs' if isinstance(sp, InputSpec) else 'outputs'}.{sp.name}.shape", d)
                for sp in (*task.inputs, *task.outputs) for d in sp.shape]
    formulas += [(f"signature.inputs.{sp.name}.stride", d) for sp in task.inputs for d in (sp.stride or ())]
    formulas += [(f"signature.scalars.{sc.name}.value", sc.value) for sc in task.scalars if sc.value is not None]
    formulas += [(f"signature.inputs.{sp.name}.init.{b}", sp.init[b]) for sp in task.inputs for b in ("low", "high")
                 if b in sp.init]
    formulas += [(f"roofline.{k}", task.roofline[k]) for k in ("flops", "bytes")]
    before = len(errors)
    for key, expr in formulas:
        try:
            unknown = sorted(formula.names_in(str(expr)) - known)
        except formula.FormulaError as exc:
            errors.append(ArenaError(str(exc), path=yml, key=key))
            continue
        if unknown:
            errors.append(ArenaError(f"{expr!r} names {', '.join(unknown)}: neither a shape_space parameter nor a "
                                     "scalar", path=yml, key=key))
    formulas_broken = len(errors) > before      # said once, at the formula: not again for every config
    for k in space_params:
        dim = task.shape_space[k]
        if "min" in dim and dim["min"] > dim["max"]:
            errors.append(ArenaError("min > max", path=yml, key=f"shape_space.{k}"))
    if "constraint" in task.shape_space:
        try:
            formula.names_in(task.shape_space["constraint"])
        except formula.FormulaError as exc:
            errors.append(ArenaError(str(exc), path=yml, key="shape_space.constraint"))
    absent_somewhere: set[str] = set()      # optional inputs some config or the shape space leaves out
    for k in space_params:
        dim = task.shape_space[k]
        problem = _presence_problem(task, k)
        if problem is not None:
            errors.append(ArenaError(problem, path=yml, key=f"shape_space.{k}"))
        elif k.startswith("has_") and (any(not v for v in dim.get("choices", ())) or dim.get("min") == 0):
            absent_somewhere.add(k)
    for split in SPLITS:
        cfg_path = path / "configs" / f"{split}.yaml"
        try:
            configs = load_configs(cfg_path, split)
        except ArenaError as exc:
            errors.extend(getattr(exc, "problems", [exc]))
            continue
        absent_somewhere |= {k for c in configs for k, v in c.params.items() if k.startswith("has_") and not v}
        minimum = {"seen": MIN_SEEN, "heldout": MIN_HELDOUT}.get(split, 1)
        if len(configs) < minimum:
            errors.append(ArenaError(f"{len(configs)} configs; the rules ask for at least {minimum}",
                                     path=cfg_path))
        seen_names: set[str] = set()
        for c in configs:
            if c.name in seen_names:
                errors.append(ArenaError(f"config name {c.name!r} used twice", path=cfg_path, key=f"[{c.index}]"))
            seen_names.add(c.name)
            errors.extend(e for e in _config_errors(task, c, cfg_path)
                          if not (formulas_broken and "formula " in e.detail))
            if split != "smoke":
                missing = [k for k in space_params if k not in c.params]
                if missing:
                    errors.append(ArenaError(f"shape_space has {missing} but the config does not set them",
                                             path=cfg_path, key=f"[{c.index}]"))
    for spec in task.inputs:
        if spec.optional and spec.presence not in absent_somewhere:
            errors.append(ArenaError(f"optional, but no config leaves it out: set {spec.presence}: false in a config "
                                     f"(configs/*.yaml) or add {spec.presence}: {{choices: [true, false]}} to "
                                     f"shape_space", path=yml, key=f"signature.inputs.{spec.name}.optional"))
    return errors


def _input_form_errors(task: Task, yml: Path) -> list[ArenaError]:
    """What the declared forms of the inputs (inout, optional, stride) do not allow."""
    errors = []
    for spec in task.inputs:
        key = f"signature.inputs.{spec.name}"
        if spec.stride is not None:
            if len(spec.stride) != len(spec.shape):
                errors.append(ArenaError(f"stride has {len(spec.stride)} entries, shape has {len(spec.shape)}: one "
                                         "stride per dimension", path=yml, key=f"{key}.stride"))
            if spec.inout:
                errors.append(ArenaError("an input updated in place (inout: true) is a contiguous tensor: drop its "
                                         "stride", path=yml, key=f"{key}.stride"))
            if spec.init["kind"] == "custom":
                errors.append(ArenaError("a strided input is drawn for the memory its strides span; init: custom "
                                         "cannot be strided", path=yml, key=f"{key}.stride"))
    return errors


def load_suite(path: Path | str) -> dict[str, Any]:
    """A run configuration (configs/suites/*.yaml), validated against its schema."""
    path = Path(path)
    data = read_yaml(path)
    errors = schema_errors(data, "suite.schema.json", path)
    if errors:
        raise ArenaErrors(errors)
    return data


# ---------------------------------------------------------------------------------------
# Discovery and selection


def discover_tasks(root: Path | str | None = None) -> list[Path]:
    """Task folders (those holding a task.yaml) under root, sorted by id."""
    root = Path(root) if root is not None else DEFAULT_TASKS_DIR
    return sorted(p.parent for p in root.glob("*/*/task.yaml"))


def select_tasks(selector: str | Iterable[str] | None = None, root: Path | str | None = None) -> list[Path]:
    """Task folders matching a selector: 'all', a category, an id, a glob ('*/softmax*'),
    a folder path, or a comma-separated list of those."""
    import fnmatch

    folders = discover_tasks(root)
    if selector is None:
        return folders
    parts = [selector] if isinstance(selector, str) else list(selector)
    items = [s.strip() for p in parts for s in p.split(",") if s.strip()]
    chosen: list[Path] = []
    for item in items:
        as_path = Path(item)
        if (as_path / "task.yaml").is_file():
            matched = [as_path.resolve()]
        elif item == "all":
            matched = folders
        else:
            pattern = item if any(ch in item for ch in "*?[") else None
            matched = [f for f in folders if _task_id(f) == item or f.parent.name == item
                       or (pattern and fnmatch.fnmatch(_task_id(f), pattern))]
        if not matched:
            raise ArenaError(f"no task matches {item!r}", key="selector")
        chosen.extend(m for m in matched if m not in chosen)
    return chosen


def _task_id(folder: Path) -> str:
    return f"{folder.parent.name}/{folder.name}"


def numel(shape: Iterable[int]) -> int:
    return math.prod(shape)
